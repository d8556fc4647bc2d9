"""Cloud Resource Manager's projects.testIamPermissions (the doctor's REST call) answers from the grants Secret
Manager and GKE enforce, judged on the project: an unconditioned project grant counts, a condition on secret
names does not (https://cloud.google.com/resource-manager/reference/rest/v3/projects/testIamPermissions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from emulators.faults import FaultBook
from emulators.gke import GkeEmulator
from emulators.resourcemanager import ResourceManagerEmulator
from emulators.secretmanager import SecretManagerEmulator

SA = "hf-pullsecret-run@p1.iam.gserviceaccount.com"
TOKENS = {"tok": SA, "tok-other": "other@p1.iam.gserviceaccount.com"}
ASKED = ["secretmanager.secrets.create", "secretmanager.secrets.get", "container.clusters.get", "pubsub.topics.publish"]


@pytest.fixture
def rm() -> Iterator[ResourceManagerEmulator]:
    book = FaultBook()
    sm, gke = SecretManagerEmulator(book), GkeEmulator(book)
    for emulator in (sm, gke):
        emulator.add_project("p1", "111111111111")
    sm.bind(SA, "roles/custom", "projects/p1", permissions=frozenset({"secretmanager.secrets.create"}))
    condition = 'resource.name.startsWith("projects/111111111111/secrets/hf-")'
    sm.bind(
        SA, "roles/custom", "projects/p1", permissions=frozenset({"secretmanager.secrets.get"}), condition=condition
    )
    gke.bind(SA, "roles/container.clusterViewer", "projects/p1")
    emulator = ResourceManagerEmulator(book, {"secretmanager": sm, "container": gke}, authenticate=TOKENS.get)
    emulator.start()
    yield emulator
    emulator.stop()


def _test(rm: ResourceManagerEmulator, project: str, permissions: list[str], token: str = "tok") -> Any:  # noqa: S107 - a test token
    return requests.post(
        f"{rm.url}/v3/projects/{project}:testIamPermissions",
        json={"permissions": permissions},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


def test_project_grants_count_and_a_condition_on_secret_names_does_not(rm: ResourceManagerEmulator) -> None:
    answer = _test(rm, "p1", ASKED)
    assert answer.status_code == 200
    assert answer.json() == {"permissions": ["secretmanager.secrets.create", "container.clusters.get"]}
    assert _test(rm, "111111111111", ASKED).json() == answer.json()  # the project's number names it too


def test_nothing_granted_omits_the_field_and_strangers_get_nothing(rm: ResourceManagerEmulator) -> None:
    assert _test(rm, "p1", ASKED, token="tok-other").json() == {}
    assert _test(rm, "p2", ["secretmanager.secrets.create"]).json() == {}


def test_wildcards_and_unknown_callers_are_refused(rm: ResourceManagerEmulator) -> None:
    assert _test(rm, "p1", ["secretmanager.*"]).status_code == 400
    assert _test(rm, "p1", ASKED, token="nope").status_code == 401
