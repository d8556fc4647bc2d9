"""Lineage of a cluster's pull secret: which credential per registry, since which version, what changed.

Pure. Carried by the adapter's own status `data.lineage` (read back on every event with the statuses)
and by one compact JSON annotation on the Kubernetes Secret; Secret Manager records none (a change costs
one write there). "Since" is the creation time of the version that introduced a credential, so every
delivery that points at the same version describes it identically. It holds registry names and
12-hex-digit fingerprints (SHA-256 of the canonical entry) only.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Callable
from typing import Any

from pullsecret.model.names import version_id

__all__ = [
    "MAX_ANNOTATION_CHARS",
    "advance",
    "chosen",
    "decode",
    "describes",
    "encode",
    "from_report",
    "report",
    "valid",
    "version_id",
]

MAX_ANNOTATION_CHARS = 8000  # the Kubernetes Secret's annotation (kubesecret.A_LINEAGE), sent with every apply


# The schema of a lineage object (what `advance` builds). The annotation lives on a Secret others can edit and
# the status under a name others could report: nothing of either reaches our status unless it has this shape.
_VERSION = re.compile(r"^[1-9][0-9]{0,19}$")
_FINGERPRINT = re.compile(r"^[0-9A-Za-z]{1,64}$")  # 12 hex digits as written; never text with markup
_REGISTRY = re.compile(r"^[\x21-\x7e]{1,255}$")  # visible ASCII, as dockerconfig keys are printed
_MAX_REGISTRIES = 1000
_KEYS = {"version", "previous_version", "added", "changed", "removed", "registries"}


def valid(value: Any) -> dict[str, Any]:
    """`value` when it is a lineage object of the documented shape, else {} (never raises)."""
    if not isinstance(value, dict) or set(value) != _KEYS or not _valid_registries(value["registries"]):
        return {}
    # version "": a status that named no version (its registries still carry their "since")
    if not _valid_version(value["version"], empty=True) or not _valid_version(value["previous_version"], none=True):
        return {}
    return value if _valid_changes(value) else {}


def _valid_changes(value: dict[str, Any]) -> bool:
    """`added`, `changed`, `removed`: lists of registry names; the first two listed in `registries`, the last not."""
    lists = [value[key] for key in ("added", "changed", "removed")]
    if not all(isinstance(names, list) and len(names) <= _MAX_REGISTRIES for names in lists):
        return False
    if not all(isinstance(n, str) and _REGISTRY.fullmatch(n) for names in lists for n in names):
        return False
    added, changed, removed = (set(names) for names in lists)
    return added | changed <= set(value["registries"]) and not removed & set(value["registries"])


def _valid_version(version: Any, *, empty: bool = False, none: bool = False) -> bool:
    if version is None:
        return none
    return isinstance(version, str) and (bool(_VERSION.fullmatch(version)) or (empty and version == ""))


def _valid_registries(registries: Any) -> bool:
    """registry name -> [fingerprint, since_version, since (epoch seconds or None)]."""
    if not isinstance(registries, dict) or len(registries) > _MAX_REGISTRIES:
        return False
    for name, entry in registries.items():
        if not _REGISTRY.fullmatch(name) or not isinstance(entry, list) or len(entry) != 3:
            return False
        fingerprint, since_version, since = entry
        if not isinstance(fingerprint, str) or not _FINGERPRINT.fullmatch(fingerprint):
            return False
        if not isinstance(since_version, str) or not _VERSION.fullmatch(since_version):
            return False
        if since is not None and (isinstance(since, bool) or not isinstance(since, int) or not 0 <= since < 2**40):
            return False
    return True


def describes(recorded: dict[str, Any], *, fingerprints: dict[str, str]) -> bool:
    """Whether `recorded` names exactly these per-registry fingerprints (those computed from the content).

    A lineage read back from our status or the live Secret is believed for its version only when it does: a
    forged record naming the right version with other registries or fingerprints is not (never raises)."""
    registries = recorded.get("registries")
    if not isinstance(registries, dict) or set(registries) != set(fingerprints):
        return False
    return all(
        isinstance(entry, list) and entry and entry[0] == fingerprints[name] for name, entry in registries.items()
    )


def decode(text: str | None) -> dict[str, Any]:
    """The recorded lineage, or {} when absent, unreadable or not of the lineage schema (never raises)."""
    if not text or len(text) > MAX_ANNOTATION_CHARS:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return valid(value)


def advance(
    previous: dict[str, Any], *, fingerprints: dict[str, str], version_name: str, previous_version: str | None, now: int
) -> dict[str, Any]:
    """The lineage after writing `version_name` with these per-registry fingerprints."""
    before = previous.get("registries") if isinstance(previous.get("registries"), dict) else {}
    assert isinstance(before, dict)
    new_id = version_id(version_name)
    registries: dict[str, list[Any]] = {}
    for registry, fingerprint in sorted(fingerprints.items()):
        old = before.get(registry)
        if isinstance(old, list) and len(old) == 3 and old[0] == fingerprint:
            registries[registry] = old
        else:
            registries[registry] = [fingerprint, new_id, now]
    old_fps = {r: v[0] for r, v in before.items() if isinstance(v, list) and v}
    return {
        "version": new_id,
        "previous_version": version_id(previous_version) or None,
        "added": sorted(set(fingerprints) - set(old_fps)),
        "changed": sorted(r for r in fingerprints if r in old_fps and old_fps[r] != fingerprints[r]),
        "removed": sorted(set(old_fps) - set(fingerprints)),
        "registries": registries,
    }


def chosen(
    *,
    previous: dict[str, Any],
    live: dict[str, Any],
    fingerprints: dict[str, str],
    version_name: str,
    created: Callable[[], int],
) -> dict[str, Any]:
    """The lineage of the version the delivered copy points at (`version_name`): from our last status
    (`previous`), else the live copy's record, else advanced from the last status to this version ("since" =
    `created()`, the version's creation time, so every delivery pointing at it computes the same object and the
    delivered copy is written once).

    A record naming this version is believed only when its fingerprints are those computed from the content
    (`fingerprints`): one that names other registries or fingerprints is forged or stale and is dropped, so
    the lineage is recomputed rather than written through."""
    version = version_id(version_name)
    previous, live = (
        {} if known.get("version") == version and not describes(known, fingerprints=fingerprints) else known
        for known in (previous, live)
    )
    for known in (previous, live):
        if known and known.get("version") == version:
            return known
    return advance(
        previous or live,
        fingerprints=fingerprints,
        version_name=version_name,
        previous_version=(previous or live).get("version"),
        now=created(),
    )


def encode(lineage: dict[str, Any]) -> str | None:
    """Compact JSON for the annotation, or None when it would not fit (then no lineage is recorded)."""
    text = json.dumps(lineage, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= MAX_ANNOTATION_CHARS else None


def from_report(reported: Any) -> dict[str, Any]:
    """The lineage a status `data.lineage` object (see `report`) describes, or {} when it records none."""
    if not isinstance(reported, dict) or reported.get("recorded") is False:
        return {}
    listed = reported.get("registries")
    if isinstance(listed, dict):  # reports written before registries became a list
        listed = [{"registry": name, **value} for name, value in listed.items() if isinstance(value, dict)]
    if not isinstance(listed, list):
        return {}
    out = _registries_of(listed)
    version = reported.get("sm_version") or reported.get("secret_version") or ""
    return valid(
        {
            "version": version_id(str(version)),
            "previous_version": reported.get("previous_version"),
            "added": list(reported.get("added") or []),
            "changed": list(reported.get("changed") or []),
            "removed": list(reported.get("removed") or []),
            "registries": out,
        }
    )


def _registries_of(listed: list[Any]) -> dict[str, list[Any]]:
    """registry -> [fingerprint, since_version, since] of a report's registry list (unusable items left out)."""
    out: dict[str, list[Any]] = {}
    for value in listed:
        if not isinstance(value, dict) or not isinstance(value.get("registry"), str):
            continue
        fingerprint, since_version = value.get("fingerprint"), value.get("since_version")
        if isinstance(fingerprint, str) and isinstance(since_version, str):
            out[value["registry"]] = [fingerprint, since_version, _epoch(value.get("since"))]
    return out


def report(lineage: dict[str, Any], *, sm_version: str, kubernetes_resource_version: str | None) -> dict[str, Any]:
    """The status `data.lineage` object: per registry its fingerprint and the version/time since when.

    Registries are listed as values, never used as keys: the API's condition-mapping engine masks `data` keys
    that contain words such as `auth`, `private` or `cert`, which registry host names may well contain.
    """
    registries = lineage.get("registries") if isinstance(lineage.get("registries"), dict) else {}
    assert isinstance(registries, dict)
    out: dict[str, Any] = {
        "sm_version": sm_version,
        "kubernetes_resource_version": kubernetes_resource_version,
    }
    if not lineage:
        out["recorded"] = False
        return out
    out.update(
        previous_version=lineage.get("previous_version"),
        added=list(lineage.get("added") or []),
        changed=list(lineage.get("changed") or []),
        removed=list(lineage.get("removed") or []),
        registries=[
            {"registry": registry, "fingerprint": value[0], "since_version": value[1], "since": _rfc3339(value[2])}
            for registry, value in sorted(registries.items())
            if isinstance(value, list) and len(value) == 3
        ],
    )
    return out


_STAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z", re.ASCII)  # 0-9 only, as strptime


def _epoch(text: Any) -> int | None:
    """Unix seconds of "%Y-%m-%dT%H:%M:%SZ" (UTC); None when it is not one. The form `_rfc3339` writes is
    read without strptime (its parsing was a few % of a steady event's CPU); any other goes through it."""
    from datetime import UTC, datetime

    if not isinstance(text, str):
        return None
    try:
        match = _STAMP.fullmatch(text)
        if match is not None:
            year, month, day, hour, minute, second = (int(part) for part in match.groups())
            datetime(year, month, day, hour, minute, second, tzinfo=UTC)  # validates (ValueError as strptime)
            return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
        return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())
    except ValueError:
        return None


def _rfc3339(epoch: Any) -> str | None:
    if not isinstance(epoch, int):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
