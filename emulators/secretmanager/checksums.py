"""CRC32C (Castagnoli), the checksum Secret Manager uses for ``data_crc32c``: the C library, or a table."""

from __future__ import annotations

import importlib
from typing import Any


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()

_google_crc32c: Any
try:  # the C implementation when installed; the table fallback keeps the emulator self-contained
    _google_crc32c = importlib.import_module("google_crc32c")
except ImportError:  # pragma: no cover
    _google_crc32c = None


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli), the checksum Secret Manager uses for data_crc32c."""
    if _google_crc32c is not None:
        return int(_google_crc32c.value(data))
    return crc32c_pure(data)


def crc32c_pure(data: bytes) -> int:
    """Table-driven CRC32C; the fallback when google-crc32c is absent."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
