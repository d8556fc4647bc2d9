"""Verify each registry credential of a pull secret against its own registry (the Docker Registry v2 handshake).

The handshake is the one `docker login` and go-containerregistry run (pkg/v1/remote/transport/ping.go,
bearer.go; challenge parsing as distribution's registry/client/auth/challenge/authchallenge.go):

    GET https://HOST/v2/ without credentials
      200                               -> anonymous (the registry does not ask for one)
      401 WWW-Authenticate: Basic ...   -> GET /v2/ again with HTTP Basic: 200 valid, 401 rejected
      401 WWW-Authenticate: Bearer realm=R,service=S
                                        -> token from R (HTTP Basic; service S; no scope or REGISTRY_TOKEN_SCOPES)
                                           401 rejected; then GET /v2/ with the token: 200 valid, 401 rejected
    network, TLS, timeout, 5xx, anything unexpected -> unreachable (never rejected)

A credential goes only to its own registry host and to the realm that host's challenge names, and only
when that realm is HTTPS on the registry's own domain (go-containerregistry's validateRealmURL rule).
No request follows a redirect. Results are cached per (host, credential fingerprint) for REGISTRY_CACHE_TTL,
and concurrent events waiting on the same fingerprint share one handshake (single flight). Nothing of a
credential, a token or a token service's answer is logged, raised or reported: results carry fixed texts.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import json
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, urlencode, urlsplit

from pullsecret.config import Settings
from pullsecret.errors import TerminalError
from pullsecret.logs import log, protect
from pullsecret.model.dockerconfig import PullSecret, canonical_bytes
from pullsecret.registry.egress import Egress, Endpoint, NoPublicAddress, Refused, Unresolvable
from pullsecret.registry.http import MAX_BODY, Answer, ExchangeFailed, PinnedHTTPS
from pullsecret.registry.www_authenticate import Challenge, parse_challenges, pick_challenge
from pullsecret.retrying import Deadline

RESULTS = ("valid", "rejected", "anonymous", "unreachable", "skipped")
PER_EVENT = 4  # handshakes one event runs at once (REGISTRY_CONCURRENCY threads bound the process)
MAX_PER_EVENT = 20  # registries one event verifies; the rest of a larger pull secret are `skipped`
UNREACHABLE_TTL_S = 60.0  # an outage is retried sooner than a verdict is
REJECTED_TTL_S = 300.0  # a refusal too: a registry's passing 401 must not stand for REGISTRY_CACHE_TTL
CHALLENGE_TTL_S = 600.0  # a registry host's auth challenge, reused by the next new credential for it
CACHE_ENTRIES = 20_000  # answers kept (least recently used dropped first)
CHALLENGE_ENTRIES = 2_000  # registry hosts whose challenge is kept
_USER_AGENT = "hyperfleet-pullsecret-adapter"
_CLIENT_ID = "hyperfleet-pullsecret"

# Docker Hub: the keys `docker.io`, `index.docker.io` and `https://index.docker.io/v1/` (the legacy
# IndexServer docker login still writes) all name the registry served at registry-1.docker.io
# (moby registry/config.go: IndexServer, IndexHostname, DefaultRegistryHost, DefaultV2Registry).
DOCKER_HUB_HOST = "registry-1.docker.io"
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


class RegistryRejected(TerminalError):
    """REGISTRY_VERIFICATION=enforce: a registry refused its credential; nothing was written."""

    default_reason = "RegistryCredentialRejected"

    def __init__(self, message: str, data: dict[str, Any]) -> None:
        super().__init__(message, service="registry")
        self.data = data


# --- pure: registry names, credentials -----------------------------------------------


_HOST_CHARS = frozenset(".-:[]")  # in a registry key's host[:port], besides letters and digits


def registry_host(key: str) -> str | None:
    """The host[:port] serving `/v2/` for a pull-secret registry key; None when the key is not HTTPS-capable.

    Keys may be URLs (`https://index.docker.io/v1/`, `https://quay.io`) or host[:port][/namespace];
    the path is a legacy API version or a repository namespace and is dropped. Docker Hub's names map to
    registry-1.docker.io as docker does. An `http://` key names a plain-HTTP registry: never contacted.
    """
    text = key.strip()
    lowered = text.lower()
    if lowered.startswith("http://"):
        return None
    if lowered.startswith("https://"):
        text = text[len("https://") :]
    netloc = text.partition("/")[0]
    if not all(ch.isalnum() or ch in _HOST_CHARS for ch in netloc):
        return None  # this also refuses user info, a query and a fragment ("@", "?", "#")
    try:
        parts = urlsplit("//" + netloc)
        hostname, port = parts.hostname, parts.port  # urllib's hostname is lower case
    except ValueError:
        return None
    if not hostname:
        return None
    if hostname in _DOCKER_HUB_ALIASES:
        hostname = DOCKER_HUB_HOST
    host = f"[{hostname}]" if ":" in hostname else hostname
    return f"{host}:{port}" if port is not None and port != 443 else host


def hostname_of(host: str) -> str:
    """`host[:port]` → host name without port or brackets."""
    return urlsplit("//" + host).hostname or host


@dataclass(frozen=True)
class Credential:
    """What the handshake presents for one registry; `repr` is redacted."""

    kind: str  # "basic" | "identity" (OAuth2 refresh token) | "registry" (a bearer token as is)
    secret: str = field(repr=False)  # basic: base64 of user:password; else the token

    def __repr__(self) -> str:
        return f"Credential(kind={self.kind!r}, <redacted>)"

    def sensitive(self) -> list[str]:
        """Every form of this credential that must never be printed (for the event's log redactor)."""
        values = [self.secret, self.secret.rstrip("=")]
        if self.kind == "basic":
            with contextlib.suppress(ValueError):  # binascii.Error is a ValueError
                decoded = base64.b64decode(self.secret).decode(errors="replace")
                values += [decoded, decoded.partition(":")[2]]
        return values


def credential_of(entry: Mapping[str, Any]) -> Credential | None:
    """The credential of a dockerconfigjson entry in the order go-containerregistry uses it."""
    if isinstance(entry.get("registrytoken"), str) and entry["registrytoken"]:
        return Credential("registry", entry["registrytoken"])
    if isinstance(entry.get("identitytoken"), str) and entry["identitytoken"]:
        return Credential("identity", entry["identitytoken"])
    auth = entry.get("auth")
    if isinstance(auth, str) and auth:
        padded = auth + "=" * (-len(auth) % 4)
        return Credential("basic", padded)
    user, password = entry.get("username"), entry.get("password")
    if isinstance(user, str) and isinstance(password, str) and user and password:
        return Credential("basic", base64.b64encode(f"{user}:{password}".encode()).decode())
    return None


@dataclass(frozen=True)
class Check:
    """The answer for one registry: a result of RESULTS, a fixed, credential-free explanation for the logs, and
    for what was never contacted the reason the status shows (what answered, and how, stays in the logs)."""

    result: str
    detail: str
    reason: str | None = None

    def to_json(self, registry: str) -> dict[str, str]:
        entry = {"registry": safe_name(registry), "result": self.result}
        if self.reason is not None:
            entry["reason"] = self.reason
        return entry


def _not_contacted(reason: str) -> Check:
    return Check("skipped", reason, reason)


def safe_name(registry: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in registry)[:100]


# --- the handshake ------------------------------------------------------------------------------------

_FAILED = {
    "timeout": "timed out",
    "tls": "TLS handshake or certificate verification failed",
    "connection": "connection failed",
    "protocol": "the exchange failed",
}


class _Handshake:
    """One registry's handshake with one credential; every outcome is a Check, nothing raises.

    The credential is presented at most once: once refused (or once sent without a usable answer) it is
    not sent again in this handshake, since registries lock accounts after repeated failed logins.
    """

    def __init__(
        self,
        http: PinnedHTTPS,
        egress: Egress,
        host: str,
        credential: Credential,
        *,
        scope: str | None,
        timeout_s: float,
        deadline: Deadline,
        known: Challenge | None = None,
    ) -> None:
        self.http = http
        self.egress = egress
        self.host = host
        self.credential = credential
        self.scope = scope
        self.timeout_s = timeout_s
        self.deadline = deadline
        self.known = known
        self.seen: Challenge | None = None  # the challenge this handshake used, for the next one to reuse
        self.presented = False  # the credential has been sent (to the registry or its token service)
        self._endpoints: dict[str, Endpoint] = {}

    def _endpoint(self, host: str) -> Endpoint:
        """The vetted address of `host`, resolved once per handshake; raises Refused or Unresolvable."""
        if host not in self._endpoints:
            self._endpoints[host] = self.egress.vet(host)
        return self._endpoints[host]

    def _exchange(self, host: str, method: str, target: str, **kwargs: Any) -> Answer:
        limit = min(self.timeout_s, self.deadline.remaining())
        return self.http.exchange(self._endpoint(host), method, target, limit_s=limit, **kwargs)

    def run(self) -> Check:
        try:
            return self._run()
        except Refused as exc:
            return _not_contacted(exc.reason)
        except NoPublicAddress:
            # The same status as a name that does not resolve (the log line says which, for the operator).
            return Check("unreachable", "a name resolves to a private network's address; not contacted")
        except Unresolvable:
            return Check("unreachable", "the host name does not resolve")
        except ExchangeFailed as exc:
            return Check("unreachable", _FAILED.get(exc.kind, "the exchange failed"))

    def _run(self) -> Check:
        self._endpoint(self.host)  # vetted before anything is sent
        if self.known is not None:
            # The host's challenge from an earlier ping (distribution's challenge manager keeps them per
            # endpoint too). It only shortens the success path; an answer other than `valid` stands as it
            # is once the credential went out (never presented twice), else a fresh ping decides.
            self.seen = self.known
            check = self._answer(self.known)
            if check.result == "valid" or self.presented:
                if check.result != "valid":
                    self.seen = None  # the next handshake pings afresh
                return check
            self.seen = None
        ping = self._exchange(self.host, "GET", "/v2/")
        if ping.status == 200:
            return Check("anonymous", "the registry answers /v2/ without a credential; nothing to verify")
        if ping.status != 401:
            return _unexpected("the registry", ping.status)
        challenge = pick_challenge(parse_challenges(ping.challenges))
        if challenge is None:
            return Check("skipped", "the registry asks for an authentication scheme other than Basic or Bearer")
        self.seen = challenge
        return self._answer(challenge)

    def _answer(self, challenge: Challenge) -> Check:
        """Answer a Basic or Bearer challenge with the credential, then ask /v2/ again."""
        if challenge.scheme == "basic":
            if self.credential.kind != "basic":
                return Check("skipped", "the registry asks for Basic authentication; the entry holds a token")
            self.presented = True
            return self._with_authorization(f"Basic {self.credential.secret}", "the registry")
        token = self.credential.secret if self.credential.kind == "registry" else None
        if token is None:
            outcome = self._token(challenge)
            if isinstance(outcome, Check):
                return outcome
            token = outcome
        protect([token])
        self.presented = True
        return self._with_authorization(f"Bearer {token}", "the registry")

    def _with_authorization(self, authorization: str, who: str) -> Check:
        answer = self._exchange(self.host, "GET", "/v2/", headers={"Authorization": authorization})
        if answer.status == 200:
            return Check("valid", "the registry accepted the credential")
        if answer.status == 401:
            return Check("rejected", f"{who} refused the credential (401)")
        return _unexpected(who, answer.status)

    def _realm(self, challenge: Challenge) -> tuple[SplitResult, str] | Check:
        """The realm URL and its host[:port], when the credential may go there; else why not (a Check)."""
        realm = challenge.params.get("realm", "")
        try:
            parts = urlsplit(realm)
            realm_host, realm_name = parts.netloc, parts.hostname
        except ValueError:
            return Check("skipped", "the registry's token realm is not a URL")
        if parts.scheme != "https" or not realm_host or not realm_name or parts.username is not None:
            return Check("skipped", "the registry's token realm is not an HTTPS URL; no credential sent")
        if not self.egress.realm_trusted(hostname_of(self.host), realm_name):
            return Check("skipped", "the registry's token realm lies outside its domain; no credential sent")
        try:
            self._endpoint(realm_host)
        except Refused:
            return Check("skipped", "the registry's token realm is a private address; no credential sent")
        return parts, realm_host

    def _token(self, challenge: Challenge) -> str | Check:
        realm = self._realm(challenge)
        if isinstance(realm, Check):
            return realm
        parts, realm_host = realm
        params: dict[str, str] = {}
        if challenge.params.get("service"):
            params["service"] = challenge.params["service"]
        if self.scope:
            params["scope"] = self.scope
        path = parts.path or "/"
        self.presented = True
        if self.credential.kind == "identity":
            # An identity token is an OAuth2 refresh token (docker's oauth flow; go-containerregistry refreshOauth).
            form = {**params, "grant_type": "refresh_token", "refresh_token": self.credential.secret}
            form["client_id"] = _CLIENT_ID
            target = path + (f"?{parts.query}" if parts.query else "")
            answer = self._exchange(
                realm_host,
                "POST",
                target,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                body=urlencode(form).encode("ascii"),
            )
        else:
            query = "&".join(q for q in (parts.query, urlencode(params)) if q)
            answer = self._exchange(
                realm_host,
                "GET",
                path + (f"?{query}" if query else ""),
                headers={"Authorization": f"Basic {self.credential.secret}"},
            )
        return _token_of(answer)


def _token_of(answer: Answer) -> str | Check:
    """The token of a token service's answer, or the Check its answer amounts to."""
    if answer.status == 401:
        return Check("rejected", "the registry's token service refused the credential (401)")
    if answer.status != 200:
        return _unexpected("the registry's token service", answer.status)
    try:
        decoded = json.loads(answer.body) if len(answer.body) <= MAX_BODY else None
    except (ValueError, RecursionError):
        decoded = None
    token = ""  # what stands for "no token" here (or for a body not read above) cannot matter: only a text counts
    if isinstance(decoded, dict):
        # Some token services set access_token instead of token (go-containerregistry bearer.go).
        token = decoded.get("token") or decoded.get("access_token") or ""
    if not isinstance(token, str) or not token:
        return Check("unreachable", "the registry's token service answered without a token")
    return token


def _unexpected(who: str, status: int) -> Check:
    if 500 <= status < 600:
        return Check("unreachable", f"{who} answered {status}")
    if 300 <= status < 400:
        return Check("unreachable", f"{who} answered a redirect ({status}); redirects are not followed")
    return Check("unreachable", f"{who} answered {status}, which says nothing about the credential")


# --- per process: cache, single flight, bounded concurrency --------------------------------------------


class _Expiring:
    """A bounded LRU whose entries also expire; the least recently used goes first when full (lock held by caller)."""

    def __init__(self, capacity: int, clock: Callable[[], float]) -> None:
        self.capacity = capacity
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self._clock():
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: str, value: Any, ttl: float) -> None:
        self._items[key] = (self._clock() + ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def pop(self, key: str) -> None:
        self._items.pop(key, None)


@dataclass
class Pending:
    """The checks of one event, some still running; `result()` waits for them within the overall deadline."""

    mode: str
    registries: tuple[str, ...]
    futures: dict[str, Future[Check]]
    deadline: Deadline
    enforced: frozenset[str] | None = None  # the registries enforce mode may refuse on; None: every one
    _verification: Verification | None = None

    def result(self) -> Verification:
        """Every registry's check; asked twice (enforce, then the status), the same answer both times."""
        if self._verification is not None:
            return self._verification
        checks: dict[str, Check] = {}
        for registry in self.registries:
            future = self.futures[registry]
            try:
                checks[registry] = future.result(timeout=self.deadline.remaining())
            except FutureTimeout:
                checks[registry] = Check("unreachable", "no answer within the verification deadline")
        self._verification = Verification(self.mode, checks, self.enforced)
        return self._verification


@dataclass(frozen=True)
class Verification:
    """Every registry's check for one pull secret."""

    mode: str
    checks: Mapping[str, Check]
    enforced: frozenset[str] | None = None

    @property
    def rejected(self) -> list[str]:
        return [safe_name(r) for r, c in self.checks.items() if c.result == "rejected"]

    def data(self) -> dict[str, Any]:
        """The status `data` fields (keys the HyperFleet condition mapping does not mask)."""
        return {
            "registry_verification": self.mode,
            "registry_checks": [check.to_json(registry) for registry, check in list(self.checks.items())[:100]],
        }

    def enforce(self) -> None:
        """Raise RegistryRejected when a registry refused a credential enforce mode judges (the cluster's own
        entries unless REGISTRY_ENFORCE_PLATFORM: one platform registry's 401 must not block the whole fleet)."""
        refused = [
            safe_name(r)
            for r, c in self.checks.items()
            if c.result == "rejected" and (self.enforced is None or r in self.enforced)
        ]
        if not refused:
            return
        raise RegistryRejected(
            f"the credential for {', '.join(refused[:10])} was rejected by its registry; "
            "nothing was written (REGISTRY_VERIFICATION=enforce; see data.registry_checks)",
            self.data(),
        )


class RegistryVerifier:
    """Process-wide: the connection policy, the per-fingerprint cache, the in-flight handshakes and their threads.

    Handshakes run on their own REGISTRY_CONCURRENCY threads, never on the reconcile pool: a slow registry
    holds those threads only (each request for REGISTRY_TIMEOUT at most, body included), never the Secret
    Manager and Kubernetes calls of other events. One event verifies at most MAX_PER_EVENT registries.
    """

    def __init__(
        self, settings: Settings, *, clock: Callable[[], float] = time.monotonic, egress: Egress | None = None
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._cache = _Expiring(CACHE_ENTRIES, clock)  # fingerprint -> Check
        self._inflight: dict[str, Future[Check]] = {}
        self._challenges = _Expiring(CHALLENGE_ENTRIES, clock)  # registry host -> Challenge
        self._executor = ThreadPoolExecutor(max_workers=settings.registry_concurrency, thread_name_prefix="registry")
        self._scopes = dict(settings.registry_token_scopes)
        self.egress = egress or Egress(settings.registry_allowed_hosts, trusted_realms=settings.registry_trusted_realms)
        self._http: PinnedHTTPS | None = None

    @property
    def mode(self) -> str:
        return self.settings.registry_verification

    def http(self) -> PinnedHTTPS:
        with self._lock:
            if self._http is None:
                self._http = PinnedHTTPS(ca_bundle=self.settings.registry_ca_bundle, user_agent=_USER_AGENT)
            return self._http

    def start(self, secret: PullSecret, deadline: Deadline, *, own: Iterable[str] | None = None) -> Pending | None:
        """Begin verifying `secret`'s registries (`own`: those from the cluster's own pull secret); None when
        verification is off. Cached answers cost no call."""
        if self.mode == "off":
            return None
        overall = Deadline(max(0.0, min(self.settings.registry_deadline_s, deadline.remaining() - 1.0)))
        auths: dict[str, Any] = secret.document()["auths"]
        futures: dict[str, Future[Check]] = {}
        mine: deque[tuple[str, Future[Check], Callable[[], Check]]] = deque()
        verified = 0
        for registry, entry in auths.items():
            decided = self._static(registry, entry)
            if isinstance(decided, Check):
                futures[registry] = _done(decided)
                continue
            verified += 1
            if verified > MAX_PER_EVENT:
                futures[registry] = _done(
                    _not_contacted(f"more than {MAX_PER_EVENT} registries in one pull secret; not verified")
                )
                continue
            host, credential = decided
            key = hashlib.sha256(host.encode() + b"\n" + canonical_bytes(entry)).hexdigest()
            with self._lock:
                cached = self._cache.get(key)
                if cached is not None:
                    futures[registry] = _done(cached)
                    continue
                running = self._inflight.get(key)
                if running is None:
                    running = Future()
                    self._inflight[key] = running
                    job = self._job(key, registry, host, credential, overall)
                    mine.append((key, running, job))
            futures[registry] = running
        for _ in range(min(PER_EVENT, len(mine))):
            # Each worker carries the event's log context (labels, trace, the redactor the token joins).
            self._executor.submit(contextvars.copy_context().run, self._drain, mine)
        enforced = None if own is None or self.settings.registry_enforce_platform else frozenset(own)
        return Pending(self.mode, tuple(auths), futures, overall, enforced)

    def _static(self, registry: str, entry: Any) -> Check | tuple[str, Credential]:
        """What is decided without a call: skipped hosts and entries, or (host, credential) to verify."""
        host = registry_host(registry)
        if host is None:
            return _not_contacted("not an HTTPS registry address; never contacted")
        name = hostname_of(host)
        if name in self.settings.registry_skip_hosts or host in self.settings.registry_skip_hosts:
            return _not_contacted("not an image registry (REGISTRY_SKIP_HOSTS)")
        credential = credential_of(entry) if isinstance(entry, dict) else None
        if credential is None:
            return _not_contacted("the entry holds no credential")
        return host, credential

    def _job(
        self, key: str, registry: str, host: str, credential: Credential, deadline: Deadline
    ) -> Callable[[], Check]:
        def run() -> Check:
            protect(credential.sensitive())
            start = time.perf_counter()
            with self._lock:
                known = self._challenges.get(host)
            handshake = _Handshake(
                self.http(),
                self.egress,
                host,
                credential,
                scope=self._scopes.get(host) or self._scopes.get(hostname_of(host)),
                timeout_s=self.settings.registry_timeout_s,
                deadline=deadline,
                known=known,
            )
            check = handshake.run()
            with self._lock:
                if handshake.seen is not None:
                    self._challenges.put(host, handshake.seen, CHALLENGE_TTL_S)
                else:
                    self._challenges.pop(host)
            (log.warning if check.result == "rejected" else log.info)(
                f"registry {safe_name(registry)}: {check.result} ({check.detail})",
                operation="registry.verify",
                registry=safe_name(registry),
                result=check.result,
                duration_ms=round((time.perf_counter() - start) * 1000, 2),
            )
            return check

        return run

    def _drain(self, queue: deque[tuple[str, Future[Check], Callable[[], Check]]]) -> None:
        """One of an event's workers: run its queued handshakes one after another."""
        while True:
            try:
                key, future, job = queue.popleft()
            except IndexError:
                return
            try:
                check = job()
            except Exception as exc:  # noqa: BLE001 - a bug must not leave the waiters of this fingerprint hanging
                log.log("ERROR", "registry verification failed unexpectedly", exc=exc, operation="registry.verify")
                check = Check("unreachable", "the verification failed unexpectedly")
            ttl = self.settings.registry_cache_ttl_s
            if check.result == "unreachable":
                ttl = min(ttl, UNREACHABLE_TTL_S)
            elif check.result == "rejected":
                ttl = min(ttl, REJECTED_TTL_S)
            with self._lock:
                if ttl > 0:
                    self._cache.put(key, check, ttl)
                self._inflight.pop(key, None)
            future.set_result(check)


def _done(check: Check) -> Future[Check]:
    future: Future[Check] = Future()
    future.set_result(check)
    return future
