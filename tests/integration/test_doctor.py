"""The preflight (`python -m pullsecret doctor`) against the emulator stack: green with Terraform's grants, and for
each grant taken away one at a time, red with the fix that names it."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pullsecret.operator import cli
from tests.integration.doctor_report import MANAGED, doctor, failed_checks, rebind_without
from tests.support import SENSITIVE, Admin, seed_ready_cluster

CID = "cls-doctor1"
pytestmark = pytest.mark.usefixtures("restored_log")  # cli.main's logger settings put back after each test
ROOT = Path(__file__).resolve().parent.parent.parent


# -- every delivery mode x authentication mode to the HyperFleet API, with what Terraform grants in it ----------
PROJECT = "hf-demo-project"
ESO_TEMPLATE = (
    f"principal://iam.googleapis.com/projects/{{number}}/locations/global/workloadIdentityPools/"
    f"{PROJECT}.svc.id.goog/subject/ns/{{{{namespace}}}}/sa/hyperfleet-pull-secret-reader"
)
MODES = (
    "direct/token-file",
    "direct/google-id-token",
    "external-secrets/token-file",
    "external-secrets/google-id-token",
)


@pytest.fixture(params=MODES)
def mode(
    request: pytest.FixtureRequest, function_env: dict[str, str], world: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The function's environment and Terraform's grants for one delivery mode and one authentication mode."""
    from emulators.world import PROJECT_NUMBER

    delivery, auth = str(request.param).split("/")
    variables: dict[str, str] = {"kubernetes_delivery": delivery}
    if delivery == "external-secrets":
        monkeypatch.setenv("KUBERNETES_DELIVERY", delivery)
        monkeypatch.setenv("EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE", ESO_TEMPLATE.format(number=PROJECT_NUMBER))
    if auth == "google-id-token":
        monkeypatch.delenv("HYPERFLEET_API_TOKEN_FILE")
        monkeypatch.setenv("HYPERFLEET_API_AUTH", auth)
        world.hyperfleet.token = "hf-opaque-token-nobody-presents"  # only the runtime account's ID token is admitted
        variables.update(hyperfleet_api_auth=auth, hyperfleet_api_token_secret="")
    world.apply_terraform_iam(**variables)
    yield str(request.param)
    world.apply_terraform_iam()


def test_green_on_the_stack(mode: str, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    assert cli.main(["reconcile", CID, "--quiet"]) == 0
    admin.call("DELETE", "/calls")
    code, text = doctor()
    print(text)
    assert code == 0, text
    checks = {line.split()[1] for line in text.splitlines() if line.startswith("ok")}
    assert "hyperfleet-api" in checks and "secret-manager.covered" in checks, text
    if mode.startswith("external-secrets"):
        # The one grant that mode needs is asked; no cluster is reached (GKE, RBAC, admission policy).
        assert "secret-manager.iam-policy" in checks and not any(c.startswith(("gke", "kubernetes.")) for c in checks)
        calls = admin.calls()
        assert not calls.get("gke") and not calls.get("kubernetes"), calls
    else:
        assert {"gke", "kubernetes.rbac", "kubernetes.policy"} <= checks, text
    if mode.endswith("google-id-token"):
        from emulators.world import RUNTIME_SA

        assert set(world.hyperfleet.identities) == {RUNTIME_SA}  # the doctor called as the runtime account


# -- each grant taken away, one at a time ------------------------------------------------------------
VIEWER = 'google_project_iam_member.runtime_cluster_viewer["hf-demo-project"]'
SOURCE = "google_secret_manager_secret_iam_member.runtime_pull_secret_source[0]"
CREATOR = 'google_project_iam_member.runtime_secret_manager_creator["hf-demo-project"]'
# (grant, permission) -> (the failed check, what its fix must name)
IAM_REMOVALS: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    **{
        (MANAGED, p): ("secret-manager.covered", (p, "hyperfleetPullSecretManager", "gcloud iam roles update"))
        for p in (
            "secretmanager.secrets.get",
            "secretmanager.secrets.delete",
            "secretmanager.versions.add",
            "secretmanager.versions.access",
            "secretmanager.versions.get",
            "secretmanager.versions.list",
            "secretmanager.versions.destroy",
            "secretmanager.versions.disable",
        )
    },
    (CREATOR, "secretmanager.secrets.create"): (
        "secret-manager.create",
        ("hyperfleetPullSecretCreator", "--condition None", "gcloud projects add-iam-policy-binding hf-demo-project"),
    ),
    (SOURCE, "secretmanager.versions.access"): (
        "pull-secret-source",
        ("roles/secretmanager.secretAccessor", "gcloud secrets add-iam-policy-binding platform-pull-secret"),
    ),
    (VIEWER, "container.clusters.get"): (
        "gke",
        ("roles/container.clusterViewer", "gcloud projects add-iam-policy-binding hf-demo-project"),
    ),
}
# What the doctor does not ask, and why (every other permission Terraform grants the runtime identity is above).
NOT_ASKED = {
    # Cloud Run reads the token secret to mount it when an instance starts; the function never calls for it.
    ("google_secret_manager_secret_iam_member.runtime_hyperfleet_token[0]", "secretmanager.versions.access"),
    # secrets.update on the rotation progress record alone: the record exists only once a rotation has run, and
    # TestIamPermissions on a missing secret answers nothing (iam_policy.proto), so a fresh deployment could not pass.
    (
        'google_project_iam_member.runtime_secret_manager_record_keeper["hf-demo-project"]',
        "secretmanager.secrets.update",
    ),
    # roles/container.clusterViewer's other permissions: the adapter calls GetCluster only.
    (VIEWER, "container.clusters.list"),
    (VIEWER, "resourcemanager.projects.get"),
    (VIEWER, "resourcemanager.projects.list"),
}


POLICY_PERMISSIONS = ("secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy")


def removals(mode: str) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    """IAM_REMOVALS for MODE: external-secrets has no clusterViewer and adds the allow policy's permissions."""
    if not mode.startswith("external-secrets"):
        return dict(IAM_REMOVALS)
    found = {k: v for k, v in IAM_REMOVALS.items() if k[0] != VIEWER}
    for permission in POLICY_PERMISSIONS:
        found[(MANAGED, permission)] = ("secret-manager.iam-policy", (permission, "terraform apply"))
    return found


def not_asked(mode: str) -> set[tuple[str, str]]:
    """NOT_ASKED for MODE: google-id-token mounts no token secret, external-secrets grants no clusterViewer."""
    found = set(NOT_ASKED)
    if mode.endswith("google-id-token"):
        found = {k for k in found if "runtime_hyperfleet_token" not in k[0]}
    if mode.startswith("external-secrets"):
        found = {k for k in found if k[0] != VIEWER}
    return found


def test_every_permission_terraform_grants_is_asked_or_said_why_not(mode: str, world: Any) -> None:
    granted = {(g.address, p) for g in world.grants for p in g.permissions}
    assert granted == set(removals(mode)) | not_asked(mode)


@pytest.mark.parametrize(
    ("mode", "address", "permission"),
    [(m, a, p) for m in MODES for a, p in sorted(removals(m))],
    indirect=["mode"],
)
def test_each_iam_permission_removed_names_its_fix(
    mode: str, admin: Admin, world: Any, address: str, permission: str
) -> None:
    seed_ready_cluster(admin, CID)
    assert cli.main(["reconcile", CID, "--quiet"]) == 0  # a cluster's secret exists: TestIamPermissions answers
    rebind_without(world, address, permission)
    code, text = doctor()
    check, named = removals(mode)[(address, permission)]
    failed = failed_checks(text)
    assert code == 1 and list(failed) == [check], text
    for words in named:
        assert words in failed[check], text


# -- the management cluster's RBAC and admission policy, and a Secret Manager grant too wide ---------------
def _cluster_role(world: Any, edit: Any) -> None:
    from emulators.kubernetes.manifests import render
    from emulators.world import RUNTIME_SA

    role = next(d for d in render(RUNTIME_SA) if d["kind"] == "ClusterRole")
    edit(role["rules"])
    world.kubernetes.put_rbac(role)


def _without_verb(verb: str) -> Any:
    return lambda world: _cluster_role(world, lambda rules: rules[0]["verbs"].remove(verb))


def _reading(verb: str) -> Any:
    def grant(world: Any) -> None:
        from emulators.world import RUNTIME_SA

        world.kubernetes.grant(
            RUNTIME_SA, namespace=f"clusters-{CID}", verbs=[verb], resources=["secrets"], api_groups=[""]
        )

    return grant


def _old_policy(world: Any) -> None:
    from emulators.kubernetes.manifests import render
    from emulators.world import RUNTIME_SA

    policy = next(d for d in render(RUNTIME_SA) if d["kind"] == "ValidatingAdmissionPolicy")
    policy["metadata"]["annotations"]["hyperfleet.io/policy-revision"] = "2"
    world.kubernetes.put_policy(policy)


def _unconditioned(world: Any) -> None:
    from emulators.world import RUNTIME_SA

    world.secretmanager.bind(RUNTIME_SA, "roles/secretmanager.secretAccessor", "projects/hf-demo-project")
    world.secretmanager.bind(
        RUNTIME_SA, "roles/custom", "projects/hf-demo-project", permissions=frozenset({"secretmanager.secrets.get"})
    )


MANIFESTS = "terraform output -raw kubernetes_manifests | kubectl apply -f -"
OTHER_REMOVALS: dict[str, tuple[Any, str, tuple[str, ...]]] = {
    **{
        f"rbac-no-{verb}": (_without_verb(verb), "kubernetes.rbac", (f"{verb} denied", f"allow {verb}", MANIFESTS))
        for verb in ("create", "patch", "delete")
    },
    **{
        f"rbac-may-{verb}": (_reading(verb), "kubernetes.rbac", (f"{verb} allowed", f"must not {verb}", "rolebindings"))
        for verb in ("get", "list", "watch")
    },
    "rbac-no-policy-get": (
        lambda world: _cluster_role(world, lambda rules: rules.pop(1)),
        "kubernetes.policy",
        ("may not be read by", MANIFESTS),
    ),
    "policy-missing": (
        lambda world: world.kubernetes.delete_policy(
            "ValidatingAdmissionPolicy", "hyperfleet-pullsecret-adapter-scope"
        ),
        "kubernetes.policy",
        ("is not installed", MANIFESTS),
    ),
    "binding-missing": (
        lambda world: world.kubernetes.delete_policy(
            "ValidatingAdmissionPolicyBinding", "hyperfleet-pullsecret-adapter-scope"
        ),
        "kubernetes.policy",
        ("ValidatingAdmissionPolicyBinding", "is not installed", MANIFESTS),
    ),
    "policy-older-revision": (_old_policy, "kubernetes.policy", ("revision 2 is older", MANIFESTS)),
    "secret-manager-unconditioned": (
        _unconditioned,
        "secret-manager.outside",
        ("answered NOT_FOUND", "per-cluster-secrets-only", "gcloud projects get-iam-policy hf-demo-project"),
    ),
}


@pytest.mark.parametrize("case", sorted(OTHER_REMOVALS))
def test_each_cluster_grant_or_policy_broken_names_its_fix(
    function_env: dict[str, str], admin: Admin, world: Any, case: str
) -> None:
    seed_ready_cluster(admin, CID)
    assert cli.main(["reconcile", CID, "--quiet"]) == 0
    change, check, named = OTHER_REMOVALS[case]
    change(world)
    code, text = doctor()
    failed = failed_checks(text)
    assert code == 1 and list(failed) == [check], text
    for words in named:
        assert words in failed[check], text


def test_the_doctor_checks_this_instances_policy_by_its_name(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 51, item 4: the policy had one name for every instance, so another instance's pair passed for this one's.
    # With ADMISSION_POLICY_NAME (Terraform: the suffix in it), the doctor reads and judges this instance's only.
    from emulators.kubernetes.manifests import render
    from emulators.world import RUNTIME_SA

    staging = "hyperfleet-pullsecret-adapter-scope-stg"
    seed_ready_cluster(admin, CID)
    assert cli.main(["reconcile", CID, "--quiet"]) == 0
    monkeypatch.setenv("ADMISSION_POLICY_NAME", staging)
    code, text = doctor()  # only the unsuffixed instance's manifests are on the cluster
    failed = failed_checks(text)
    assert code == 1 and list(failed) == ["kubernetes.policy"], text
    assert staging in failed["kubernetes.policy"] and MANIFESTS in failed["kubernetes.policy"], text
    world.kubernetes.apply_manifests(render(RUNTIME_SA, policy_name=staging))  # this instance's, beside the other's
    code, text = doctor()
    assert code == 0, text
    assert f"admission policy {staging} and its binding are this release's" in text, text


# -- inside the deployed function: `gcloud functions call --cloud-event` --------------------------------------
@pytest.fixture
def function_client(function_env: dict[str, str]) -> Any:
    from functions_framework import create_app

    from pullsecret import handler
    from pullsecret.doctor import run as doctor_module

    handler._adapter = None  # main.py builds the process-wide adapter from this test's environment
    doctor_module._last_run[0] = float("-inf")
    return create_app("handle_cluster_event", str(ROOT / "main.py"), "cloudevent").test_client()


def _doctor_event(event_id: str) -> dict[str, str]:
    """The headers `gcloud functions call NAME --gen2 --cloud-event='{...}'` sends (binary mode)."""
    return {
        "ce-specversion": "1.0",
        "ce-type": "com.redhat.hyperfleet.pullsecret.doctor",
        "ce-source": "operator",
        "ce-id": event_id,
        "Content-Type": "application/json",
    }


def test_the_function_answers_a_doctor_event_with_the_report_and_writes_nothing(
    function_client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    admin.call("DELETE", "/calls")
    response = function_client.post("/", headers=_doctor_event("doctor-1"), data=b"{}")
    text = response.get_data(as_text=True)
    assert response.status_code == 200 and response.mimetype == "text/plain", text
    assert "FAIL" not in text and text.rstrip().splitlines()[-1].startswith("doctor: 9 ok, 0 failed"), text
    for secret in SENSITIVE:
        assert secret not in text + capsys.readouterr().out
    calls = admin.calls()
    writes = {
        "secretmanager": {"CreateSecret", "AddSecretVersion", "UpdateSecret", "DeleteSecret", "DestroySecretVersion"},
        "kubernetes": {"create.secrets", "patch.secrets", "delete.secrets"},
    }
    for service, names in writes.items():
        assert not names & set(calls.get(service, {})), calls
    assert admin.reports() == [], "the doctor reported a status"
    # One run at a time, and not again within MIN_INTERVAL_S: a caller cannot turn it into a load generator.
    again = function_client.post("/", headers=_doctor_event("doctor-2"), data=b"{}")
    assert again.status_code == 429, again.get_data(as_text=True)


def test_a_published_message_cannot_run_the_doctor(function_client: Any, admin: Admin, world: Any) -> None:
    """Eventarc delivers every Pub/Sub message as messagePublished: a publisher setting the doctor's type inside
    the message gets an ignored event, not a report."""
    inner = {"specversion": "1.0", "type": "com.redhat.hyperfleet.pullsecret.doctor", "source": "x", "id": "1"}
    envelope = {
        "message": {"data": base64.b64encode(json.dumps(inner).encode()).decode(), "messageId": "7"},
        "subscription": "projects/hf-demo-project/subscriptions/s",
    }
    response = function_client.post("/", json=envelope)
    assert response.status_code == 200 and "doctor:" not in response.get_data(as_text=True)
    assert "gke" not in admin.calls()


# -- the platform registries' handshake --------------------------------------------------------------------
def test_the_registries_of_the_platform_pull_secret_answer_the_handshake(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from emulators.registry import DEFAULT_PASSWORD, DEFAULT_USER

    good = base64.b64encode(f"{DEFAULT_USER}:{DEFAULT_PASSWORD}".encode()).decode()
    wrong = base64.b64encode(f"{DEFAULT_USER}:Wr0ng-Passw0rd".encode()).decode()
    hosts = world.registry.hosts()

    def source(auths: dict[str, Any]) -> None:
        payload = base64.b64encode(json.dumps({"auths": auths}).encode()).decode()
        admin.call(
            "PUT", "/secretmanager/projects/hf-demo-project/secrets/platform-pull-secret", {"versions": [payload]}
        )

    monkeypatch.setenv("REGISTRY_VERIFICATION", "report")
    monkeypatch.setenv("REGISTRY_TIMEOUT", "0.5")
    source({hosts["token"]: {"auth": good}})
    code, text = doctor()
    assert code == 0 and f"ok    registries             {hosts['token']}: the handshake accepted" in text, text

    source({hosts["token"]: {"auth": good}, hosts["basic"]: {"auth": wrong}, hosts["dead"]: {"auth": good}})
    code, text = doctor()
    fails = [line for line in text.splitlines() if line.startswith("FAIL")]
    assert code == 1 and len(fails) == 2, text
    rejected = text.split(f"{hosts['basic']}: the registry refused the credential\n")[1].splitlines()[0]
    assert "new version of the platform pull secret with a working credential" in rejected
    dead = text.split(f"{hosts['dead']}: no answer to the handshake")[1].splitlines()[1]
    assert "REGISTRY_SKIP_HOSTS" in dead and "REGISTRY_ALLOWED_HOSTS" in dead
    assert "Wr0ng-Passw0rd" not in text and good not in text and wrong not in text


# -- a dependency that does not answer as configured -----------------------------------------------------------
def _private_cluster(world: Any, env: dict[str, str]) -> list[str]:
    world.gke.add_cluster(
        "projects/hf-demo-project/locations/us-central1/clusters/private-1",
        endpoint=world.kubernetes.address,
        ca_pem=world.kubernetes.ca_pem,
        public_endpoint=False,
    )
    return ["--management-cluster", "projects/hf-demo-project/locations/us-central1/clusters/private-1"]


def _refused_token(world: Any, env: dict[str, str]) -> list[str]:
    Path(env["HYPERFLEET_API_TOKEN_FILE"]).write_text("not-the-token")
    return []


def _invalid_source(world: Any, env: dict[str, str]) -> list[str]:
    payload = base64.b64encode(b'{"auths": "not an object"}').decode()
    Admin(world.admin.url, world.hyperfleet.url).call(
        "PUT", "/secretmanager/projects/hf-demo-project/secrets/platform-pull-secret", {"versions": [payload]}
    )
    return []


def _silent_control_plane(world: Any, env: dict[str, str]) -> list[str]:
    Admin(world.admin.url, world.hyperfleet.url).fault(
        service="kubernetes", method="create.selfsubjectaccessreviews", code="reset", count=10
    )
    return []


DEPENDENCIES: dict[str, tuple[Any, str, tuple[str, ...]]] = {
    "private-endpoint-without-vpc-egress": (_private_cluster, "gke", ("private-1", "Direct VPC egress")),
    "management-cluster-not-allowed": (
        lambda world, env: ["--management-cluster", "projects/other/locations/us-central1/clusters/x"],
        "gke",
        ("not among ALLOWED_MANAGEMENT_CLUSTERS", "allowed_management_clusters"),
    ),
    "management-cluster-missing": (
        lambda world, env: ["--management-cluster", "projects/hf-demo-project/locations/us-central1/clusters/nope"],
        "gke",
        ("ManagementClusterNotFound", "no such cluster"),
    ),
    "hyperfleet-token-refused": (_refused_token, "hyperfleet-api", ("CredentialsRefused", "HYPERFLEET_API_TOKEN_FILE")),
    "source-not-a-pull-secret": (_invalid_source, "pull-secret-source", ("not a valid pull secret", "new version")),
    "control-plane-silent": (_silent_control_plane, "kubernetes.reach", ("did not answer", "ip mode")),
}


@pytest.mark.parametrize("case", sorted(DEPENDENCIES))
def test_each_dependency_that_does_not_answer_names_its_fix(
    function_env: dict[str, str], admin: Admin, world: Any, case: str
) -> None:
    seed_ready_cluster(admin, CID)
    change, check, named = DEPENDENCIES[case]
    args = change(world, function_env)
    code, text = doctor(*args)
    failed = failed_checks(text)
    assert code == 1 and list(failed) == [check], text
    for words in named:
        assert words in failed[check], text


def test_a_misspelt_precondition_adapter_fails_the_doctor_and_is_warned_at_cold_start(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: `placment` was reported as normal waiting, forever, and the doctor passed."""
    seed_ready_cluster(admin, CID)
    monkeypatch.setenv("PRECONDITION_ADAPTERS", "validation,dns,placment")
    code, text = doctor()
    failed = failed_checks(text)
    assert code == 1 and list(failed) == ["precondition-adapters"], text
    assert "placment (did you mean placement?)" in failed["precondition-adapters"], text
    from pullsecret.handler import Adapter
    from pullsecret.logs import log
    from pullsecret.settings import common

    said = io.StringIO()
    log.configure(stream=said, level="INFO")
    Adapter(common.load())
    warned = [json.loads(line) for line in said.getvalue().splitlines() if "PRECONDITION_ADAPTERS" in line]
    assert len(warned) == 1 and warned[0]["severity"] == "WARNING", said.getvalue()
    assert "placment (did you mean placement?)" in warned[0]["message"]
