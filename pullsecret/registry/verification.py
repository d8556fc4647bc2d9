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

import contextvars
import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pullsecret.logs import log, protect
from pullsecret.model.dockerconfig import PullSecret, canonical_bytes
from pullsecret.registry.credentials import Credential, beyond_per_host, credential_of, hostname_of, registry_host
from pullsecret.registry.egress import Egress
from pullsecret.registry.expiring import Expiring
from pullsecret.registry.handshake import Handshake
from pullsecret.registry.http import PinnedHTTPS
from pullsecret.registry.verdicts import (
    RESULTS,
    Check,
    Pending,
    RegistryRejected,
    Verification,
    not_contacted,
    safe_name,
)
from pullsecret.registry.www_authenticate import parse_challenges
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings

# The verdicts and parsing that live in this package's other modules, named here too for the callers of
# `verification`.
__all__ = [
    "RESULTS",
    "Check",
    "Credential",
    "Pending",
    "RegistryRejected",
    "RegistryVerifier",
    "Verification",
    "credential_of",
    "hostname_of",
    "parse_challenges",
    "registry_host",
    "safe_name",
]

PER_EVENT = 4  # handshakes one event runs at once (REGISTRY_CONCURRENCY threads bound the process)
MAX_PER_EVENT = 20  # registries one event verifies; the rest of a larger pull secret are `skipped`
# Distinct credentials one event presents to one registry, its normal host:port as `registry_host` gives it
# (`quay.io/a`, `quay.io./b`, fullwidth `quay.io/c`... are one registry; `mirror:5000` and `mirror:5001` are two):
# beyond, a pull secret would make the platform's egress address an oracle for guessed credentials, and get it
# blocked. The rest are `skipped` and do not count toward MAX_PER_EVENT.
MAX_PER_HOST = 3
UNREACHABLE_TTL_S = 60.0  # an outage is retried sooner than a verdict is
REJECTED_TTL_S = 300.0  # a refusal too: a registry's passing 401 must not stand for REGISTRY_CACHE_TTL
CHALLENGE_TTL_S = 600.0  # a registry host's auth challenge, reused by the next new credential for it
CACHE_ENTRIES = 20_000  # answers kept (least recently used dropped first)
CHALLENGE_ENTRIES = 2_000  # registry hosts whose challenge is kept
_USER_AGENT = "hyperfleet-pullsecret-adapter"


class RegistryVerifier:
    """Process-wide: the connection policy, the per-fingerprint cache, the in-flight handshakes and their threads.

    Handshakes run on their own REGISTRY_CONCURRENCY threads, never on the reconcile pool: a slow registry
    holds those threads only (each request for REGISTRY_TIMEOUT at most, body included), never the Secret
    Manager and Kubernetes calls of other events. One event verifies at most MAX_PER_EVENT registries, and
    presents at most MAX_PER_HOST distinct credentials to one registry (its normal host and port).
    """

    def __init__(
        self, settings: Settings, *, clock: Callable[[], float] = time.monotonic, egress: Egress | None = None
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._cache = Expiring(CACHE_ENTRIES, clock)  # fingerprint -> Check
        self._inflight: dict[str, Future[Check]] = {}
        self._challenges = Expiring(CHALLENGE_ENTRIES, clock)  # registry host -> Challenge
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
        static = self._static_all(auths)
        for registry, entry in auths.items():
            decided = static[registry]
            if isinstance(decided, Check):
                futures[registry] = _done(decided)
                continue
            verified += 1
            if verified > MAX_PER_EVENT:
                futures[registry] = _done(
                    not_contacted(f"more than {MAX_PER_EVENT} registries in one pull secret; not verified")
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

    def _static_all(self, auths: dict[str, Any]) -> dict[str, Check | tuple[str, Credential]]:
        """`_static` of each registry, and `skipped` past MAX_PER_HOST distinct credentials of one registry."""
        static = {registry: self._static(registry, entry) for registry, entry in auths.items()}
        candidates = [(registry, d) for registry, d in static.items() if not isinstance(d, Check)]
        beyond = beyond_per_host([(host, c) for _, (host, c) in candidates], limit=MAX_PER_HOST)
        for (registry, _), over in zip(candidates, beyond, strict=True):
            if over:
                static[registry] = not_contacted(
                    f"more than {MAX_PER_HOST} credentials for one registry host; not verified"
                )
        return static

    def _static(self, registry: str, entry: Any) -> Check | tuple[str, Credential]:
        """What is decided without a call: skipped hosts and entries, or (host, credential) to verify."""
        host = registry_host(registry)
        if host is None:
            return not_contacted("not an HTTPS registry address; never contacted")
        name = hostname_of(host)
        if name in self.settings.registry_skip_hosts or host in self.settings.registry_skip_hosts:
            return not_contacted("not an image registry (REGISTRY_SKIP_HOSTS)")
        credential = credential_of(entry) if isinstance(entry, dict) else None
        if credential is None:
            return not_contacted("the entry holds no credential")
        return host, credential

    def _job(
        self, key: str, registry: str, host: str, credential: Credential, deadline: Deadline
    ) -> Callable[[], Check]:
        def run() -> Check:
            protect(credential.sensitive())
            start = time.perf_counter()
            with self._lock:
                known = self._challenges.get(host)
            handshake = Handshake(
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
