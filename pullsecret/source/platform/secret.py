"""The platform pull secret in Secret Manager (PULL_SECRET_SOURCE): read, checksum-checked, cached for a short TTL.

The cache is this source's own (one per process, shared by every event); a new version's notification clears it
(pullsecret.source.platform.rotation). Reads go through the secret store's client (pullsecret.secretstore.calls).
"""

from __future__ import annotations

import time

from google.api_core import exceptions as gexc

from pullsecret.errors import TerminalError
from pullsecret.model import names
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Calls
from pullsecret.secretstore.payload import checked_bytes


class PlatformSecret:
    """The platform pull secret, read through the store's client and cached here for `ttl_s` seconds."""

    def __init__(self, calls: Calls, *, ttl_s: float = 30.0) -> None:
        self._calls = calls
        self._client = calls.client  # requests go through self._calls with its methods
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[float, bytes]] = {}

    def cached(self, version_name: str) -> bytes | None:
        """The platform pull secret's bytes while the cache holds them (within the TTL), else None: no call."""
        cached = self._cache.get(version_name)
        if cached is not None and time.monotonic() - cached[0] < self._ttl_s:
            return cached[1]
        return None

    def read(self, version_name: str, deadline: Deadline) -> bytes:
        """The platform pull secret's bytes (cached for a short TTL); raises Terminal/TransientError."""
        cached = self.cached(version_name)
        if cached is not None:
            return cached
        now = time.monotonic()
        what = f"read PULL_SECRET_SOURCE {version_name}"
        try:
            response = self._calls.call(what, deadline, self._client.access_secret_version, name=version_name)
        except gexc.NotFound:
            raise TerminalError(f"{what}: not found", reason="SourceNotFound", service=SERVICE) from None
        except gexc.FailedPrecondition:
            raise TerminalError(
                f"{what}: the version is disabled or destroyed", reason="SourceUnavailable", service=SERVICE
            ) from None
        data = checked_bytes(response, what=what)
        self._cache[version_name] = (now, data)
        return data

    def invalidate(self) -> None:
        self._cache.clear()

    def newest_version(self, source: str, deadline: Deadline) -> str | None:
        """The resolved name (projects/NUMBER/secrets/ID/versions/N) of the source secret's newest version when
        it is enabled, else None (AccessSecretVersion of `latest`; raises TransientError / TerminalError)."""
        latest = names.latest_of(names.secret_of(source))
        try:
            response = self._calls.call(f"read {latest}", deadline, self._client.access_secret_version, name=latest)
        except (gexc.NotFound, gexc.FailedPrecondition):
            return None
        return str(response.name)
