"""TokenRequest and TokenReview (authentication.k8s.io/v1) asked with the official Python client over HTTPS.

Kubernetes API reference: TokenRequest v1 (https://kubernetes.io/docs/reference/kubernetes-api/authentication-
resources/token-request-v1/) and TokenReview v1 (.../token-review-v1/); kube-apiserver's
pkg/registry/core/serviceaccount/storage/token.go, pkg/apis/authentication/validation (expirationSeconds at least
10 minutes) and pkg/serviceaccount/jwt.go (audiences, expiry). The rules are in emulators/kubernetes/tokens.py.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator

RUNTIME = "hf-pullsecret-run@proj.iam.gserviceaccount.com"
OTHER = "someone-else@proj.iam.gserviceaccount.com"
RUNTIME_TOKEN = "tok-runtime"
TOKENS = {RUNTIME_TOKEN: RUNTIME, "tok-other": OTHER}
NS, SA = "hyperfleet", "pullsecret-adapter"


@pytest.fixture(scope="module")
def emu() -> Iterator[KubernetesEmulator]:
    emulator = KubernetesEmulator(FaultBook(), authenticate=TOKENS.get)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture(autouse=True)
def cluster(emu: KubernetesEmulator) -> None:
    """What Terraform renders on the token cluster: the account, a Role allowing exactly `create` on
    `serviceaccounts/token` for that one name, and its binding to the runtime identity's user."""
    emu.reset()
    emu.add_namespace(NS)
    emu.apply_manifests(
        [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": NS}},
            {
                "kind": "Role",
                "metadata": {"name": "mint", "namespace": NS},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["serviceaccounts/token"],
                        "verbs": ["create"],
                        "resourceNames": [SA],
                    }
                ],
            },
            {
                "kind": "RoleBinding",
                "metadata": {"name": "mint", "namespace": NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mint"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": RUNTIME}],
            },
        ]
    )


def _client(emu: KubernetesEmulator, tmp_path: Path, token: str) -> client.ApiClient:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(emu.ca_pem)
    config = client.Configuration(
        host=f"https://{emu.address}", ssl_ca_cert=str(ca), api_key={"authorization": f"Bearer {token}"}
    )
    return client.ApiClient(config)


def _mint(emu: KubernetesEmulator, tmp_path: Path, *, token: str = RUNTIME_TOKEN, name: str = SA, **spec: Any) -> Any:
    core = client.CoreV1Api(_client(emu, tmp_path, token))
    return core.create_namespaced_service_account_token(name, NS, client.AuthenticationV1TokenRequest(spec=spec))


def _review(emu: KubernetesEmulator, tmp_path: Path, token: str, audiences: list[str] | None = None) -> Any:
    reviewer = emu.reviewer("hyperfleet", "hyperfleet-gateway")
    api = client.AuthenticationV1Api(_client(emu, tmp_path, reviewer.token))
    return api.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=audiences))
    )


def _status(caught: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(caught.value.body)
    return body


def test_a_token_is_bound_to_the_account_the_audiences_and_the_expiry_asked(
    emu: KubernetesEmulator, tmp_path: Path
) -> None:
    minted = _mint(emu, tmp_path, audiences=["hyperfleet-api"], expiration_seconds=600)
    assert minted.spec.audiences == ["hyperfleet-api"] and minted.spec.expiration_seconds == 600
    lifetime = minted.status.expiration_timestamp - minted.metadata.creation_timestamp
    assert lifetime == datetime.timedelta(seconds=600)
    review = _review(emu, tmp_path, minted.status.token, ["hyperfleet-api"])
    assert review.status.authenticated is True
    assert review.status.user.username == f"system:serviceaccount:{NS}:{SA}"
    assert f"system:serviceaccounts:{NS}" in review.status.user.groups
    assert review.status.audiences == ["hyperfleet-api"]


def test_without_expiration_the_token_lives_an_hour_for_the_api_servers_audience(
    emu: KubernetesEmulator, tmp_path: Path
) -> None:
    minted = _mint(emu, tmp_path)
    assert minted.spec.expiration_seconds == 3600
    assert minted.spec.audiences == [emu.service_accounts.issuer]
    # ... and such a token is a credential of the API server itself (who it is, asked with the token).
    whoami = client.AuthenticationV1Api(_client(emu, tmp_path, minted.status.token)).create_self_subject_review({})
    assert whoami.status.user_info.username == f"system:serviceaccount:{NS}:{SA}"


@pytest.mark.parametrize("seconds", [599, 60, 0])
def test_an_expiry_under_ten_minutes_is_invalid(emu: KubernetesEmulator, tmp_path: Path, seconds: int) -> None:
    with pytest.raises(ApiException) as caught:
        _mint(emu, tmp_path, audiences=["hyperfleet-api"], expiration_seconds=seconds)
    assert caught.value.status == 422
    status = _status(caught)
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
        f"Invalid value: {seconds}: may not specify a duration less than 10 minutes"
    )
    assert emu.state()["tokens_minted"] == 0


def test_rbac_refuses_another_user_and_another_account(emu: KubernetesEmulator, tmp_path: Path) -> None:
    emu.service_accounts.add_service_account(NS, "hyperfleet-admin")
    with pytest.raises(ApiException) as caught:
        _mint(emu, tmp_path, token="tok-other")
    assert caught.value.status == 403
    assert _status(caught)["message"] == (
        f'serviceaccounts "{SA}" is forbidden: User "{OTHER}" cannot create resource "serviceaccounts/token" '
        f'in API group "" in the namespace "{NS}"'
    )
    with pytest.raises(ApiException) as other_account:
        _mint(emu, tmp_path, name="hyperfleet-admin")  # the Role names one account only
    assert other_account.value.status == 403
    assert emu.state()["tokens_minted"] == 0


def test_a_missing_account_is_not_found(emu: KubernetesEmulator, tmp_path: Path) -> None:
    emu.service_accounts.delete_service_account(NS, SA)
    with pytest.raises(ApiException) as caught:
        _mint(emu, tmp_path)
    assert caught.value.status == 404
    assert _status(caught)["message"] == f'serviceaccounts "{SA}" not found'


def test_a_review_for_another_audience_is_refused(emu: KubernetesEmulator, tmp_path: Path) -> None:
    minted = _mint(emu, tmp_path, audiences=["pull-secret-service"], expiration_seconds=600)
    review = _review(emu, tmp_path, minted.status.token, ["hyperfleet-api"])
    assert not review.status.authenticated
    assert "is invalid for the target audiences" in review.status.error
    assert review.status.user.username is None


def test_an_expired_token_a_forged_one_and_a_deleted_accounts_are_refused(
    emu: KubernetesEmulator, tmp_path: Path
) -> None:
    minted = _mint(emu, tmp_path, audiences=["hyperfleet-api"], expiration_seconds=600).status.token
    head, claims, signature = minted.split(".")
    forged = f"{head}.{claims}.{signature[::-1]}"
    assert not _review(emu, tmp_path, forged, ["hyperfleet-api"]).status.authenticated
    emu.service_accounts.advance(601)
    expired = _review(emu, tmp_path, minted, ["hyperfleet-api"])
    assert not expired.status.authenticated and "expired" in expired.status.error
    fresh = _mint(emu, tmp_path, audiences=["hyperfleet-api"], expiration_seconds=600).status.token
    emu.service_accounts.delete_service_account(NS, SA)
    emu.service_accounts.add_service_account(NS, SA)  # recreated: a new uid, the old tokens are dead
    assert not _review(emu, tmp_path, fresh, ["hyperfleet-api"]).status.authenticated


def test_a_review_needs_create_on_tokenreviews(emu: KubernetesEmulator, tmp_path: Path) -> None:
    minted = _mint(emu, tmp_path, audiences=["hyperfleet-api"], expiration_seconds=600).status.token
    api = client.AuthenticationV1Api(_client(emu, tmp_path, "tok-runtime"))
    with pytest.raises(ApiException) as caught:
        api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=minted)))
    assert caught.value.status == 403
    assert 'cannot create resource "tokenreviews" in API group "authentication.k8s.io"' in _status(caught)["message"]
