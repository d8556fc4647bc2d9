"""The HyperFleet Pull Secret Service's HTTP API: get, generate and delete one cluster's credentials.

The contract (docs/contract.md §3b; openshift-hyperfleet/architecture hyperfleet/docs/pull-secret-service-ddr.md,
"Last Updated 2026-03-25", section 3.2):

    GET    {base}/v1/clusters/{id}/pull-secrets?include_metadata=true   200 answer | 404 HYPERFLEET-NTF-001
    POST   {base}/v1/clusters/{id}/pull-secrets   {"cluster_id", "cloud_provider", "region", "registries"}
           200/201 answer (generate or retrieve: idempotent) | 400 | 409 HYPERFLEET-CNF-001 (rotation in progress)
    DELETE {base}/v1/clusters/{id}/pull-secrets   2xx | 404 (nothing to delete: done)

An answer is `{"cluster_id", "pull_secret": {"auths": {...}}, "credentials": [{"registry_id", "username",
"created_at", ...}], "created_at", ...}`. Errors are RFC 7807 problem+json with a HyperFleet `code`.

What each failure means here (the DDR's "Client Retry Guidance", section 1.4; answers.py decides):
- 409 CNF-001, 429, 5xx, connection errors and timeouts: transient (redelivered with backoff), nothing written; a
  429 is RateLimited, with the Retry-After it asks for (section 3.5), which the operator's `rekey` waits out.
- 400 and other 4xx: terminal (`PullSecretServiceRejected`, reported, acknowledged): the same request cannot succeed.
- 401, and 403 without an authorization code: the credential is re-read or re-minted once and the call made again;
  still refused, a transient `CredentialsRefused` logged at error level (our own identity is never the cluster's
  fault). 403 with `HYPERFLEET-AUZ-*`: terminal `PermissionDenied` (a policy does not change on retry).
- 404 without NTF-001 on a GET (no route, a proxy), and any 3xx on any call (the URL moved; never followed): a
  configuration error, redelivered, never "no credentials" nor the cluster's fault.

The service is trusted for content, and its answer is still validated (docs/trust.md): the pull secret's strings
are registered for redaction before it is parsed, and an answer that is not a valid pull secret is terminal
`InvalidPullSecret` naming the service. Problem details are bounded and pass through the event's redaction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import certifi
import urllib3

from pullsecret import outbound
from pullsecret.errors import RateLimited, TerminalError, TransientError, looks_like_io
from pullsecret.hyperfleet import budget
from pullsecret.hyperfleet.answers import RETRY_STATUSES, shown_url
from pullsecret.identity.bearer import ApiCredential
from pullsecret.logs import answer_text, protect
from pullsecret.model import dockerconfig
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.outbound import deadline_io
from pullsecret.retrying import Deadline
from pullsecret.source.service import answers, tries
from pullsecret.source.service.answers import NOT_FOUND, SHOWN
from pullsecret.source.service.hold import Hold
from pullsecret.source.service.reports import SERVICE, ServiceData

SOURCE_NAME = "pull-secret-service"  # the status `data.source` of a pull secret from the service
ROTATION_OPEN = "HYPERFLEET-CNF-002"  # a rotation is already pending or in progress (DDR §3.2.3)
_MAX_ANSWER = 256 * 1024  # a pull secret of a few registries is a few KiB; anything larger is refused unread


@dataclass(frozen=True)
class Credential:
    """One registry's credential as the service describes it: never its token, only a fingerprint of its username."""

    registry_id: str
    username_fingerprint: str
    created_at: str | None

    def data(self) -> dict[str, Any]:
        # No key may name a credential: the API masks `data` keys holding "credential", "auth", "token", "secret".
        return {
            "registry_id": self.registry_id,
            "username_fingerprint": self.username_fingerprint,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class ServiceAnswer:
    """The cluster's pull secret as the service holds it, validated; its repr shows no credential."""

    cluster_id: str
    pull_secret: PullSecret = field(repr=False)
    credentials: tuple[Credential, ...] = ()
    created_at: str | None = None

    def status_data(self) -> ServiceData:
        """What the status says of the source: the service, and per registry the username's fingerprint."""
        return {"source": SOURCE_NAME, "minted": [c.data() for c in self.credentials]}


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes = field(repr=False)


class PullSecretServiceClient:
    """Thread-safe; one instance per process, one connection pool to the service's one host."""

    def __init__(
        self,
        base_url: str,
        *,
        credential: ApiCredential | None,
        timeout_s: float = 10.0,
        pool_size: int = 64,
        ca_bundle: str | None = None,  # PULL_SECRET_SERVICE_CA_BUNDLE: a private root CA
    ) -> None:
        self._base = base_url.rstrip("/")
        self.shown_url = shown_url(self._base)
        self._credential = credential
        self._timeout_s = timeout_s
        tls = {"ca_certs": ca_bundle or certifi.where()} if self._base.startswith("https:") else {}
        # Tries are this client's own loop (`_exchange`): each bounded by what remains of the event's deadline.
        self._pool = deadline_io.connection_from_url(self._base, maxsize=pool_size, retries=False, **tls)
        self._path = urlsplit(self._base).path
        self.hold = Hold()  # after a 429, every call of this process waits its Retry-After (hold.py)

    def __repr__(self) -> str:
        return f"PullSecretServiceClient({self.shown_url!r})"

    @property
    def credential(self) -> ApiCredential | None:
        """The credential the calls carry (the doctor mints and inspects it)."""
        return self._credential

    # -- the three calls ------------------------------------------------------------------------
    def get(self, cluster_id: str, deadline: Deadline | None = None) -> ServiceAnswer | None:
        """The cluster's pull secret, or None when the service holds none (404 NTF-001)."""
        what = f"get the pull secret of cluster {cluster_id}"
        answer = self._request("GET", _path(cluster_id) + "?include_metadata=true", what=what, deadline=deadline)
        if answer.status == 404 and answers.problem_of(answer).get("code") == NOT_FOUND:
            return None
        if answer.status == 404:
            raise answers.no_route(answer, what, url=self.shown_url)
        if answer.status != 200:
            raise answers.failure(answer, what)
        return self._parse(answer, cluster_id, what)

    def generate(
        self, cluster_id: str, *, region: str, registries: tuple[str, ...], deadline: Deadline | None = None
    ) -> ServiceAnswer:
        """Generate (or retrieve: the service is idempotent) the cluster's credentials."""
        what = f"generate the pull secret of cluster {cluster_id}"
        body = {"cluster_id": cluster_id, "cloud_provider": "gcp", "region": region, "registries": list(registries)}
        answer = self._request("POST", _path(cluster_id), what=what, json_body=body, deadline=deadline)
        if answer.status not in (200, 201):
            raise answers.failure(answer, what)
        return self._parse(answer, cluster_id, what)

    def rotate(self, cluster_id: str, *, reason: str, force_immediate: bool) -> dict[str, str]:
        """Start a rotation (DDR §3.2.3; `python -m pullsecret rekey`): {"rotation_id", "status"} as created, or
        {"open": rotation_id, "status"} when one is already open (409 CNF-002), or {} when the service holds no
        credentials for the cluster (404 NTF-001). Not idempotent at the service: a retried POST whose first
        answer was lost finds the first rotation open (or, immediate, completed: one rotation more)."""
        what = f"rotate the credentials of cluster {cluster_id}"
        body = {"reason": reason, "force_immediate": force_immediate}
        answer = self._request("POST", _path(cluster_id) + "/rotations", what=what, json_body=body)
        problem = answers.problem_of(answer) if answer.status >= 400 else {}
        if answer.status == 404 and problem.get("code") == NOT_FOUND:
            return {}
        if answer.status == 409 and problem.get("code") == ROTATION_OPEN:
            return {"open": _short(problem.get("rotation_id")), "status": _short(problem.get("rotation_status"))}
        if answer.status not in (200, 201):
            raise answers.failure(answer, what)
        created = answers.problem_of(answer)
        return {"rotation_id": _short(created.get("rotation_id")), "status": _short(created.get("status"))}

    def delete(self, cluster_id: str, deadline: Deadline | None = None) -> bool:
        """Revoke the cluster's credentials; True when the service confirmed (2xx: none remain), False on a 404."""
        what = f"revoke the credentials of cluster {cluster_id}"
        answer = self._request("DELETE", _path(cluster_id), what=what, deadline=deadline)
        if answer.status == 404:
            return False
        if 200 <= answer.status < 300:
            return True
        raise answers.failure(answer, what)

    def probe(self, cluster_id: str) -> tuple[int, str | None]:
        """The doctor's check: GET a cluster id that cannot exist; (the HTTP status, its HyperFleet error code).
        The good answer is 404 with NTF-001: any other 404 reaches no route of the service."""
        what = "probe the Pull Secret Service"
        answer = self._request("GET", _path(cluster_id), what=what)
        return answer.status, answers.code_of(answer)

    # -- one exchange -------------------------------------------------------------------------------
    def _request(
        self, method: str, path: str, *, what: str, json_body: Any = None, deadline: Deadline | None = None
    ) -> _Answer:
        deadline = deadline or Deadline(self.call_budget_s())
        token = self._credential.current() if self._credential is not None else None
        answer = self._exchange(method, path, what=what, token=token, json_body=json_body, deadline=deadline)
        if (
            answers.token_refused(answer)
            and self._credential is not None
            and token is not None
            and self._credential.refresh(token)
        ):
            token = self._credential.current()
            answer = self._exchange(method, path, what=what, token=token, json_body=json_body, deadline=deadline)
        if answer.status == 403 and not answers.token_refused(answer):
            raise TerminalError(
                f"{what}: the {SHOWN} denied the adapter's identity (403 {answers.code_of(answer)}); "
                "grant it access at the service",
                reason="PermissionDenied",
                service=SERVICE,
            )
        if answers.token_refused(answer):
            remedy = self._credential.remedy if self._credential else "configure PULL_SECRET_SERVICE_AUTH"
            raise answers.credentials_refused(answer, what, remedy=remedy)
        if answers.is_redirect(answer):
            raise answers.redirected(answer, what, url=self.shown_url)
        return answer

    def call_budget_s(self) -> float:
        """The longest one call takes without an event's deadline (the CLI's): the HyperFleet client's budget."""
        return budget.call_budget_s(self._timeout_s)

    def _exchange(
        self, method: str, path: str, *, what: str, token: str | None, json_body: Any, deadline: Deadline
    ) -> _Answer:
        """Up to budget.ATTEMPTS tries (connection errors, read timeouts, 429/5xx: POST and DELETE are idempotent
        at the service), a wait between them capped as the HyperFleet client's (budget.py: Retry-After at most
        RETRY_AFTER_CAP_S); no try starts, and no wait is slept, past the event's deadline."""
        for attempt in range(1, budget.ATTEMPTS + 1):
            last = attempt == budget.ATTEMPTS
            held = self.hold.wait(deadline)
            if held is not None:
                raise RateLimited(
                    f"{what}: not sent: after a 429 (its rate limit, DDR section 3.5) this process holds its "
                    f"calls to the {SHOWN} for {held:.0f} s more",
                    retry_after_s=held,
                    reason="DependencyUnavailable",
                    service=SERVICE,
                )
            try:
                answer = self._send(method, path, what=what, token=token, json_body=json_body, deadline=deadline)
            except TransientError as exc:
                if last or exc.reason == "DeadlineExceeded" or not tries.slept(tries.backoff(attempt), deadline):
                    raise
                continue
            if answer.status == 429:  # DDR §3.5: every call of this process waits (hold.py)
                self.hold.close_for(answers.retry_after(answer))
            if last or answer.status not in RETRY_STATUSES:
                return answer
            if not tries.slept(tries.wait(answer.headers, attempt), deadline):
                return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(
        self, method: str, path: str, *, what: str, token: str | None, json_body: Any, deadline: Deadline
    ) -> _Answer:
        """One try: its connect, headers and body inside what remains of `deadline` (deadline_io)."""
        scheme = self._credential.scheme if self._credential else "Bearer"
        sent = outbound.request(token=token, scheme=scheme, json_body=json_body)
        if deadline.remaining() <= 0:
            raise _past_deadline(what)
        timeout = outbound.timeout(connect=budget.CONNECT_TIMEOUT_S, read=self._timeout_s, deadline=deadline)
        try:
            with deadline_io.within(deadline):
                response = self._pool.request(
                    method,
                    self._path + path,
                    body=sent.body,
                    headers=sent.headers,
                    preload_content=False,
                    timeout=timeout,
                )
                try:
                    data = _body(response)
                finally:
                    response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            if deadline.expired():
                raise _past_deadline(what) from None
            kind = (
                "unreachable" if looks_like_io(exc) or isinstance(exc, urllib3.exceptions.MaxRetryError) else "failed"
            )
            raise TransientError(
                f"{what}: {SHOWN} {kind} ({type(exc).__name__})", reason="DependencyUnavailable", service=SERVICE
            ) from None
        if len(data) > _MAX_ANSWER:
            raise TransientError(
                f"{what}: {SHOWN} answered more than {_MAX_ANSWER} bytes",
                reason="DependencyUnavailable",
                service=SERVICE,
            )
        return _Answer(response.status, response.headers, data)

    # -- what an answer means -----------------------------------------------------------------------
    def _parse(self, answer: _Answer, cluster_id: str, what: str) -> ServiceAnswer:
        """Validate an answer: the pull secret is registered for redaction before it is parsed."""
        try:
            body = json.loads(answer.body)
        except (ValueError, RecursionError):
            raise _invalid(f"{what}: the {SHOWN} answered a body that is not JSON") from None
        document = body.get("pull_secret") if isinstance(body, dict) else None
        if isinstance(document, (dict, str)):
            protect(dockerconfig.sensitive_strings_of(document))
        if not isinstance(document, dict):
            raise _invalid(f"{what}: the {SHOWN} answer has no pull_secret object")
        if body.get("cluster_id") not in (None, cluster_id):
            raise _invalid(f"{what}: the {SHOWN} answered for another cluster")
        try:
            secret = dockerconfig.parse(document, source=SHOWN)
        except dockerconfig.InvalidPullSecret as exc:
            raise _invalid(f"{what}: {exc.message}") from None
        protect(secret.sensitive_strings())
        created = body.get("created_at")
        return ServiceAnswer(
            cluster_id=cluster_id,
            pull_secret=secret,
            credentials=_credentials(body.get("credentials")),
            created_at=answer_text(created, 40) if isinstance(created, str) else None,
        )


def _past_deadline(what: str) -> TransientError:
    return TransientError(
        f"{what}: the {SHOWN} did not answer within the event's deadline (RETRY_DEADLINE); redelivered",
        reason="DeadlineExceeded",
        service=SERVICE,
    )


def _body(response: urllib3.BaseHTTPResponse) -> bytes:
    """The answer's body, at most _MAX_ANSWER + 1 bytes (one more says "too large"); each socket read is bounded by
    the call's deadline (deadline_io), so a body trickled a byte at a time is cut off when it passes."""
    chunks: list[bytes] = []
    size = 0
    while size <= _MAX_ANSWER:
        chunk = response.read1(_MAX_ANSWER + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _path(cluster_id: str) -> str:
    return f"/v1/clusters/{quote(cluster_id, safe='')}/pull-secrets"


def _short(value: Any) -> str:
    """A rotation id or status as the service named it, bounded and printable (it reaches the operator's screen)."""
    return "".join(c for c in answer_text(str(value), 40) if c.isalnum() or c in "-_.") if value is not None else ""


def _invalid(message: str) -> dockerconfig.InvalidPullSecret:
    return dockerconfig.InvalidPullSecret(message, service=SERVICE)


def _credentials(value: Any) -> tuple[Credential, ...]:
    """The answer's `credentials`, reduced to what a status may carry (never a token)."""
    if not isinstance(value, list):
        return ()
    found = []
    for item in value[:16]:
        if not isinstance(item, dict):
            continue
        registry, username, created = item.get("registry_id"), item.get("username"), item.get("created_at")
        if not isinstance(registry, str) or not isinstance(username, str):
            continue
        found.append(
            Credential(
                registry_id="".join(c for c in answer_text(registry, 32) if c.isalnum() or c in "-_."),
                username_fingerprint=hashlib.sha256(username.encode("utf-8", "replace")).hexdigest()[:12],
                created_at=answer_text(created, 40) if isinstance(created, str) and created.isprintable() else None,
            )
        )
    return tuple(found)
