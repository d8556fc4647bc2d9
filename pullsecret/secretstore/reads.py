"""The per-cluster secret's reads: its newest version, one version's bytes or creation time, and the read-back."""

from __future__ import annotations

from dataclasses import dataclass, field

from google.api_core import exceptions as gexc

from pullsecret.errors import AdapterError, TransientError
from pullsecret.model import names
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Calls, unix_seconds
from pullsecret.secretstore.payload import checked_bytes, checksum_matches

MAX_SCAN = 16  # versions read back after an ambiguous failure, looking for one that landed


@dataclass(frozen=True)
class Latest:
    """The newest version: its resolved name and content when ENABLED."""

    name: str | None
    data: bytes | None = field(repr=False)
    state: str  # "enabled" | "unusable" (disabled/destroyed) | "missing" (no secret or no versions)

    def holding(self, data: bytes) -> str | None:
        """This version's name when it is enabled and holds `data`, else None."""
        if self.state == "enabled" and self.data == data and self.name:
            return self.name
        return None


class VersionReads:
    """Reads of a secret's versions through the store's client (the access quota where it can, else the read quota)."""

    def __init__(self, calls: Calls) -> None:
        self._calls = calls
        self._client = calls.client  # requests go through self._calls with its methods

    def latest(self, secret_name: str, deadline: Deadline) -> Latest:
        """The newest version's content (AccessSecretVersion: the 90,000/min access quota, not the read quota)."""
        what = f"read {names.latest_of(secret_name)}"
        try:
            response = self._calls.call(
                what, deadline, self._client.access_secret_version, name=names.latest_of(secret_name)
            )
        except gexc.NotFound:
            return Latest(None, None, "missing")  # no secret, or a secret without versions
        except gexc.FailedPrecondition:
            return Latest(None, None, "unusable")  # disabled or destroyed (by hand): drift to repair
        return Latest(str(response.name), checked_bytes(response, what=what), "enabled")

    def access(self, version_name: str, deadline: Deadline) -> bytes | None:
        """A version's bytes; None when it is disabled, destroyed or absent."""
        try:
            response = self._calls.call(
                f"read {version_name}", deadline, self._client.access_secret_version, name=version_name
            )
        except (gexc.NotFound, gexc.FailedPrecondition):
            return None
        return bytes(response.payload.data)

    def newest_version_id(self, name: str, deadline: Deadline) -> int:
        """The newest version's number whatever its state (GetSecretVersion: read quota); 0 when none."""
        try:
            newest = self._calls.call(
                f"get {names.latest_of(name)}", deadline, self._client.get_secret_version, name=names.latest_of(name)
            )
        except (gexc.NotFound, gexc.FailedPrecondition):
            return 0
        return names.version_number(str(newest.name))

    def find_landed(self, name: str, data: bytes, base: int, deadline: Deadline) -> str | None:
        """After an ambiguous AddSecretVersion: the version above `base` holding `data`, if one landed."""
        newest = self.latest(name, deadline)
        held = newest.holding(data)
        if held and names.version_number(held) > base:
            return held
        top = names.version_number(newest.name) if newest.name else self.newest_version_id(name, deadline)
        for number in range(top - 1, max(base, top - 1 - MAX_SCAN), -1):
            candidate = names.version_name(name, number)
            if self.access(candidate, deadline) == data:
                return candidate
        return None

    def created_at(self, version_name: str, deadline: Deadline) -> int | None:
        """When a version was created (GetSecretVersion: read quota; only off steady state)."""
        try:
            version = self._calls.call(
                f"get {version_name}", deadline, self._client.get_secret_version, name=version_name
            )
        except (gexc.NotFound, gexc.FailedPrecondition, AdapterError):
            return None
        return unix_seconds(version.create_time)

    def verify(self, version_name: str, expected: bytes, deadline: Deadline) -> None:
        """Read the version back and compare bytes and checksum; raises TransientError on mismatch."""
        what = f"verify {version_name}"
        try:
            response = self._calls.call(what, deadline, self._client.access_secret_version, name=version_name)
        except (gexc.NotFound, gexc.FailedPrecondition) as exc:
            raise TransientError(
                f"{what}: {type(exc).__name__}", reason="VerificationFailed", service=SERVICE
            ) from None
        data = bytes(response.payload.data)
        if data != expected or not checksum_matches(data, response.payload.data_crc32c):
            raise TransientError(
                f"{what}: the stored bytes differ from what was written",
                reason="VerificationFailed",
                service=SERVICE,
            )
