"""Secret Manager's TestIamPermissions, asked through the official client over gRPC, answers from the same grants
every other RPC is authorized with (the doctor's Secret Manager checks rely on it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc

from emulators.faults import FaultBook
from emulators.secretmanager import SecretManagerEmulator
from tests.emulators.secretmanager_client import NUMBER, PROJECT, SA_A, TOKENS, make_client

MANAGED = ["secretmanager.secrets.get", "secretmanager.versions.add", "secretmanager.versions.access"]
# Terraform's condition shape (terraform/iam.tf secret_manager_condition) for the template hf-{cluster_id}-ps.
CONDITION = (
    f'resource.name.startsWith("projects/{NUMBER}/secrets/hf-") && (resource.name.endsWith("-ps") || '
    f'resource.name.extract("projects/{NUMBER}/secrets/{{id}}/versions/").endsWith("-ps"))'
)


@pytest.fixture
def emulator() -> Iterator[SecretManagerEmulator]:
    emu = SecretManagerEmulator(FaultBook(), authenticate=TOKENS.get)
    emu.add_project(PROJECT, NUMBER)
    emu.start()
    emu.bind(SA_A, "roles/custom", f"projects/{PROJECT}", permissions=frozenset(MANAGED), condition=CONDITION)
    emu.grant(PROJECT, "owner@my-project.iam.gserviceaccount.com")
    owner = make_client(emu.address, "tok-owner")
    emu.authenticate = {**TOKENS, "tok-owner": "owner@my-project.iam.gserviceaccount.com"}.get
    for sid in ("hf-c1-ps", "hf-c1-ps-other", "platform"):
        owner.create_secret(parent=f"projects/{PROJECT}", secret_id=sid, secret={"replication": {"automatic": {}}})
    yield emu
    emu.stop()


def _test(emu: SecretManagerEmulator, token: str, secret_id: str, permissions: list[str]) -> list[str]:
    client = make_client(emu.address, token)
    answer = client.test_iam_permissions(
        request={"resource": f"projects/{PROJECT}/secrets/{secret_id}", "permissions": permissions}
    )
    return list(answer.permissions)


def test_answers_the_permissions_the_conditioned_grant_gives_on_a_covered_name(
    emulator: SecretManagerEmulator,
) -> None:
    asked = [*MANAGED, "secretmanager.secrets.delete"]
    assert _test(emulator, "tok-a", "hf-c1-ps", asked) == MANAGED


def test_a_name_outside_the_condition_and_another_identity_get_nothing(emulator: SecretManagerEmulator) -> None:
    assert _test(emulator, "tok-a", "hf-c1-ps-other", MANAGED) == []  # the suffix is enforced, not just the prefix
    assert _test(emulator, "tok-a", "platform", MANAGED) == []
    assert _test(emulator, "tok-b", "hf-c1-ps", MANAGED) == []


def test_a_secret_that_does_not_exist_answers_an_empty_set_not_not_found(emulator: SecretManagerEmulator) -> None:
    # google.iam.v1 iam_policy.proto, TestIamPermissions: "If the resource does not exist, this will return an
    # empty set of permissions, not a NOT_FOUND error."
    assert _test(emulator, "tok-a", "hf-c2-ps", MANAGED) == []


def test_wildcards_and_malformed_names_are_refused_and_callers_must_authenticate(
    emulator: SecretManagerEmulator,
) -> None:
    with pytest.raises(gexc.InvalidArgument, match="wildcards"):
        _test(emulator, "tok-a", "hf-c1-ps", ["secretmanager.*"])
    client = make_client(emulator.address, "tok-a")
    with pytest.raises(gexc.InvalidArgument):
        client.test_iam_permissions(request={"resource": f"projects/{PROJECT}", "permissions": MANAGED})
    with pytest.raises(gexc.Unauthenticated):
        _test(emulator, "tok-unknown", "hf-c1-ps", MANAGED)
