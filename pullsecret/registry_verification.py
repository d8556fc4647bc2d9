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
import binascii
import contextlib
import contextvars
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter

from pullsecret.config import Settings
from pullsecret.dockerconfig import PullSecret, canonical_bytes
from pullsecret.errors import TerminalError
from pullsecret.logs import log, protect
from pullsecret.retrying import Deadline

RESULTS = ("valid", "rejected", "anonymous", "unreachable", "skipped")
PER_EVENT = 4  # handshakes one event runs at once (REGISTRY_CONCURRENCY threads bound the process)
UNREACHABLE_TTL_S = 60.0  # an outage is retried sooner than a verdict is
CHALLENGE_TTL_S = 600.0  # a registry host's auth challenge, reused by the next new credential for it
_MAX_BODY = 64 * 1024  # token answers are a few KiB; a larger one is not read further
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


# --- pure: challenge parsing, registry names, credentials -----------------------------------------------


@dataclass(frozen=True)
class Challenge:
    """One auth challenge of a WWW-Authenticate header: the scheme (lower case) and its parameters."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)


# RFC 7230 tchar: any visible ASCII except separators (distribution's octetTypes isToken).
_SEPARATORS = frozenset(' \t"(),/:;<=>?@[]\\{}')
_SPACE = frozenset(" \t\r\n")


def _is_token_char(ch: str) -> bool:
    return 32 < ord(ch) < 127 and ch not in _SEPARATORS


def _token(text: str, i: int) -> tuple[str, int]:
    j = i
    while j < len(text) and _is_token_char(text[j]):
        j += 1
    return text[i:j], j


def _skip(text: str, i: int, chars: frozenset[str] = _SPACE) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _quoted(text: str, i: int) -> tuple[str | None, int]:
    """A quoted-string starting at text[i] == '"' (backslash escapes); None when unterminated."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            out.append(text[j + 1])
            j += 2
            continue
        if ch == '"':
            return "".join(out), j + 1
        out.append(ch)
        j += 1
    return None, j


def parse_challenges(values: Iterable[str]) -> list[Challenge]:
    """Every challenge of the given WWW-Authenticate header values (RFC 7235 §4.1).

    As distribution's parseValueAndParams: the scheme and parameter names are case-insensitive
    (lower-cased), values are tokens or quoted strings. One header value may hold several challenges
    separated by commas (HTTP clients join repeated headers that way); a token not followed by `=`
    starts the next challenge. Parsing stops quietly at the first malformed part, keeping what came before.
    """
    found: list[Challenge] = []
    for text in values:
        i = _skip(text, 0, _SPACE | {","})
        while i < len(text):
            scheme, i = _token(text, i)
            if not scheme:
                break
            params: dict[str, str] = {}
            i = _skip(text, i)
            while i < len(text):
                start = _skip(text, i, _SPACE | {","})
                name, j = _token(text, start)
                k = _skip(text, j)
                if not name or k >= len(text) or text[k] != "=":
                    i = start
                    break  # the next challenge's scheme (or the end)
                k = _skip(text, k + 1)
                if k < len(text) and text[k] == '"':
                    value, k = _quoted(text, k)
                    if value is None:
                        i = len(text)
                        break
                else:
                    value, k = _token(text, k)
                    while k < len(text) and text[k] == "=":  # token68 padding (e.g. Negotiate abc==)
                        k += 1
                params[name.lower()] = value
                i = _skip(text, k)
            found.append(Challenge(scheme.lower(), params))
            i = _skip(text, i, _SPACE | {","})
    return found


def pick_challenge(challenges: Iterable[Challenge]) -> Challenge | None:
    """The first challenge the handshake can answer (basic or bearer), as go-containerregistry's ping picks."""
    for challenge in challenges:
        if challenge.scheme in ("basic", "bearer"):
            return challenge
    return None


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
    netloc = text.split("/", 1)[0].lower()
    try:
        parts = urlsplit("https://" + netloc)
        hostname, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not hostname or parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        return None
    if not all(ch.isalnum() or ch in ".-:[]" for ch in netloc):
        return None
    if hostname in _DOCKER_HUB_ALIASES:
        hostname = DOCKER_HUB_HOST
    host = f"[{hostname}]" if ":" in hostname else hostname
    return f"{host}:{port}" if port is not None and port != 443 else host


def hostname_of(host: str) -> str:
    """`host[:port]` → host name without port or brackets."""
    return urlsplit("https://" + host).hostname or host


def effective_domain(host: str) -> str:
    """The last two labels of a host name (an IP address is its own domain): go-containerregistry's trust key."""
    name = hostname_of(host).rstrip(".").lower()
    if ":" in name or name.replace(".", "").isdigit():
        return name
    labels = name.split(".")
    return ".".join(labels[-2:]) if len(labels) >= 2 else name


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
            with contextlib.suppress(binascii.Error, ValueError):
                decoded = base64.b64decode(self.secret).decode("utf-8", "replace")
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
        return Credential("basic", base64.b64encode(f"{user}:{password}".encode()).decode("ascii"))
    return None


@dataclass(frozen=True)
class Check:
    """The answer for one registry: a result of RESULTS and a fixed, credential-free explanation."""

    result: str
    detail: str

    def to_json(self, registry: str) -> dict[str, str]:
        return {"registry": safe_name(registry), "result": self.result, "detail": self.detail}


def safe_name(registry: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in registry)[:100]


# --- the handshake ------------------------------------------------------------------------------------


class _Handshake:
    """One registry's handshake with one credential; every outcome is a Check, nothing raises."""

    def __init__(
        self,
        session: requests.Session,
        host: str,
        credential: Credential,
        *,
        scope: str | None,
        timeout_s: float,
        deadline: Deadline,
        known: Challenge | None = None,
    ) -> None:
        self.session = session
        self.host = host
        self.credential = credential
        self.scope = scope
        self.timeout_s = timeout_s
        self.deadline = deadline
        self.known = known
        self.seen: Challenge | None = None  # the challenge this handshake used, for the next one to reuse

    def _get(self, url: str, **kwargs: Any) -> requests.Response:
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise TimeoutError("registry verification deadline")
        # allow_redirects=False: a credential never follows a redirect to another host (nor the same one).
        return self.session.request(
            kwargs.pop("method", "GET"),
            url,
            timeout=min(self.timeout_s, remaining),
            allow_redirects=False,
            stream=True,
            **kwargs,
        )

    @staticmethod
    def _body(response: requests.Response) -> bytes:
        try:
            return response.raw.read(_MAX_BODY + 1, decode_content=True) or b""
        finally:
            response.close()

    def run(self) -> Check:
        try:
            return self._run()
        except requests.exceptions.SSLError:
            return Check("unreachable", "TLS handshake or certificate verification failed")
        except (requests.exceptions.Timeout, TimeoutError):
            return Check("unreachable", "timed out")
        except requests.exceptions.ConnectionError:
            return Check("unreachable", "connection failed")
        except (requests.RequestException, OSError, ValueError):
            return Check("unreachable", "the exchange failed")

    def _run(self) -> Check:
        if self.known is not None:
            # The host's challenge from an earlier ping (distribution's challenge manager keeps them per
            # endpoint too). It only shortens the success path: any other answer is checked from a fresh ping.
            self.seen = self.known
            check = self._answer(self.known)
            if check.result == "valid":
                return check
            self.seen = None
        ping = self._get(f"https://{self.host}/v2/")
        self._body(ping)
        if ping.status_code == 200:
            return Check("anonymous", "the registry answers /v2/ without a credential; nothing to verify")
        if ping.status_code != 401:
            return _unexpected("the registry", ping.status_code)
        values = ping.raw.headers.getlist("WWW-Authenticate") if ping.raw is not None else []
        challenge = pick_challenge(parse_challenges(values or [ping.headers.get("WWW-Authenticate", "")]))
        if challenge is None:
            return Check("skipped", "the registry asks for an authentication scheme other than Basic or Bearer")
        self.seen = challenge
        return self._answer(challenge)

    def _answer(self, challenge: Challenge) -> Check:
        """Answer a Basic or Bearer challenge with the credential, then ask /v2/ again."""
        ping_url = f"https://{self.host}/v2/"
        if challenge.scheme == "basic":
            if self.credential.kind != "basic":
                return Check("skipped", "the registry asks for Basic authentication; the entry holds a token")
            return self._with_authorization(ping_url, f"Basic {self.credential.secret}", "the registry")
        token = self.credential.secret if self.credential.kind == "registry" else None
        if token is None:
            outcome = self._token(challenge)
            if isinstance(outcome, Check):
                return outcome
            token = outcome
        protect([token])
        return self._with_authorization(ping_url, f"Bearer {token}", "the registry")

    def _with_authorization(self, url: str, authorization: str, who: str) -> Check:
        response = self._get(url, headers={"Authorization": authorization})
        self._body(response)
        if response.status_code == 200:
            return Check("valid", "the registry accepted the credential")
        if response.status_code == 401:
            return Check("rejected", f"{who} refused the credential (401)")
        return _unexpected(who, response.status_code)

    def _token(self, challenge: Challenge) -> str | Check:
        realm = challenge.params.get("realm", "")
        try:
            parts = urlsplit(realm)
            realm_host = parts.netloc
        except ValueError:
            return Check("skipped", "the registry's token realm is not a URL")
        if parts.scheme != "https" or not realm_host or parts.username is not None:
            return Check("skipped", "the registry's token realm is not an HTTPS URL; no credential sent")
        if effective_domain(realm_host) != effective_domain(self.host):
            return Check("skipped", "the registry's token realm lies outside its domain; no credential sent")
        params: dict[str, str] = {}
        if challenge.params.get("service"):
            params["service"] = challenge.params["service"]
        if self.scope:
            params["scope"] = self.scope
        if self.credential.kind == "identity":
            # An identity token is an OAuth2 refresh token (docker's oauth flow; go-containerregistry refreshOauth).
            form = {**params, "grant_type": "refresh_token", "refresh_token": self.credential.secret}
            form["client_id"] = _CLIENT_ID
            response = self._get(realm, method="POST", data=form)
        else:
            response = self._get(realm, params=params, headers={"Authorization": f"Basic {self.credential.secret}"})
        body = self._body(response)
        if response.status_code == 401:
            return Check("rejected", "the registry's token service refused the credential (401)")
        if response.status_code != 200:
            return _unexpected("the registry's token service", response.status_code)
        try:
            answer = json.loads(body[:_MAX_BODY]) if len(body) <= _MAX_BODY else None
        except (ValueError, RecursionError):
            answer = None
        token = ""
        if isinstance(answer, dict):
            # Some token services set access_token instead of token (go-containerregistry bearer.go).
            token = answer.get("token") or answer.get("access_token") or ""
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


@dataclass
class Pending:
    """The checks of one event, some still running; `result()` waits for them within the overall deadline."""

    mode: str
    registries: tuple[str, ...]
    futures: dict[str, Future[Check]]
    deadline: Deadline
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
        self._verification = Verification(self.mode, checks)
        return self._verification


@dataclass(frozen=True)
class Verification:
    """Every registry's check for one pull secret."""

    mode: str
    checks: Mapping[str, Check]

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
        """Raise RegistryRejected when a registry refused its credential (enforce mode)."""
        rejected = self.rejected
        if not rejected:
            return
        details = "; ".join(f"{safe_name(r)}: {c.detail}" for r, c in self.checks.items() if c.result == "rejected")
        raise RegistryRejected(
            f"the credential for {', '.join(rejected[:10])} was rejected by the registry ({details[:500]}); "
            "nothing was written (REGISTRY_VERIFICATION=enforce)",
            self.data(),
        )


class RegistryVerifier:
    """Process-wide: the HTTPS session, the per-fingerprint cache, the in-flight handshakes and their threads.

    Handshakes run on their own REGISTRY_CONCURRENCY threads, never on the reconcile pool: a slow registry
    holds those threads only, never the Secret Manager and Kubernetes calls of other events.
    """

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, Check]] = {}
        self._inflight: dict[str, Future[Check]] = {}
        self._challenges: dict[str, tuple[float, Challenge]] = {}  # per registry host
        self._executor = ThreadPoolExecutor(max_workers=settings.registry_concurrency, thread_name_prefix="registry")
        self._scopes = dict(settings.registry_token_scopes)
        self._session: requests.Session | None = None

    @property
    def mode(self) -> str:
        return self.settings.registry_verification

    def session(self) -> requests.Session:
        with self._lock:
            if self._session is None:
                session = requests.Session()
                # No proxies, .netrc or CA bundle from the environment: what is sent where is this module's.
                session.trust_env = False
                session.verify = self.settings.registry_ca_bundle or True
                session.headers["User-Agent"] = _USER_AGENT
                adapter = HTTPAdapter(pool_maxsize=self.settings.registry_concurrency, max_retries=0)
                session.mount("https://", adapter)
                self._session = session
            return self._session

    def start(self, secret: PullSecret, deadline: Deadline) -> Pending | None:
        """Begin verifying `secret`'s registries; None when verification is off. Cached answers cost no call."""
        if self.mode == "off":
            return None
        overall = Deadline(max(0.0, min(self.settings.registry_deadline_s, deadline.remaining() - 1.0)))
        auths: dict[str, Any] = secret.document()["auths"]
        futures: dict[str, Future[Check]] = {}
        mine: deque[tuple[str, Future[Check], Callable[[], Check]]] = deque()
        now = self._clock()
        for registry, entry in auths.items():
            decided = self._static(registry, entry)
            if isinstance(decided, Check):
                futures[registry] = _done(decided)
                continue
            host, credential = decided
            key = hashlib.sha256(host.encode() + b"\n" + canonical_bytes(entry)).hexdigest()
            with self._lock:
                cached = self._cache.get(key)
                if cached is not None and cached[0] > now:
                    futures[registry] = _done(cached[1])
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
        return Pending(self.mode, tuple(auths), futures, overall)

    def _static(self, registry: str, entry: Any) -> Check | tuple[str, Credential]:
        """What is decided without a call: skipped hosts and entries, or (host, credential) to verify."""
        host = registry_host(registry)
        if host is None:
            return Check("skipped", "not an HTTPS registry address; never contacted")
        name = hostname_of(host)
        if name in self.settings.registry_skip_hosts or host in self.settings.registry_skip_hosts:
            return Check("skipped", "not an image registry (REGISTRY_SKIP_HOSTS)")
        credential = credential_of(entry) if isinstance(entry, dict) else None
        if credential is None:
            return Check("skipped", "the entry holds no credential")
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
                self.session(),
                host,
                credential,
                scope=self._scopes.get(host) or self._scopes.get(hostname_of(host)),
                timeout_s=self.settings.registry_timeout_s,
                deadline=deadline,
                known=known[1] if known is not None and known[0] > self._clock() else None,
            )
            check = handshake.run()
            with self._lock:
                if handshake.seen is not None:
                    self._challenges[host] = (self._clock() + CHALLENGE_TTL_S, handshake.seen)
                else:
                    self._challenges.pop(host, None)
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
            with self._lock:
                if ttl > 0:
                    self._prune()
                    self._cache[key] = (self._clock() + ttl, check)
                self._inflight.pop(key, None)
            future.set_result(check)

    def _prune(self) -> None:
        """Drop expired answers once the cache grows large (called with the lock held)."""
        if len(self._cache) < 50_000:
            return
        now = self._clock()
        for key in [k for k, (expires, _) in self._cache.items() if expires <= now]:
            del self._cache[key]


def _done(check: Check) -> Future[Check]:
    future: Future[Check] = Future()
    future.set_result(check)
    return future
