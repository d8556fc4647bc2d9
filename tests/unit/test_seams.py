"""The two seams' registries: every KUBERNETES_DELIVERY value has a delivery, and the configured source is chosen."""

from __future__ import annotations

import contextlib
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pullsecret import configured
from pullsecret.delivery import modes
from pullsecret.errors import ConfigError
from pullsecret.model.preconditions import Act, Placement
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.source import base, sources
from pullsecret.source.platform.secret import PlatformSecret
from pullsecret.source.platform.source import PlatformSource

BASE = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
SOURCE = "projects/p1/secrets/platform/versions/latest"
ACT = Act(
    generation=1,
    project_id="p1",
    placement=Placement("projects/p/locations/l/clusters/c", "ns"),
    cluster_pull_secret=None,
)


class _Secret:
    """The two reads the platform source makes of its secret (pullsecret.source.platform.secret), counted."""

    def __init__(self, cached: bytes | None) -> None:
        self.held, self.reads = cached, 0

    def cached(self, version_name: str) -> bytes | None:
        return self.held

    def read(self, version_name: str, deadline: Deadline) -> bytes:
        self.reads += 1
        return b'{"auths": {"quay.io": {"auth": "dTpw"}}}'


def _wiring(env: dict[str, str], store: Any) -> base.Wiring:
    return base.Wiring(settings=configured.load({**BASE, **env}), store=store, pool=ThreadPoolExecutor(max_workers=1))


def test_every_registered_delivery_mode_is_accepted_and_has_a_factory() -> None:
    for registered in modes.MODES:
        mode = registered.name
        assert modes.registration(mode) is registered
        assert mode == sys.modules[registered.build.__module__].settings.MODE
        with contextlib.suppress(ConfigError):  # a mode's own settings may be required: not KUBERNETES_DELIVERY
            assert configured.load({**BASE, "KUBERNETES_DELIVERY": mode}).kubernetes_delivery == mode
    with pytest.raises(ConfigError, match="KUBERNETES_DELIVERY"):
        configured.load({**BASE, "KUBERNETES_DELIVERY": "carrier-pigeon"})


def test_no_source_configured_is_a_configuration_error_naming_both() -> None:
    with pytest.raises(ConfigError, match=r"PULL_SECRET_SOURCE.*PULL_SECRET_SERVICE_URL.*none is set"):
        configured.load({"HYPERFLEET_API_URL": "http://127.0.0.1:8000"})


def test_the_platform_source_reads_only_when_the_cache_misses_and_parses_once_per_content() -> None:
    registered = sources.build(_wiring({"PULL_SECRET_SOURCE": SOURCE}, SecretStore(object())))  # type: ignore[arg-type]
    assert isinstance(registered, PlatformSource) and isinstance(registered.secret, PlatformSecret)
    store = _Secret(None)
    source = PlatformSource(registered.settings, registered.store, store)  # type: ignore[arg-type]
    first = source.start("c1", Deadline(5))
    assert not first.ready
    secret = first.pull_secret(ACT, Deadline(5))
    assert store.reads == 1 and secret is not None and secret.registries == ("quay.io",)
    store.held = b'{"auths": {"quay.io": {"auth": "dTpw"}}}'
    cached = source.start("c1", Deadline(5))
    assert cached.ready and cached.pull_secret(ACT, Deadline(5)) is secret and store.reads == 1
    assert source.revoke("c1", Deadline(5)) == {}
