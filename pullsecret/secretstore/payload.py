"""Secret Manager payloads: the crc32c checksum sent with every new version and checked on every read."""

from __future__ import annotations

from typing import Any

import google_crc32c

from pullsecret.errors import TransientError
from pullsecret.secretstore.calls import SERVICE


def checksum(data: bytes) -> int:
    """The crc32c Secret Manager keeps beside a version's bytes (data_crc32c)."""
    return int(google_crc32c.value(data))


def checksum_matches(data: bytes, crc32c: int | None) -> bool:
    """`data` matches the checksum that came with it (an answer without one is taken as it is)."""
    return not crc32c or checksum(data) == crc32c


def checked_bytes(response: Any, *, what: str) -> bytes:
    """An AccessSecretVersion answer's bytes; raises TransientError (DataCorrupted) when they fail their checksum."""
    data = bytes(response.payload.data)
    if not checksum_matches(data, response.payload.data_crc32c):
        raise TransientError(f"{what}: checksum mismatch in transit", reason="DataCorrupted", service=SERVICE)
    return data
