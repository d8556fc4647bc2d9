"""Registry hosts as the settings write them: `host[:port]` and `registry=realm` entries, parsed and checked.

Pure: no resolution, no connection. config reads REGISTRY_ALLOWED_HOSTS and REGISTRY_TRUSTED_REALMS with these;
pullsecret.registry.egress vets hosts with `split_host`.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

DEFAULT_PORT = 443
_HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")  # a DNS name or an IPv4 literal, lower case


def split_host(host: str) -> tuple[str, int]:
    """`name[:port]` or `[v6][:port]` → (the name in normal form, port); raises ValueError.

    The normal form is what the connection would name: lower case, no brackets, no trailing dots, and a name
    spelt with other than ASCII (fullwidth `quay.io`, `Bücher.example`) in its IDNA form, by the codec the
    resolver, TLS (SNI) and http.client's `Host` apply (Python's `idna`, IDNA 2003 with nameprep): every
    spelling of one registry is one name to every rule here, to the per-registry count and to the caches. A name
    the codec refuses (an empty or over-long label, `a..b`) is no host name.
    """
    parts = urlsplit("//" + host)  # a netloc alone: no scheme to mistype
    hostname = parts.hostname
    port = parts.port  # raises ValueError when out of range
    if not hostname:
        raise ValueError("no host name")
    # .lower() states the contract; urllib's hostname is lower case already (which also leaves nothing but "."
    # for rstrip to drop at the end).
    name = hostname.rstrip(".").lower()
    if ":" not in name:  # an IPv6 literal is ASCII already, and no DNS name
        try:
            name = name.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise ValueError("not a host name in IDNA") from None
    if not name:
        raise ValueError("no host name")
    return name, port or DEFAULT_PORT


def allowed_entry(entry: str) -> str:
    """An REGISTRY_ALLOWED_HOSTS entry in the form `vet` compares (`name:port`); raises ValueError."""
    text = entry.strip()
    # Two colons without brackets: split_host's port parsing refuses them too; said here so the rule does not rest
    # on urllib (so `count(":") > 2` or `>= 1` are no observable change).
    if not text or any(ch in text for ch in "/@?#") or (text.count(":") > 1 and not text.startswith("[")):
        raise ValueError(f"not host[:port]: {entry!r}")
    hostname, port = split_host(text)
    return f"{hostname}:{port}"


def trusted_realm_entry(entry: str) -> tuple[str, str]:
    """A REGISTRY_TRUSTED_REALMS entry `registry=realm` (two host names, no port) as a pair; raises ValueError."""
    registry, sep, realm = entry.partition("=")
    pair = (registry.strip().rstrip(".").lower(), realm.strip().rstrip(".").lower())
    if not sep or not all(_HOST_NAME.fullmatch(name) for name in pair):
        raise ValueError(f"not registry=realm host names: {entry!r}")
    return pair
