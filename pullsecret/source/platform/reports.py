"""The platform source's part of the status reports: its own `data` keys (none) and its failure reasons (what
its registration declares).
"""

from __future__ import annotations

from typing import TypedDict


class PlatformData(TypedDict, total=False):
    """The platform source's own status `data` keys: none (one pull secret shared by every cluster)."""


# What a cluster's owner reads for this source's own failures (docs/contract.md's table).
REASONS = {
    "SourceNotFound": "The platform's registry credentials were not found; the platform team must restore them.",
    "SourceUnavailable": "The platform's registry credentials are unusable; the platform team must fix them.",
}
