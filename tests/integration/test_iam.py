"""IAM equals behaviour: the stack grants the runtime identity exactly what terraform/ grants, and the function
works within it.

The grants are read from the HCL (emulators/iam_terraform.py) and enforced per method by the Secret Manager
and GKE emulators (emulators/iam.py), so every integration test also checks that Terraform allows what the
code calls. The tests here pin the paths that only run after drift, and the edges of the grants.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud.secretmanager_v1 import types as smtypes

from emulators.world import PROJECT_ID, PROJECT_NUMBER, RUNTIME_SA
from pullsecret import configured
from pullsecret.gke.api import GkeClusters
from pullsecret.handler import Adapter
from pullsecret.identity.google import RuntimeIdentity, secret_manager_client
from tests.support import PLATFORM_SOURCE_SECRET, Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster
from tests.support import sentinel_event as event

CID = "cls-iam01"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
SECRET = f"projects/{PROJECT_ID}/secrets/{SECRET_ID}"


def deliver(adapter: Adapter) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(event(CID)))


@pytest.fixture
def runtime(function_env: dict[str, str]) -> tuple[Any, Any]:
    """Secret Manager and GKE clients carrying the runtime identity's token, as the function builds them."""
    identity = RuntimeIdentity()
    return (
        secret_manager_client(identity, function_env["SECRET_MANAGER_EMULATOR_HOST"]),
        GkeClusters(identity, function_env["GKE_EMULATOR_HOST"]),
    )


def test_the_stack_enforces_terraforms_grants(world: Any) -> None:
    addresses = {g.address for g in world.grants}
    assert 'google_project_iam_member.runtime_secret_manager_managed["hf-demo-project"]' in addresses
    assert "google_secret_manager_secret_iam_member.runtime_pull_secret_source[0]" in addresses
    assert {b["member"] for b in world.secretmanager.state()["iam"]} == {RUNTIME_SA}
    assert {b["member"] for b in world.gke.state()["iam"]} == {RUNTIME_SA}


@pytest.mark.parametrize("how", ["disable", "destroy"])
def test_repair_of_a_newest_version_disabled_by_hand_runs_within_terraforms_grants(
    function_env: dict[str, str], runtime: tuple[Any, Any], admin: Admin, world: Any, how: str
) -> None:
    """Defect 3 of issue 10: the repair reads versions/latest's metadata (GetSecretVersion)."""
    seed_ready_cluster(admin, CID)
    assert deliver(Adapter.from_environment()).result == "applied"
    sm, _gke = runtime
    getattr(sm, f"{how}_secret_version")(name=f"{SECRET}/versions/1")
    admin.call("DELETE", "/calls")

    outcome = deliver(Adapter.from_environment())

    assert outcome.result == "applied", outcome
    assert admin.calls()["secretmanager"].get("GetSecretVersion") == 1  # the repair path did run
    assert [v["state"] for v in world.secretmanager.versions(PROJECT_ID, SECRET_ID)][-1] == "ENABLED"
    report = [r for r in admin.reports() if r.get("cluster_id") == CID][-1]
    assert report["body"]["data"]["repaired"] == "secret_manager_version"


def test_secret_manager_denies_what_terraform_does_not_grant(runtime: tuple[Any, Any], world: Any) -> None:
    sm, _gke = runtime
    # Granted: the function's own secrets (the ids SECRET_ID_TEMPLATE makes) and create on the project.
    sm.create_secret(
        parent=f"projects/{PROJECT_ID}",
        secret_id=SECRET_ID,
        secret=smtypes.Secret(replication=smtypes.Replication(automatic=smtypes.Replication.Automatic())),
    )
    sm.add_secret_version(parent=SECRET, payload=smtypes.SecretPayload(data=b"x"))
    assert sm.get_secret_version(name=f"{SECRET}/versions/latest").name.endswith("/versions/1")
    with pytest.raises(gexc.NotFound):  # allowed, so the caller may learn that it does not exist
        sm.get_secret(name=f"projects/{PROJECT_ID}/secrets/hyperfleet-cls-missing-pull-secret", retry=None)
    # The platform pull secret: payload only (roles/secretmanager.secretAccessor on that secret).
    world.secretmanager.seed_secret(PROJECT_ID, PLATFORM_SOURCE_SECRET, payloads=[b"{}"])
    world.secretmanager.seed_secret(PROJECT_ID, "hyperfleet-api-token", payloads=[b"token"])
    assert sm.access_secret_version(name=f"projects/{PROJECT_ID}/secrets/{PLATFORM_SOURCE_SECRET}/versions/latest")
    denied = [
        lambda: sm.get_secret(name=f"projects/{PROJECT_ID}/secrets/{PLATFORM_SOURCE_SECRET}", retry=None),
        lambda: sm.get_secret(name=f"projects/{PROJECT_ID}/secrets/someone-elses", retry=None),
        # Under the hyperfleet- prefix but not a name the template makes (issue 10, defect 4): the function may
        # read its own token (secretAccessor), never add to, disable or destroy it.
        lambda: sm.add_secret_version(
            parent=f"projects/{PROJECT_ID}/secrets/hyperfleet-api-token",
            payload=smtypes.SecretPayload(data=b"x"),
            retry=None,
        ),
        lambda: sm.destroy_secret_version(
            name=f"projects/{PROJECT_ID}/secrets/hyperfleet-api-token/versions/1", retry=None
        ),
        lambda: sm.list_secrets(parent=f"projects/{PROJECT_ID}", retry=None),
        lambda: sm.enable_secret_version(name=f"{SECRET}/versions/1", retry=None),
        lambda: sm.create_secret(
            parent="projects/customer-project",
            secret_id=SECRET_ID,
            secret=smtypes.Secret(replication=smtypes.Replication(automatic=smtypes.Replication.Automatic())),
            retry=None,
        ),
    ]
    for call in denied:
        with pytest.raises(gexc.PermissionDenied, match=r"Permission 'secretmanager\."):
            call()


def test_secret_metadata_updates_are_granted_on_the_rotation_progress_record_only(
    function_env: dict[str, str], runtime: tuple[Any, Any], world: Any
) -> None:
    """secretmanager.secrets.update (labels, annotations, topics, ...) is the record keeper's, on one name."""
    from pullsecret.source.platform.rotation import progress_secret_id

    sm, _gke = runtime
    record = f"projects/{PROJECT_ID}/secrets/{progress_secret_id(configured.load(function_env))}"
    world.secretmanager.seed_secret(PROJECT_ID, record.rsplit("/", 1)[-1], payloads=[])
    world.secretmanager.seed_secret(PROJECT_ID, SECRET_ID, payloads=[b"x"])
    mask = {"paths": ["annotations"]}
    etag = sm.get_secret(name=record).etag
    updated = sm.update_secret(secret=smtypes.Secret(name=record, annotations={"a": "1"}, etag=etag), update_mask=mask)
    assert dict(updated.annotations) == {"a": "1"}
    # A cluster's secret: readable (its ownership label), never changed by metadata.
    assert sm.get_secret(name=SECRET).name.endswith(f"/secrets/{SECRET_ID}")
    for secret in (SECRET, f"projects/{PROJECT_ID}/secrets/{PLATFORM_SOURCE_SECRET}"):
        with pytest.raises(gexc.PermissionDenied, match=r"Permission 'secretmanager\.secrets\.update'"):
            sm.update_secret(secret=smtypes.Secret(name=secret, annotations={"a": "1"}), update_mask=mask, retry=None)
    labels = {"paths": ["labels"]}
    with pytest.raises(gexc.PermissionDenied, match=r"Permission 'secretmanager\.secrets\.update'"):
        sm.update_secret(secret=smtypes.Secret(name=SECRET, labels={"managed-by": "x"}), update_mask=labels, retry=None)


def test_gke_denies_clusters_outside_the_granted_projects(runtime: tuple[Any, Any], world: Any) -> None:
    _sm, gke = runtime
    assert gke.get_cluster(f"projects/{PROJECT_ID}/locations/us-central1/clusters/mgmt-1", timeout=10).endpoint
    world.gke.add_cluster(
        "projects/other-mgmt/locations/us-central1/clusters/mgmt-9",
        endpoint="127.0.0.1:1",
        ca_pem=world.kubernetes.ca_pem,
    )
    with pytest.raises(gexc.PermissionDenied, match=r"container\.clusters\.get"):
        gke.get_cluster("projects/other-mgmt/locations/us-central1/clusters/mgmt-9", timeout=10)


def test_grants_follow_the_terraform_variables(runtime: tuple[Any, Any], world: Any) -> None:
    sm, _gke = runtime
    world.secretmanager.seed_secret(PROJECT_ID, SECRET_ID, payloads=[b"x"])
    world.apply_terraform_iam(deletion_policy="DISABLE")  # secrets.delete is granted only for DELETE
    with pytest.raises(gexc.PermissionDenied, match=r"secretmanager\.secrets\.delete"):
        sm.delete_secret(name=SECRET, retry=None)
    world.apply_terraform_iam()
    sm.delete_secret(name=SECRET)
    assert world.secretmanager.secret(PROJECT_NUMBER, SECRET_ID) is None
