"""A fault on a pager's second page: `skip` lets the first matching calls through (Secret Manager, official client)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc
from google.cloud import secretmanager_v1 as sm

from emulators.faults import FaultBook
from emulators.secretmanager import SecretManagerEmulator
from tests.emulators.secretmanager_client import NUMBER, PROJECT, make_client


@pytest.fixture
def emulator() -> Iterator[SecretManagerEmulator]:
    emu = SecretManagerEmulator(FaultBook())
    emu.add_project(PROJECT, NUMBER)
    emu.start()
    emu.seed_secret(PROJECT, "s1", payloads=[b"v%d" % i for i in range(5)], labels={}, annotations={})
    yield emu
    emu.stop()


def test_a_fault_on_the_second_page_only(emulator: SecretManagerEmulator) -> None:
    client = make_client(emulator.address)
    request = sm.ListSecretVersionsRequest(parent=f"projects/{PROJECT}/secrets/s1", page_size=2)
    assert len(list(client.list_secret_versions(request=request, retry=None))) == 5  # three pages
    emulator.control.book.add(
        {"service": "secretmanager", "method": "ListSecretVersions", "code": "UNAVAILABLE", "count": 1, "skip": 1}
    )
    pager = client.list_secret_versions(request=request, retry=None)  # page 1: let through
    seen = []
    with pytest.raises(gexc.ServiceUnavailable):
        for version in pager:  # page 2 is fetched here, outside the call that returned the pager
            seen.append(version.name)
    assert len(seen) == 2
    assert len(list(client.list_secret_versions(request=request, retry=None))) == 5  # the rule is spent
    (rule,) = emulator.control.book.rules()
    assert (rule["skip"], rule["injected"]) == (1, 1)
