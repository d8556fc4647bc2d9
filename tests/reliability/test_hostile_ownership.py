"""A stolen runtime token must not reach other HyperFleet components' Secrets, nor Secrets of ours under a name
that is not their cluster's: the admission policy (revision 4) admits only this adapter's label and the name
KUBERNETES_SECRET_TEMPLATE gives the Secret's cluster-id label, before and after every change.

Driven as the attacker would: the official client with the runtime identity's token against the Kubernetes
emulator enforcing the policy exactly as Terraform renders it. Another component's Secrets are written by
someone else (a cluster admin), with the fleet-wide label managed-by=hyperfleet that revision 3 took for ours.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiException, CoreV1Api

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.manifests import render
from tests.kubernetes_clients import OTHER, OTHER_TOKEN, SA, TOKEN, make_api
from tests.reliability import harness

NS = "clusters-abc"
THEIRS = base64.b64encode(json.dumps({"auths": {"theirs.example": {"auth": "dGhlaXI6c2VjcmV0"}}}).encode()).decode()
MINE = base64.b64encode(b'{"auths":{}}').decode()
# Another HyperFleet component's Secret: the fleet-wide label only (and the framework's key, with its own name).
COMPONENT = {"managed-by": "hyperfleet", "component": "hypershift-operator"}
FRAMEWORK_OTHER = {
    "managed-by": "hyperfleet",
    "hyperfleet.io/managed-by": "hypershift",
    "hyperfleet.io/cluster-id": "abc",
}
OURS = {"managed-by": "hyperfleet", "hyperfleet.io/managed-by": "pullsecret", "hyperfleet.io/cluster-id": "abc"}


def body(name: str, labels: dict[str, str], data: str = MINE, generation: str = "9") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": labels, "annotations": {"hyperfleet.io/generation": generation}},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": data},
    }


@pytest.fixture
def emu() -> Iterator[KubernetesEmulator]:
    server = KubernetesEmulator(FaultBook(), authenticate={TOKEN: SA, OTHER_TOKEN: OTHER}.get)
    server.start()
    server.add_namespace(NS)
    server.apply_manifests(render(SA))
    server.grant(OTHER)  # the cluster admin who installs the other components' Secrets
    yield server
    server.stop()


@pytest.fixture
def stolen(emu: KubernetesEmulator, tmp_path: Path) -> Any:
    return CoreV1Api(make_api(emu, tmp_path, TOKEN))


@pytest.fixture
def admin(emu: KubernetesEmulator, tmp_path: Path) -> Any:
    return CoreV1Api(make_api(emu, tmp_path, OTHER_TOKEN))


def apply(api: Any, name: str, manifest: dict[str, Any], **kw: Any) -> Any:
    return api.patch_namespaced_secret(
        name,
        NS,
        manifest,
        field_manager="hyperfleet-pullsecret",
        force=True,
        _content_type="application/apply-patch+yaml",
        **kw,
    )


def refused(call: Any) -> str:
    harness.count("cases tried")
    with pytest.raises(ApiException) as err:
        call()
    assert err.value.status == 403, err.value.body
    message = str(json.loads(err.value.body or "{}").get("message"))
    assert "denied request: OwnershipConflict: " in message, message
    return message


@pytest.mark.parametrize("labels", [COMPONENT, FRAMEWORK_OTHER], ids=["fleet-label", "other-adapter"])
def test_another_components_secret_cannot_be_created_overwritten_read_or_deleted(
    stolen: Any, admin: Any, emu: KubernetesEmulator, labels: dict[str, str]
) -> None:
    refused(lambda: stolen.create_namespaced_secret(NS, body("hypershift-pull", labels)))
    assert emu.get_secret(NS, "hypershift-pull") is None
    admin.create_namespaced_secret(NS, body("registry-creds", labels, THEIRS))
    before = emu.get_secret(NS, "registry-creds")
    refused(lambda: apply(stolen, "registry-creds", body("registry-creds", labels)))  # overwrite, forced
    # Read through a dry-run apply of the labels it already has: the answer would be the whole Secret.
    probe = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "registry-creds", "labels": labels}}
    refused(lambda: apply(stolen, "registry-creds", probe, dry_run="All"))
    refused(lambda: stolen.delete_namespaced_secret("registry-creds", NS))
    assert emu.get_secret(NS, "registry-creds") == before
    assert all(THEIRS not in json.dumps(answer) for answer in emu.answers(SA))


def test_a_secret_named_for_another_cluster_than_its_cluster_id_label_is_refused(
    stolen: Any, admin: Any, emu: KubernetesEmulator
) -> None:
    for name in ("xyz-pull-secret", "kube-admin", "abc-pull-secret-2"):
        refused(lambda name=name: stolen.create_namespaced_secret(NS, body(name, OURS)))
        assert emu.get_secret(NS, name) is None
    # Labelled by the previous release's keys: the same rule, with cluster-id.
    previous = {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": "abc"}
    refused(lambda: stolen.create_namespaced_secret(NS, body("xyz-pull-secret", previous)))
    # One that exists (written by someone else), labelled as ours but named for another cluster: untouchable.
    admin.create_namespaced_secret(NS, body("xyz-pull-secret", OURS, THEIRS))
    before = emu.get_secret(NS, "xyz-pull-secret")
    refused(lambda: apply(stolen, "xyz-pull-secret", body("xyz-pull-secret", OURS)))
    refused(lambda: stolen.delete_namespaced_secret("xyz-pull-secret", NS))
    assert emu.get_secret(NS, "xyz-pull-secret") == before


def test_relabelling_cannot_move_a_secret_into_or_out_of_our_ownership(
    stolen: Any, admin: Any, emu: KubernetesEmulator
) -> None:
    # Ours, and allowed: create, update, delete under the name of its cluster.
    assert apply(stolen, "abc-pull-secret", body("abc-pull-secret", OURS)).metadata.name == "abc-pull-secret"
    # Our Secret re-pointed at another cluster (its name stays abc-...): refused.
    moved = {**OURS, "hyperfleet.io/cluster-id": "xyz"}
    refused(lambda: apply(stolen, "abc-pull-secret", body("abc-pull-secret", moved)))
    # Our Secret handed to another adapter: refused (ours after the change too).
    handed = {**OURS, "hyperfleet.io/managed-by": "hypershift"}
    refused(lambda: apply(stolen, "abc-pull-secret", body("abc-pull-secret", handed)))
    assert emu.get_secret(NS, "abc-pull-secret")["metadata"]["labels"] == OURS  # type: ignore[index]
    # Another component's Secret at our very name, adopted by writing our labels onto it: refused (theirs before).
    stolen.delete_namespaced_secret("abc-pull-secret", NS)
    admin.create_namespaced_secret(NS, body("abc-pull-secret", COMPONENT, THEIRS))
    refused(lambda: apply(stolen, "abc-pull-secret", body("abc-pull-secret", OURS)))
    assert emu.get_secret(NS, "abc-pull-secret")["data"][".dockerconfigjson"] == THEIRS  # type: ignore[index]
