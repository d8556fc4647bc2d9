"""What other components report, or write where they may, tries to steer the adapter: a placement naming a GKE
cluster of someone else's project (who granted the runtime identity clusterViewer and installed our policy there),
a status under our name claiming a generation the cluster never had, a lineage annotation of someone's making on
the live Secret. None decides where the platform's credentials go or what our status says."""

from __future__ import annotations

import json
from typing import Any

from emulators.world import RUNTIME_SA
from tests.reliability import campaign, harness

SECRET_MANAGER_WRITES = {"CreateSecret", "AddSecretVersion", "UpdateSecret", "DisableSecretVersion"}
ATTACKER = "projects/attacker-project/locations/us-central1/clusters/evil"


def _conditions(world: Any, cid: str) -> dict[str, dict[str, Any]]:
    mine = world.hyperfleet.state()["statuses"][cid]["pullsecret"]
    return {c["type"]: c for c in mine["conditions"]}


def test_a_placement_naming_a_cluster_outside_the_allowlist_gets_nothing(adapter_factory: Any, world: Any) -> None:
    # The attacker's cluster is a real, reachable GKE cluster with our policy and namespace (the emulated one),
    # in a project of theirs where they granted the runtime identity clusterViewer.
    world.gke.add_project("attacker-project", 666666666666)
    world.gke.bind(RUNTIME_SA, "roles/container.clusterViewer", "projects/attacker-project")
    world.gke.add_cluster(ATTACKER, endpoint=world.kubernetes.address, ca_pem=world.kubernetes.ca_pem)
    adapter = adapter_factory()  # ALLOWED_MANAGEMENT_CLUSTERS=projects/hf-demo-project/locations/*/clusters/*
    names = [
        ATTACKER,
        "projects/hf-demo-project-evil/locations/us-central1/clusters/mgmt-1",  # `*` stays inside one segment
        "projects/hf-demo-project/locations/us-central1/clusters/mgmt-1/x",
    ]
    for i, name in enumerate(names):
        cid = f"cls-hostile-place{i}"
        campaign.seed_generation(world, cid, 1)
        world.hyperfleet.seed_status(cid, "placement", {"observed_generation": 1, "data": {"managementCluster": name}})
        world.book.reset_counters()
        result = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result
        harness.count("cases tried")
        assert result == "terminal", (name, result)
        available = _conditions(world, cid)["Available"]
        assert available["status"] == "False"
        assert available["reason"] in ("ForbiddenManagementCluster", "InvalidPlacement"), available
        calls = world.book.calls()
        assert not SECRET_MANAGER_WRITES & set(calls.get("secretmanager", {})), calls
        assert "GetCluster" not in calls.get("gke", {}) and not calls.get("kubernetes"), calls
        assert world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret") is None
    assert _conditions(world, "cls-hostile-place0")["Available"]["reason"] == "ForbiddenManagementCluster"


def test_a_forged_status_claiming_a_future_generation_blocks_nothing(
    adapter_factory: Any, world: Any, capfd: Any
) -> None:
    adapter = adapter_factory()
    cid = "cls-hostile-future"
    campaign.seed_generation(world, cid, 1)
    world.hyperfleet.seed_status(cid, "pullsecret", {"observed_generation": 999_999, "data": {}})
    result = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result
    harness.count("cases tried")
    assert result == "applied"
    assert world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret") is not None
    out, _ = capfd.readouterr()
    assert "claims generation 999999" in out


def test_a_forged_lineage_annotation_never_reaches_the_status(adapter_factory: Any, world: Any) -> None:
    adapter = adapter_factory()
    cid = "cls-hostile-lineage"
    campaign.seed_generation(world, cid, 1)
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    ns, name = f"clusters-{cid}", f"{cid}-pull-secret"
    live = world.kubernetes.get_secret(ns, name)
    version = live["metadata"]["annotations"]["hyperfleet.io/gcp-secret-path"].rsplit("/", 1)[-1]
    forged = [
        {  # right version, wrong shape: a fingerprint that is no fingerprint, a name with spaces
            "version": version,
            "previous_version": None,
            "added": ["forged registry"],
            "changed": [],
            "removed": [],
            "registries": {"forged registry": ["not-a-fingerprint", version, 0]},
        },
        {"version": version, "registries": {}, "note": "x" * 500},  # keys outside the schema
        {"version": version, "previous_version": {"nested": True}, "added": [], "changed": [], "removed": []},
    ]
    for n, lineage in enumerate(forged):
        live = world.kubernetes.get_secret(ns, name)
        live["metadata"]["annotations"]["hyperfleet.io/lineage"] = json.dumps(lineage)
        world.kubernetes.put_secret(live)
        # Our status without lineage: the live annotation is the only record this event could take.
        world.hyperfleet.seed_status(cid, "pullsecret", {"observed_generation": 1, "data": {}})
        campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1))
        harness.count("cases tried")
        reported = world.hyperfleet.state()["statuses"][cid]["pullsecret"]["data"].get("lineage", {})
        text = json.dumps(reported)
        assert "forged" not in text and "not-a-fingerprint" not in text and "nested" not in text, (n, reported)
        assert "x" * 100 not in text


def test_a_forged_status_lineage_naming_the_version_with_other_fingerprints_is_recomputed(
    adapter_factory: Any, world: Any
) -> None:
    adapter = adapter_factory()
    cid = "cls-hostile-status-lineage"
    campaign.seed_generation(world, cid, 1)
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    ns, name = f"clusters-{cid}", f"{cid}-pull-secret"
    genuine = world.hyperfleet.state()["statuses"][cid]["pullsecret"]["data"]["lineage"]
    truth = {r["registry"]: r["fingerprint"] for r in genuine["registries"]}
    assert truth
    annotation = world.kubernetes.get_secret(ns, name)["metadata"]["annotations"]["hyperfleet.io/lineage"]
    forgeries = [
        # the right version, well-formed, every fingerprint someone else's
        [{**r, "fingerprint": "aaaaaaaaaaaa"} for r in genuine["registries"]],
        # the right version, one registry the content does not hold
        [*genuine["registries"], {**genuine["registries"][0], "registry": "forged.example.com"}],
        # the right version, one registry of the content left out
        genuine["registries"][1:],
    ]
    for n, registries in enumerate(forgeries):
        world.hyperfleet.seed_status(
            cid, "pullsecret", {"observed_generation": 1, "data": {"lineage": {**genuine, "registries": registries}}}
        )
        campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1))
        harness.count("cases tried")
        reported = world.hyperfleet.state()["statuses"][cid]["pullsecret"]["data"]["lineage"]
        assert {r["registry"]: r["fingerprint"] for r in reported["registries"]} == truth, (n, reported)
        live = world.kubernetes.get_secret(ns, name)["metadata"]["annotations"]["hyperfleet.io/lineage"]
        assert live == annotation, n
