"""SelfSubjectAccessReview (authorization.k8s.io/v1) asked with the official Python client over HTTPS, as JSON (the
doctor's question; kubectl's protobuf form is in test_kubernetes_kubectl.py): the answer is the RBAC the emulator
enforces on the same user's requests. Kubernetes API reference, SelfSubjectAccessReview v1:
https://kubernetes.io/docs/reference/kubernetes-api/authorization-resources/self-subject-access-review-v1/
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.manifests import render

SA = "hf-pullsecret-run@proj.iam.gserviceaccount.com"
OTHER = "someone@proj.iam.gserviceaccount.com"
TOKENS = {"tok-sa": SA, "tok-other": OTHER}
NS = "clusters-abc"


@pytest.fixture(scope="module")
def emu() -> Iterator[KubernetesEmulator]:
    emulator = KubernetesEmulator(FaultBook(), authenticate=TOKENS.get)
    emulator.start()
    emulator.add_namespace(NS)
    emulator.apply_manifests(render(SA))  # terraform/kubernetes/rbac.yaml and the admission policy
    yield emulator
    emulator.stop()


def _api(emu: KubernetesEmulator, tmp_path: Path, token: str) -> Any:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(emu.ca_pem)
    config = client.Configuration(
        host=f"https://{emu.address}", ssl_ca_cert=str(ca), api_key={"authorization": f"Bearer {token}"}
    )
    return client.AuthorizationV1Api(client.ApiClient(config))


def _review(api: Any, verb: str, resource: str = "secrets", namespace: str = NS, **extra: str) -> Any:
    attributes = client.V1ResourceAttributes(verb=verb, resource=resource, namespace=namespace, **extra)
    body = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes))
    return api.create_self_subject_access_review(body)


@pytest.mark.parametrize(
    ("verb", "allowed"),
    [("create", True), ("patch", True), ("delete", True), ("get", False), ("list", False), ("watch", False)],
)
def test_the_answer_is_the_rbac_manifest(emu: KubernetesEmulator, tmp_path: Path, verb: str, allowed: bool) -> None:
    answer = _review(_api(emu, tmp_path, "tok-sa"), verb)
    assert answer.kind == "SelfSubjectAccessReview" and answer.api_version == "authorization.k8s.io/v1"
    assert answer.status.allowed is allowed
    assert answer.spec.resource_attributes.verb == verb  # the spec comes back as asked


def test_the_answer_follows_a_change_of_rbac_and_names_the_group(emu: KubernetesEmulator, tmp_path: Path) -> None:
    api = _api(emu, tmp_path, "tok-other")
    assert _review(api, "get").status.allowed is False
    emu.grant(OTHER, namespace=NS, verbs=["get"], resources=["secrets"], api_groups=[""])
    assert _review(api, "get").status.allowed is True
    assert _review(api, "get", namespace="clusters-other").status.allowed is False  # a RoleBinding's namespace only
    policy = "validatingadmissionpolicies"
    sa = _api(emu, tmp_path, "tok-sa")
    group = "admissionregistration.k8s.io"
    assert _review(sa, "get", policy, "", group=group, name="hyperfleet-pullsecret-adapter-scope").status.allowed
    assert not _review(sa, "get", policy, "", group=group, name="another").status.allowed


def test_an_unauthenticated_caller_is_refused(emu: KubernetesEmulator, tmp_path: Path) -> None:
    with pytest.raises(ApiException) as caught:
        _review(_api(emu, tmp_path, "tok-unknown"), "get")
    assert caught.value.status == 401
