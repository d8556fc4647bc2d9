"""Which registry a pull-secret key names and which credential its entry holds (pure parsing, nothing sent)."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pullsecret.model.dockerconfig import DOCKER_HUB_ALIASES
from pullsecret.settings.hostnames import DEFAULT_PORT, split_host

# Docker Hub: the keys `docker.io`, `index.docker.io` and `https://index.docker.io/v1/` (the legacy
# IndexServer docker login still writes) all name the registry served at registry-1.docker.io
# (moby registry/config.go: IndexServer, IndexHostname, DefaultRegistryHost, DefaultV2Registry).
DOCKER_HUB_HOST = "registry-1.docker.io"

_HOST_CHARS = frozenset(".-:[]")  # in a registry key's host[:port], besides letters and digits


def registry_host(key: str) -> str | None:
    """The host[:port] serving `/v2/` for a pull-secret registry key; None when the key is not HTTPS-capable.

    The host is in the egress check's normal form (`split_host`: IDNA, lower case, no trailing dot) and the
    port is left out when it is 443: `quay.io.`, `QUAY.IO:443` and fullwidth `quay.io` are all `quay.io`, one registry
    to the per-registry bound, the caches and REGISTRY_SKIP_HOSTS.

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
        hostname, port = split_host(netloc)  # the egress check's normal form: one registry, one name
    except ValueError:
        return None
    if hostname in DOCKER_HUB_ALIASES:
        hostname = DOCKER_HUB_HOST
    host = f"[{hostname}]" if ":" in hostname else hostname
    return f"{host}:{port}" if port != DEFAULT_PORT else host


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


def beyond_per_host(candidates: Sequence[tuple[str, Credential]], *, limit: int) -> list[bool]:
    """For each (registry, credential), in order: whether its credential is beyond the first `limit` distinct
    credentials of that registry (`registry_host`'s normal host[:port]: `mirror:5000` and `mirror:5001` are two).
    One credential named under several keys of a registry (`quay.io/a`, `quay.io./b`) counts once; each of its
    keys is beyond only when that credential is."""
    seen: dict[str, list[Credential]] = {}
    out: list[bool] = []
    for name, credential in candidates:
        known = seen.setdefault(name, [])
        if credential not in known and len(known) < limit:
            known.append(credential)
        out.append(credential not in known)
    return out
