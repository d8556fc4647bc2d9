"""The recipe of docs/design.md ("Adding a delivery mode or a source"): a throwaway mode and a throwaway source,
each one package written here into a temporary directory plus one registration line, pass the conformance story
(tests/fakes/conformance.py) with every registered source and mode, reading no other implementation; the
configuration accepts the mode, and its own settings (its package's settings module), with nothing else changed."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pullsecret.delivery import base as delivery_base
from pullsecret.delivery import modes
from pullsecret.delivery.base import Delivery
from pullsecret.errors import ConfigError
from pullsecret.model import events
from pullsecret.retrying import Deadline
from pullsecret.settings import configured
from pullsecret.settings.common import Settings
from pullsecret.source import base as source_base
from pullsecret.source import sources
from pullsecret.source.base import Notified, Rekeyed, Source
from tests.fakes import conformance

# One package per implementation, using only the seams' neutral types: a delivery that keeps what it delivers in
# a dict (its "cluster"), a source that mints a pull secret per cluster (its "service").
MODE_PACKAGE = '''
"""KUBERNETES_DELIVERY=memory: the pull secret held in a dict (a throwaway mode made by the recipe)."""
from pullsecret.delivery.base import Cleaned, Delivered, DryRun, Registration, Wording

WORDING = Wording("shared ready", "own ready", "changed", "unchanged")
HELD = {}  # (namespace, name) -> (generation, content): the "cluster"


class Probed:
    def __init__(self, key):
        self.key = key
        held = HELD.get(key)
        self.present, self.recorded_generation, self.recorded_lineage = held is not None, held[0] if held else 0, None

    def apply(self, desired, deadline):
        held = HELD.get(self.key)
        if held is not None and held[0] > desired.generation:
            return Delivered(False, "", stale=True, recorded_generation=held[0])
        if held == (desired.generation, desired.content):
            return Delivered(False, "")
        HELD[self.key] = (desired.generation, desired.content)
        return Delivered(True, "")

    def dry_run(self, desired, *, store_writes):
        return DryRun(True, ["memory: would hold it"])


class MemoryDelivery:
    mode, wording = "memory", WORDING

    def probe(self, where, deadline):
        return Probed((where.placement.namespace, where.kube_name))

    def status_data(self, where, applied, *, stored_written):
        return {"memory": "held"}

    def after_transient(self, placement, error):
        return None

    def cleanup(self, leaving, deadline):
        found = leaving.placement and HELD.pop((leaving.placement.namespace, leaving.kube_name), None)
        return Cleaned({"memory_cleanup": "deleted" if found else "absent"}, "memory entry gone")

    def inspect(self, placement, kube_name, deadline):
        return {"exists": (placement.namespace, kube_name) in HELD}

    def doctor_checks(self):
        return []

    def strays(self, where, deadline):
        return []

    def left_behind(self, cluster_id, leaving, deadline):
        return []

    def fleet_notes(self):
        return []


REGISTRATION = Registration("memory", WORDING, lambda wiring: MemoryDelivery())
'''

MODE_SETTINGS = '''
"""The memory mode's settings: MEMORY_SLOTS, 1 to 9, only with KUBERNETES_DELIVERY=memory."""
from pullsecret.errors import ConfigError


def read(env, mode):
    slots = env.get("MEMORY_SLOTS")
    if mode != "memory":
        if slots is not None:
            raise ConfigError(f"MEMORY_SLOTS must be unset with KUBERNETES_DELIVERY={mode}")
        return {}
    if slots is not None and slots not in tuple("123456789"):
        raise ConfigError(f"MEMORY_SLOTS must be 1 to 9, got {slots!r}")
    return {"memory_slots": int(slots or 1)}
'''

SOURCE_PACKAGE = '''
"""A throwaway source made by the recipe: a pull secret per cluster, minted on first use."""
import base64, json

from pullsecret.model import dockerconfig
from pullsecret.source.base import Registration, Source

MINTED = {}  # cluster id -> serial: the "service"


def document(serial):
    auth = base64.b64encode(f"mint{serial}:t{serial}".encode()).decode()
    return dockerconfig.parse({"auths": {"mint.example": {"auth": auth}}}, source="mint")


class Fetch:
    ready, wrote = True, False

    def __init__(self, cluster_id):
        self.cluster_id = cluster_id

    def pull_secret(self, act, deadline, *, create=True):
        MINTED.setdefault(self.cluster_id, 1)
        return document(MINTED[self.cluster_id])

    def status_data(self):
        return {"mint_serial": MINTED.get(self.cluster_id)}


class MintSource(Source):  # the base's defaults for the optional parts: `notified`, `rekeying`
    name, own_credentials = "mint", True

    def start(self, cluster_id, deadline, *, first=False):
        return Fetch(cluster_id)

    def revoke(self, cluster_id, deadline):
        return {"mint_revoked": MINTED.pop(cluster_id, None) is not None}

    def doctor_checks(self):
        return []


REGISTRATION = Registration("mint", True, lambda wiring: MintSource())
'''


@pytest.fixture
def recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """The two packages on sys.path, each registered by its one line."""
    files = {
        "throwaway_memory/__init__.py": '"""A throwaway delivery mode."""',
        "throwaway_memory/mode.py": MODE_PACKAGE,
        "throwaway_memory/settings.py": MODE_SETTINGS,
        "throwaway_mint/__init__.py": SOURCE_PACKAGE,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    mode, source = importlib.import_module("throwaway_memory.mode"), importlib.import_module("throwaway_mint")
    monkeypatch.setitem(modes.MODES, "memory", "throwaway_memory.mode")  # the mode's one line
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, source.REGISTRATION))  # the source's one line
    yield mode, source
    for package in ("throwaway_memory", "throwaway_memory.mode", "throwaway_memory.settings", "throwaway_mint"):
        sys.modules.pop(package, None)


class MemoryKit:
    def __init__(self, module: Any) -> None:
        self.module = module

    def settings(self, settings: Settings) -> Settings:
        return replace(settings, kubernetes_delivery="memory")

    def build(self, world: conformance.World, settings: Settings) -> Delivery:
        return modes.build(delivery_base.Wiring(settings, None, world.sm))  # type: ignore[arg-type]

    def delivered(self, world: conformance.World) -> bytes | None:
        held = self.module.HELD.get((conformance.NAMESPACE, conformance.KUBE_NAME))
        return None if held is None else bytes(held[1])

    def damage(self, world: conformance.World) -> None:
        generation, _ = self.module.HELD[(conformance.NAMESPACE, conformance.KUBE_NAME)]
        self.module.HELD[(conformance.NAMESPACE, conformance.KUBE_NAME)] = (generation, b"{}")


class MintKit:
    def __init__(self, module: Any) -> None:
        self.module = module

    def settings(self, settings: Settings) -> Settings:
        return settings

    def build(self, world: conformance.World, settings: Settings) -> Source:
        registered = next(s for s in sources.SOURCES if s.name == "mint")
        built = registered.build(source_base.Wiring(settings, world.store(), conformance.InlineExecutor()))  # type: ignore[arg-type]
        assert built is not None
        return built

    def change(self, world: conformance.World) -> None:
        self.module.MINTED[conformance.CID] += 1

    def holds(self, world: conformance.World) -> bool:
        return conformance.CID in self.module.MINTED


@pytest.mark.parametrize("source", sorted(conformance.SOURCE_KITS))
def test_a_mode_made_by_the_recipe_passes_the_conformance_story(recipe: tuple[Any, Any], source: str) -> None:
    mode, _ = recipe
    assert modes.registration("memory").mode == "memory"
    conformance.story(MemoryKit(mode), conformance.SOURCE_KITS[source]())


@pytest.mark.parametrize("mode", sorted(conformance.DELIVERY_KITS))
def test_a_source_made_by_the_recipe_passes_the_conformance_story(recipe: tuple[Any, Any], mode: str) -> None:
    _, source = recipe
    conformance.story(conformance.DELIVERY_KITS[mode](), MintKit(source))


def test_a_mode_and_a_source_made_by_the_recipe_pass_together(recipe: tuple[Any, Any]) -> None:
    mode, source = recipe
    conformance.story(MemoryKit(mode), MintKit(source))


def test_a_source_made_by_the_recipe_has_the_optional_parts_by_default(recipe: tuple[Any, Any]) -> None:
    # A notification it does not follow is acknowledged; `rekey` publishes events only and refuses what needs
    # credentials of a cluster's own to rotate; CREDS says it has none to compare.
    _, module = recipe
    source = MintKit(module).build(conformance.World(), conformance.SETTINGS)
    notification = events.SecretVersionAdded("projects/1/secrets/s", "projects/1/secrets/s/versions/2", "m", "pubsub")
    assert source.notified(notification, hyperfleet=None, deadline=Deadline(5)) == Notified("ignored")  # type: ignore[arg-type]
    rekeying = source.rekeying()
    assert rekeying.refusal(created_before=False, compromise=False) is None
    assert "--compromise needs" in str(rekeying.refusal(created_before=False, compromise=True))
    assert rekeying.rotate(conformance.CID, cutoff=0.0, compromise=False) == Rekeyed("current")
    assert rekeying.preview(conformance.CID, cutoff=0.0, compromise=False) == "reconcile event"
    fleet = rekeying.whole_fleet(None, None, out=print, sleep=lambda s: None, watch_s=None)  # type: ignore[arg-type]
    assert fleet is None  # the command goes cluster by cluster
    assert rekeying.held(conformance.CID, {}).state == "-"


def test_the_configuration_accepts_a_mode_made_by_the_recipe_and_its_own_settings(recipe: tuple[Any, Any]) -> None:
    env = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/1"}
    settings = configured.load({**env, "KUBERNETES_DELIVERY": "memory", "MEMORY_SLOTS": "3"})
    assert settings.kubernetes_delivery == "memory" and settings.options["memory_slots"] == 3
    with pytest.raises(ConfigError, match="MEMORY_SLOTS must be 1 to 9"):
        configured.load({**env, "KUBERNETES_DELIVERY": "memory", "MEMORY_SLOTS": "12"})
    with pytest.raises(ConfigError, match="MEMORY_SLOTS must be unset with KUBERNETES_DELIVERY=direct"):
        configured.load({**env, "MEMORY_SLOTS": "3"})
