"""The admission policy must hold what the function holds: a namespace pattern with alternatives is matched
whole in both (`^(?:PATTERN)$`), since CEL's `matches` searches while the function uses `fullmatch`. Driven as
the runtime identity with a stolen token would: the official client against the Kubernetes emulator enforcing
the policy exactly as rendered for a management cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiException, CoreV1Api

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.manifests import render
from pullsecret import configured
from tests.kubernetes_clients import NAME, OURS, SA, TOKEN, apply, make_api, secret
from tests.reliability import harness

# Anchored at both ends as config requires, yet each alternative is anchored at one end only.
PATTERN = r"^clusters-[a-z0-9-]+|hcp-[a-z0-9-]+$"


@pytest.fixture
def emu() -> Iterator[KubernetesEmulator]:
    server = KubernetesEmulator(FaultBook(), authenticate={TOKEN: SA}.get)
    server.start()
    for ns in ("clusters-abc", "hcp-abc", "openshift-hcp-abc", "clusters-abc-then-anything"):
        server.add_namespace(ns)
    server.apply_manifests(render(SA, PATTERN))
    yield server
    server.stop()


def test_a_namespace_pattern_with_alternatives_is_matched_whole_by_the_policy_and_the_function(
    emu: KubernetesEmulator, tmp_path: Path
) -> None:
    api: Any = CoreV1Api(make_api(emu, tmp_path, TOKEN))
    function = configured.load(
        {
            "HYPERFLEET_API_URL": "http://hf.example",
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
            "MANAGEMENT_NAMESPACE_PATTERN": PATTERN,
        }
    )
    for namespace in ("clusters-abc", "hcp-abc"):
        assert function.management_namespace_pattern.fullmatch(namespace)
        assert apply(api, secret(OURS), namespace=namespace).metadata.namespace == namespace
    for namespace in ("openshift-hcp-abc",):
        harness.count("cases tried")
        assert not function.management_namespace_pattern.fullmatch(namespace)
        with pytest.raises(ApiException) as err:
            apply(api, secret(OURS), namespace=namespace)
        assert err.value.status == 403 and "ForbiddenNamespace" in str(err.value.body)
        assert emu.get_secret(namespace, NAME) is None
    [policy] = [d for d in render(SA, PATTERN) if d["kind"] == "ValidatingAdmissionPolicy"]
    expressions = [v["expression"] for v in policy["spec"]["validations"]]
    assert f"request.namespace.matches(r'^(?:{PATTERN})$')" in expressions
