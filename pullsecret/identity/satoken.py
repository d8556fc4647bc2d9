"""A Kubernetes ServiceAccount token minted by TokenRequest, the adapter's identity behind hyperfleet-gateway.

A Cloud Run function is not a pod and has no projected token; it asks the cluster that runs HyperFleet for one, as
the kubelet does for a pod (https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/
token-request-v1/):

    POST https://<endpoint>/api/v1/namespaces/<ns>/serviceaccounts/<name>/token
    Authorization: Bearer <the runtime identity's access token>
    {"spec": {"audiences": [<audience>], "expirationSeconds": 600}}

The endpoint and CA come from the GKE API (its REST GetCluster through gke_endpoints, as for a management cluster);
the API server authorizes `create` on `serviceaccounts/token` for that one name (the Role Terraform renders).
Invariants:

1. The shortest lifetime the API server allows (600 s, pkg/apis/authentication/validation MinTokenAgeSec): a token
   that leaks is good for ten minutes at most.
2. Reused across events and threads until 80% of its lifetime has passed (the kubelet's rule for projected tokens,
   pkg/kubelet/token/token_manager.go `requiresRefresh`), so the steady state is one TokenRequest per 8 minutes per
   instance, whatever the event rate.
3. After a refusal, `refresh` mints once more; a token that itself came from such a refresh and is refused again is
   not re-minted for REMINT_AFTER_S (the caller then reports one ERROR line and the event is redelivered): a
   refusal no new token changes (the allow-list, the audience) costs one extra TokenRequest, not one per call.
4. The token never reaches a repr, a message or a log line; the ERROR lines name the settings and the fix. It is
   registered with the process's redaction (`logs.hold`) when minted and whenever handed out, so an answer that
   quotes it back is scrubbed (the runtime identity's access token sent here is held the same way).
A failed mint is our configuration or an outage, never the cluster's: TransientError (the event is redelivered).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import certifi
import urllib3

from pullsecret import outbound
from pullsecret.errors import AdapterError, TransientError
from pullsecret.gke.api import GkeClusters
from pullsecret.gke.endpoints import Endpoint, choose_endpoint, get_cluster
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.logs import hold, log
from pullsecret.outbound import deadline_io
from pullsecret.retrying import Deadline
from pullsecret.settings.token_source import TokenSource

EXPIRATION_SECONDS = 600  # invariant 1
RENEW_AT = 0.8  # invariant 2
REMINT_AFTER_S = 60.0  # invariant 3
ENDPOINT_TTL_S = 3600.0  # as a management cluster's
MINT_DEADLINE_S = 10.0
MINT_FAILED = "CredentialsUnavailable"
FAILED_MINT_KEPT_S = 5.0  # a failed TokenRequest answers the calls of the next 5 s (one ERROR line, not one per call)


class ServiceAccountToken:
    """The ServiceAccount token for one audience; thread-safe; its repr never shows the token."""

    def __init__(
        self,
        source: TokenSource,
        audience: str,
        *,
        gke: GkeClusters,
        identity: RuntimeIdentity,
        scheme: str = "ServiceAccount",
        service: str = "hyperfleet",
        endpoint_mode: str = "ip",
        vpc_egress: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.audience = audience
        self.scheme = scheme
        self.service = service
        self.remedy = (
            f"the token of ServiceAccount {source.account} (cluster {source.cluster}, audience {audience!r}; "
            f"{source.settings}) is refused: the account must be on the gateway's allow-list in its namespace "
            "(terraform output gateway_allowed_service_accounts) and the audience the one the gateway reviews; "
            "`python -m pullsecret doctor` says which"
        )
        self._gke = gke
        self._identity = identity
        self._endpoint_mode = endpoint_mode
        self._vpc_egress = vpc_egress
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._renew_at = 0.0
        self._from_refresh: tuple[str, float] | None = None  # (token, minted at) of the last refresh's mint
        self._endpoint: tuple[Endpoint, float] | None = None
        self._failed: tuple[TransientError, float] | None = None
        self._pools: dict[str, deadline_io.HTTPSConnectionPool] = {}

    def __repr__(self) -> str:
        return f"ServiceAccountToken(account={self.source.account!r}, audience={self.audience!r})"

    def current(self) -> str:
        """The cached token, minted again when 80% of its lifetime has passed."""
        with self._lock:
            if self._token is None or self._clock() >= self._renew_at:
                self._mint()
            assert self._token is not None
            hold([self._token])
            return self._token

    def refresh(self, refused: str) -> bool:
        """Mint a token now (the service refused `refused`); True when there is another token to try."""
        with self._lock:
            if self._token is not None and self._token != refused and self._clock() < self._renew_at:
                return True  # another thread already minted a newer one
            last = self._from_refresh
            if last is not None and last[0] == refused and self._clock() - last[1] < REMINT_AFTER_S:
                return False  # invariant 3: a fresh token refused again; a third one would be refused too
            self._mint()
            assert self._token is not None
            self._from_refresh = (self._token, self._clock())
            return self._token != refused

    # -- minting (lock held) ------------------------------------------------------------------------
    def _mint(self) -> None:
        started = self._clock()
        failed = self._failed
        if failed is not None and started - failed[1] < FAILED_MINT_KEPT_S:
            raise failed[0]
        try:
            self._mint_now(started)
        except TransientError as exc:
            self._failed = (exc, started)
            raise
        self._failed = None

    def _mint_now(self, started: float) -> None:
        deadline = Deadline(MINT_DEADLINE_S)  # the endpoint's lookup and the TokenRequest, all of each (deadline_io)
        endpoint = self._endpoint_now(deadline)
        answer = self._request(endpoint, deadline)
        if answer.status != 201:
            raise self._refused(answer.status)
        try:
            body = json.loads(answer.data)
            token = body["status"]["token"]
            seconds = int((body.get("spec") or {}).get("expirationSeconds") or EXPIRATION_SECONDS)
        except (ValueError, KeyError, TypeError):
            raise self._failure("the TokenRequest answer has no token", alert=False) from None
        if not isinstance(token, str) or not token or seconds <= 0:
            raise self._failure("the TokenRequest answer has no token", alert=False)
        hold([token])
        self._token = token
        self._renew_at = started + RENEW_AT * min(seconds, EXPIRATION_SECONDS)

    def _endpoint_now(self, deadline: Deadline) -> Endpoint:
        cached = self._endpoint
        if cached is not None and self._clock() - cached[1] < ENDPOINT_TTL_S:
            return cached[0]
        what = f"get the token cluster {self.source.cluster}"
        try:
            cluster = get_cluster(self._gke, self.source.cluster, deadline, what=what, not_found="TokenClusterNotFound")
            endpoint = choose_endpoint(cluster, mode=self._endpoint_mode, vpc_egress=self._vpc_egress, what=what)
        except AdapterError as exc:
            # Our own configuration (or GKE's outage), never the event's: redelivered, said at error level.
            raise self._failure(exc.message, alert=exc.reason != "DependencyUnavailable") from None
        self._endpoint = (endpoint, self._clock())
        return endpoint

    def _request(self, endpoint: Endpoint, deadline: Deadline) -> Any:
        pool = self._pools.get(endpoint.host)
        if pool is None:
            host, _, port = endpoint.host.partition(":")
            tls: dict[str, Any] = (
                {"ca_cert_data": endpoint.ca_pem.decode()} if endpoint.ca_pem else {"ca_certs": certifi.where()}
            )
            pool = deadline_io.HTTPSConnectionPool(
                host, int(port or 443), maxsize=4, retries=False, timeout=urllib3.Timeout(5.0), **tls
            )
            self._pools = {endpoint.host: pool}
        path = (
            f"/api/v1/namespaces/{quote(self.source.namespace, safe='')}/serviceaccounts/"
            f"{quote(self.source.name, safe='')}/token"
        )
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"audiences": [self.audience], "expirationSeconds": EXPIRATION_SECONDS},
        }
        # No traceparent: the token is minted for the process, not for one event (it outlives the event).
        sent = outbound.request(token=self._identity.token(), json_body=body, trace=False)
        try:
            with deadline_io.within(deadline):
                return pool.request("POST", path, body=sent.body, headers=sent.headers)
        except urllib3.exceptions.HTTPError as exc:
            self._endpoint = None  # it may have moved (a new IP, a rotated CA): ask GKE again next time
            cause = type(getattr(exc, "reason", None)).__name__
            bad_tls = isinstance(exc, urllib3.exceptions.SSLError) or "SSL" in cause
            detail = f"the token cluster's API server is unreachable ({type(exc).__name__})"
            if bad_tls:
                detail += "; its certificate does not chain to the CA GKE gives for it"
            raise self._failure(detail, alert=bad_tls, reason="DependencyUnavailable") from None

    def _refused(self, status: int) -> TransientError:
        account, cluster = self.source.account, self.source.cluster
        if status == 401:
            self._identity.invalidate()
            return self._failure("the token cluster refused the runtime identity's access token (401)", alert=False)
        if status == 403:
            return self._failure(
                f"the runtime identity may not create tokens for ServiceAccount {account} on {cluster} (403): "
                "apply the Role and RoleBinding Terraform renders for the token cluster "
                "(terraform output token_cluster_manifests: create on serviceaccounts/token, that one name)"
            )
        if status == 404:
            return self._failure(
                f"ServiceAccount {account} does not exist on {cluster} (404): apply the manifests of terraform "
                "output token_cluster_manifests, or fix the account's name"
            )
        return self._failure(f"TokenRequest answered {status}", alert=status < 500, reason="DependencyUnavailable")

    def _failure(self, detail: str, *, alert: bool = True, reason: str = MINT_FAILED) -> TransientError:
        message = (
            f"could not mint a ServiceAccount token for {self.service} ({self.source.settings}): {detail}; "
            "the event will be redelivered"
        )
        if alert:
            log.error(message, operation=f"{self.service}.auth", error_kind="configuration", reason=reason)
        return TransientError(message, reason=reason, service="kubernetes")
