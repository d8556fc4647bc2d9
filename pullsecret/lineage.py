"""Lineage of a cluster's pull secret: which credential per registry, since which version, what changed.

Pure. Carried by the adapter's own status `data.lineage` (read back on every event with the statuses)
and by one compact JSON annotation on the Kubernetes Secret; Secret Manager records none (a change costs
one write there). "Since" is the creation time of the version that introduced a credential, so every
delivery that points at the same version describes it identically. It holds registry names and
12-hex-digit fingerprints (SHA-256 of the canonical entry) only.
"""

from __future__ import annotations

import json
from typing import Any

MAX_ANNOTATION_CHARS = 8000  # the Kubernetes Secret's annotation (kubesecret.A_LINEAGE), sent with every apply


def version_id(version_name: str | None) -> str:
    return (version_name or "").rpartition("/")[2]


def decode(text: str | None) -> dict[str, Any]:
    """The recorded lineage, or {} when absent or unreadable (never raises)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


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
    out: dict[str, list[Any]] = {}
    for value in listed:
        if not isinstance(value, dict) or not isinstance(value.get("registry"), str):
            continue
        fingerprint, since_version = value.get("fingerprint"), value.get("since_version")
        if isinstance(fingerprint, str) and isinstance(since_version, str):
            out[value["registry"]] = [fingerprint, since_version, _epoch(value.get("since"))]
    version = reported.get("sm_version") or reported.get("secret_version") or ""
    return {
        "version": version_id(str(version)),
        "previous_version": reported.get("previous_version"),
        "added": list(reported.get("added") or []),
        "changed": list(reported.get("changed") or []),
        "removed": list(reported.get("removed") or []),
        "registries": out,
    }


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


def _epoch(text: Any) -> int | None:
    from datetime import UTC, datetime

    if not isinstance(text, str):
        return None
    try:
        return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())
    except ValueError:
        return None


def _rfc3339(epoch: Any) -> str | None:
    from datetime import UTC, datetime

    if not isinstance(epoch, int):
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
