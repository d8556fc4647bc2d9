"""In-memory Pull Secret Service (DDR §3.2) and its client: GET answers what it holds or 404; POST generates or
retrieves (idempotent); DELETE revokes (404 counts as done); a rotation (the service's own, or asked by `rekey`:
POST .../rotations) replaces the credentials of a cluster it holds, and answers {} for one it does not hold. Every
answer describes its credentials (a fingerprint of the username, no creation time: the service did not say). Every
call is a scheduling point of the current `Run`."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from pullsecret.model import dockerconfig
from pullsecret.source.service.api import NOT_FOUND, Credential, ServiceAnswer
from tests.fakes.scheduler import Run


def document(serial: int) -> dockerconfig.PullSecret:
    auth = f"robot{serial}:token{serial}"
    entry = {"auth": base64.b64encode(auth.encode()).decode()}
    return dockerconfig.parse({"auths": {"quay.io": entry}}, source="test")


@dataclass
class Service:
    """The Pull Secret Service client (get, generate, delete) and the service's own rotation."""

    run: Run
    held: dict[str, int] = field(default_factory=dict)  # cluster id -> the serial of its live credential
    minted: int = 0

    def _answer(self, cluster_id: str) -> ServiceAnswer:
        serial = self.held[cluster_id]
        username = hashlib.sha256(f"robot{serial}".encode()).hexdigest()[:12]
        return ServiceAnswer(
            cluster_id=cluster_id,
            pull_secret=document(serial),
            credentials=(Credential("quay.io", username, None),),
        )

    def get(self, cluster_id: str, *_: Any, **__: Any) -> ServiceAnswer | None:
        self.run.point(f"service GET {cluster_id}")
        return self._answer(cluster_id) if cluster_id in self.held else None

    def generate(self, cluster_id: str, *_: Any, **__: Any) -> ServiceAnswer:
        self.run.point(f"service POST {cluster_id}")
        if cluster_id not in self.held:
            self.minted += 1
            self.held[cluster_id] = self.minted
        return self._answer(cluster_id)

    def delete(self, cluster_id: str, *_: Any, **__: Any) -> bool:
        self.run.point(f"service DELETE {cluster_id}")
        return self.held.pop(cluster_id, None) is not None

    def rotate(self, cluster_id: str, *, reason: str = "scheduled", force_immediate: bool = False) -> dict[str, str]:
        self.run.point(f"service rotation {cluster_id}")
        if cluster_id not in self.held:
            return {}
        self.minted += 1
        self.held[cluster_id] = self.minted
        return {"rotation_id": f"rot-{self.minted}", "status": "completed"}

    def probe(self, cluster_id: str) -> tuple[int, str | None]:
        """The doctor's GET of a cluster id that cannot exist."""
        self.run.point(f"service GET {cluster_id}")
        return (200, None) if cluster_id in self.held else (404, NOT_FOUND)
