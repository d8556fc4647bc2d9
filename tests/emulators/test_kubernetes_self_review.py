"""SelfSubjectReview (authentication.k8s.io/v1) asked with the official Python client over HTTPS: the answer names
the user the emulator authenticated from the bearer token, as `kubectl auth whoami` shows it. Kubernetes API
reference, SelfSubjectReview v1:
https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/self-subject-review-v1/
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

SA = "hf-pullsecret-run@proj.iam.gserviceaccount.com"
OPERATOR = "alice@example.com"
TOKENS = {"tok-sa": SA, "tok-operator": OPERATOR}


@pytest.fixture(scope="module")
def emu() -> Iterator[KubernetesEmulator]:
    emulator = KubernetesEmulator(FaultBook(), authenticate=TOKENS.get)
    emulator.start()
    yield emulator
    emulator.stop()


def _api(emu: KubernetesEmulator, tmp_path: Path, token: str) -> Any:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(emu.ca_pem)
    config = client.Configuration(
        host=f"https://{emu.address}", ssl_ca_cert=str(ca), api_key={"authorization": f"Bearer {token}"}
    )
    return client.AuthenticationV1Api(client.ApiClient(config))


@pytest.mark.parametrize(("token", "user"), [("tok-sa", SA), ("tok-operator", OPERATOR)])
def test_the_answer_names_the_authenticated_user(
    emu: KubernetesEmulator, tmp_path: Path, token: str, user: str
) -> None:
    answer = _api(emu, tmp_path, token).create_self_subject_review(client.V1SelfSubjectReview())
    assert answer.kind == "SelfSubjectReview" and answer.api_version == "authentication.k8s.io/v1"
    assert answer.status.user_info.username == user
    assert "system:authenticated" in answer.status.user_info.groups


def test_it_needs_no_rbac_and_is_listed_in_discovery(emu: KubernetesEmulator, tmp_path: Path) -> None:
    # No RBAC object is installed in this emulator: system:basic-user's grant is built in.
    assert _api(emu, tmp_path, "tok-operator").create_self_subject_review({}).status.user_info.username == OPERATOR
    resources = _api(emu, tmp_path, "tok-sa").get_api_resources()
    assert [(r.name, r.verbs) for r in resources.resources] == [
        ("selfsubjectreviews", ["create"]),
        ("tokenreviews", ["create"]),
    ]


def test_an_unauthenticated_caller_is_refused(emu: KubernetesEmulator, tmp_path: Path) -> None:
    with pytest.raises(ApiException) as caught:
        _api(emu, tmp_path, "tok-unknown").create_self_subject_review(client.V1SelfSubjectReview())
    assert caught.value.status == 401
