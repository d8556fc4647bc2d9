"""The service source's fetch: what it tells the reconcile it wrote, and that a dry run never asks for a POST.

The client here is an in-memory Pull Secret Service (GET answers what it holds, POST generates or retrieves, as
DDR §3.2 says); what is asserted is what the service holds afterwards and the fetch's `wrote`.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pullsecret.model import dockerconfig
from pullsecret.model.preconditions import Act, Placement
from pullsecret.retrying import Deadline
from pullsecret.source.base import WouldCreate
from pullsecret.source.service.api import ServiceAnswer
from pullsecret.source.service.source import ServiceSource

CID = "cls-fetch000001"
ACT = Act(1, "hf-project", Placement("mc-1", "ns-1"), None, region="us-central1")


class Service:
    """GET: what it holds or None (404 NTF-001); POST: generate or retrieve."""

    def __init__(self, held: int = 0) -> None:
        self.held = held  # serial of the cluster's credentials, 0: none

    def _answer(self) -> ServiceAnswer:
        entry = {"auth": base64.b64encode(f"robot{self.held}:token".encode()).decode()}
        return ServiceAnswer(CID, dockerconfig.parse({"auths": {"quay.io": entry}}, source="test"))

    def get(self, cluster_id: str, *_: Any) -> ServiceAnswer | None:
        return self._answer() if self.held else None

    def generate(self, cluster_id: str, **_: Any) -> ServiceAnswer:
        self.held = self.held or 1
        return self._answer()


def _fetch(service: Service, *, first: bool) -> Any:
    source = ServiceSource(service, ("quay.io",))  # type: ignore[arg-type]
    return source.start(CID, Deadline(5), first=first)


@pytest.mark.parametrize("first", [True, False])
def test_a_fetch_that_had_credentials_minted_says_it_wrote(first: bool) -> None:
    service = Service()
    fetch = _fetch(service, first=first)
    fetch.pull_secret(ACT, Deadline(5))
    assert service.held == 1
    assert fetch.wrote  # L1 of pullsecret.reconcile.finalize: the reconcile reads the cluster again


def test_a_fetch_that_only_read_did_not_write() -> None:
    fetch = _fetch(Service(held=3), first=False)
    fetch.pull_secret(ACT, Deadline(5))
    assert not fetch.wrote


@pytest.mark.parametrize("first", [True, False])
def test_a_dry_run_never_mints_first_provisioning_or_not(first: bool) -> None:
    service = Service()
    fetch = _fetch(service, first=first)
    with pytest.raises(WouldCreate, match="would have them minted"):
        fetch.pull_secret(ACT, Deadline(5), create=False)
    assert service.held == 0
    assert not fetch.wrote
