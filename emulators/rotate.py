"""`make rotate`: a rotation on the running playground, at whatever its pull secret comes from.

- `SOURCE=service` playground: the Pull Secret Service emulator starts a rotation of the cluster's credentials
  (its admin route `POST /pullsecretservice/clusters/{id}/rotation`: a new set minted, the old one still valid,
  the dual-credential period of the service's design record), then a wait of PULL_SECRET_SERVICE_TTL seconds (2 on
  the playground: how long the function keeps the service's answer); `--complete` (`COMPLETE=1`) ends it
  (`.../rotation/complete`: the old set deleted, the registry refuses it from then on).
- platform playground: the platform team's rotation, a new version of the platform pull secret in Secret Manager
  with a new credential for `cloud.openshift.com` (the entry verification skips), then a wait of
  PULL_SECRET_SOURCE_TTL seconds (2 on the playground) so that the next trigger sees it.

Either way the next `make trigger CLUSTER=...` stores one new version and writes the Kubernetes Secret once (in
external-secrets mode no Kubernetes write: External Secrets Operator copies the version).
Reads the running playground from `<state>/settings.json`; one line and exit 2 when none runs.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import requests

ROTATED = "cloud.openshift.com"


def rotate(cluster_id: str, *, state_dir: Path, complete: bool = False) -> int:
    record = _running(state_dir)
    if record is None:
        print(f"No playground is running from {state_dir} (no settings.json): run `make up` first.")
        return 2
    admin = str(record["emulators_admin"]).rstrip("/")
    delivered = delivery_text(str(record.get("delivery") or "direct"))
    if record.get("source") == "service":
        return _service(admin, record.get("settings") or {}, cluster_id, complete, delivered)
    if complete:
        print("COMPLETE=1 is for a rotation at the Pull Secret Service (a `SOURCE=service make up` playground).")
        return 2
    return _platform(admin, record.get("settings") or {}, cluster_id, delivered)


def delivery_text(delivery: str) -> str:
    """What the next trigger does on the management cluster, in this delivery mode."""
    if delivery == "external-secrets":
        return "no Kubernetes write: External Secrets Operator copies the new version"
    return "the Kubernetes Secret written once"


def _running(state_dir: Path) -> dict[str, Any] | None:
    from emulators.playground_lock import holder

    path = state_dir / "settings.json"
    if holder(state_dir) is None or not path.exists():
        return None
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def _service(admin: str, settings: dict[str, str], cluster_id: str, complete: bool, delivered: str) -> int:
    step = "rotation/complete" if complete else "rotation"
    answer = requests.post(f"{admin}/pullsecretservice/clusters/{cluster_id}/{step}", json={}, timeout=30)
    if answer.status_code == 404:
        print(
            f"The Pull Secret Service holds no credentials for {cluster_id} yet: the function's first reconcile "
            f"generates them; make trigger CLUSTER={cluster_id} first."
        )
        return 1
    if answer.status_code != 200:
        print(f"The Pull Secret Service refused ({answer.status_code}): {answer.text[:200]}")
        return 1
    if complete:
        print(f"Completed the rotation of {cluster_id}'s credentials: the old set is deleted; the registry refuses it.")
        return 0
    body = answer.json()
    print(
        f"Started rotation {body.get('rotation_id', '?')} of {cluster_id}'s credentials at the Pull Secret Service "
        f"({body.get('status', '?')}): a new set minted, the old one still valid."
    )
    ttl = float(settings.get("PULL_SECRET_SERVICE_TTL") or 21600)
    if ttl <= 60:
        print(f"Waiting {ttl:g} s (PULL_SECRET_SERVICE_TTL: how long the function keeps the service's answer) ...")
        time.sleep(ttl)
    else:
        print(f"(PULL_SECRET_SERVICE_TTL is {ttl:g} s: the function asks the service again only after it, or on rekey)")
    print(f"Next: make trigger CLUSTER={cluster_id}   (stores the new set: one new version, {delivered})")
    print(f"Then: make rotate CLUSTER={cluster_id} COMPLETE=1   (ends the rotation: the old set is deleted)")
    return 0


def _platform(admin: str, settings: dict[str, str], cluster_id: str, delivered: str) -> int:
    secret = settings.get("PULL_SECRET_SOURCE", "").rsplit("/versions/", 1)[0]
    url = f"{admin}/secretmanager/{secret}"
    versions = requests.get(url, timeout=30).json()["versions"]
    content = json.loads(base64.b64decode(versions[-1]["payload_b64"]))
    credential = f"telemetry:rotated-{len(versions) + 1}".encode()
    content["auths"][ROTATED] = {"auth": base64.b64encode(credential).decode()}
    payload = base64.b64encode(json.dumps(content).encode()).decode()
    added = requests.post(f"{url}/versions", json={"payload": payload}, timeout=30)
    if added.status_code != 200:
        print(f"Secret Manager refused the new version ({added.status_code}): {added.text[:200]}")
        return 1
    print(f"Added version {len(versions) + 1} to {secret}: a new credential for {ROTATED} (the platform's rotation).")
    ttl = float(settings.get("PULL_SECRET_SOURCE_TTL") or 30)
    print(f"Waiting {ttl:g} s (PULL_SECRET_SOURCE_TTL: how long the function caches the platform pull secret) ...")
    time.sleep(ttl)
    print(f"Next: make trigger CLUSTER={cluster_id}   (one new version, {delivered})")
    return 0
