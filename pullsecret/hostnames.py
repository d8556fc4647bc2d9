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
    """`name[:port]` or `[v6][:port]` → (lower-case name without brackets, port); raises ValueError."""
    parts = urlsplit("//" + host)  # a netloc alone: no scheme to mistype
    hostname = parts.hostname
    if not hostname:
        raise ValueError("no host name")
    # .lower() states the contract; urllib's hostname is lower case already (which also leaves nothing but "."
    # for rstrip to drop at the end).
    return hostname.rstrip(".").lower(), parts.port or DEFAULT_PORT


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
