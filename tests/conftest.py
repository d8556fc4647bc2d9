"""Fixtures: the emulator stack (one per session), a clean world per test, the function's environment, and the
conformance kits of every registered delivery mode x source (tests/fakes/conformance.py)."""

from __future__ import annotations

import base64
import itertools
import json
import os
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pullsecret.delivery import modes
from pullsecret.source import sources
from tests.support import PLATFORM_PULL_SECRET, PLATFORM_SOURCE_SECRET, Admin

ROOT = Path(__file__).resolve().parent.parent
# Every registered delivery mode x every registered source, by registered name.
REGISTERED_PAIRS = list(itertools.product(sorted(modes.names()), sorted(s.name for s in sources.SOURCES)))


@pytest.fixture(scope="session", autouse=True)
def private_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Temp files made by the code under test (and its child processes) go to a private folder that must be
    empty when the session ends: a leak like the pullsecret-ca-* folders of issue 11 fails the run."""
    folder = tmp_path_factory.mktemp("tmpdir")
    saved_module, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = str(folder), str(folder)
    yield folder
    tempfile.tempdir = saved_module
    if saved_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved_env
    leftovers = sorted(os.listdir(folder))
    assert leftovers == [], f"the session left temp files behind: {leftovers[:20]}"


@pytest.fixture(scope="session")
def stack() -> Iterator[Any]:
    from emulators.stack import Stack

    running = Stack().start()
    yield running
    running.stop()


@pytest.fixture
def admin(stack: Any) -> Admin:
    return Admin(stack.admin.url, stack.hyperfleet.url)


@pytest.fixture
def world(stack: Any, admin: Admin) -> Iterator[Any]:
    """A clean stack with the platform pull secret seeded; fails the test on any HyperFleet contract violation."""
    stack.reset()
    payload = base64.b64encode(json.dumps(PLATFORM_PULL_SECRET).encode()).decode()
    admin.call(
        "PUT",
        f"/secretmanager/projects/hf-demo-project/secrets/{PLATFORM_SOURCE_SECRET}",
        {"labels": {"owner": "platform"}, "versions": [payload]},
    )
    yield stack
    violations = admin.violations()
    assert violations == [], f"HyperFleet API contract violations: {json.dumps(violations, indent=1)[:3000]}"
    conventions = stack.hyperfleet.conventions.list()  # masked data keys, reasons outside the vocabulary
    assert conventions == [], f"status reports against the adapter contract: {json.dumps(conventions)[:3000]}"


@pytest.fixture
def function_env(world: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The function process environment pointing at the stack (no ADC file may shadow the metadata server)."""
    env = {
        **world.env(),
        "PULL_SECRET_SOURCE": f"projects/hf-demo-project/secrets/{PLATFORM_SOURCE_SECRET}/versions/latest",
        "MANAGEMENT_CLUSTER": "projects/hf-demo-project/locations/us-central1/clusters/mgmt-1",
        "ALLOWED_MANAGEMENT_CLUSTERS": "projects/hf-demo-project/locations/*/clusters/*",
        # As Terraform sets it: the projects the runtime identity is granted Secret Manager roles in.
        "ALLOWED_SECRET_PROJECTS": "hf-demo-project,customer-project",
        "RETRY_DEADLINE": "8",
        "LOG_LEVEL": "INFO",
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "GOOGLE_CLOUD_PROJECT": "hf-demo-project",
        # The shared pull secrets name real registries, never contacted from tests; tests/integration/
        # test_registry.py turns verification on against the registry emulator's hosts.
        "REGISTRY_VERIFICATION": "off",
    }
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # google-auth reads GCE_METADATA_HOST once, at import; a function process has it set before then.
    from google.auth.compute_engine import _metadata

    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", env["GCE_METADATA_HOST"])
    return env


@pytest.fixture
def make_adapter(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Build adapters from the function environment with overrides (None: the variable unset)."""

    from pullsecret.handler import Adapter

    def build(env: dict[str, str | None]) -> Adapter:
        for key, value in env.items():
            if value is None:
                monkeypatch.delenv(key, raising=False)
            else:
                monkeypatch.setenv(key, value)
        return Adapter.from_environment()

    yield build


@pytest.fixture(params=REGISTERED_PAIRS, ids=[f"{mode}-{source}" for mode, source in REGISTERED_PAIRS])
def kits(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """The conformance kits (a `DeliveryKit` and a `SourceKit`, tests/fakes/conformance.py) of one registered mode
    and source, each built by its registration's factory: a test taking it runs once per pair."""
    from tests.fakes import conformance

    mode, source = request.param
    return conformance.DELIVERY_KITS[mode](), conformance.SOURCE_KITS[source]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """In CI (CI=true, or Cloud Build, which sets BUILDER_OUTPUT), a test skipped because the Cloud SDK's Pub/Sub
    emulator cannot run is a failure: the delivery, dead-letter and rotation tests must not vanish silently."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or (os.environ.get("CI", "").lower() != "true" and "BUILDER_OUTPUT" not in os.environ):
        return
    from emulators.pubsub import PubSubEmulator

    available, reason = PubSubEmulator.available()
    if not available and reason in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run the Pub/Sub emulator tests: {reason}"
