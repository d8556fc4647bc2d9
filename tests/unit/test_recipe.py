"""The recipe of docs/design.md ("Adding a delivery mode or a source"): a throwaway mode and a throwaway source, each
one package written here into a temporary directory beside the others (on the path of pullsecret.delivery and
pullsecret.source) plus one registration line, are accepted by the function's own configuration
(`pullsecret.configured.load`, then the registries' `build`), alone and beside the registered ones (two
sources selected at once: one error naming every registered variable); their declared reasons and status keys reach
the reports; they pass the conformance story (tests/fakes/conformance.py) with every registered source and mode,
reading no other implementation; and the fence (tests/unit/fence.py) finds them until the contracts name them."""

from __future__ import annotations

import importlib
import sys
import textwrap
import typing
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pullsecret.delivery
import pullsecret.source
from pullsecret import configured, declared
from pullsecret.delivery import base as delivery_base
from pullsecret.delivery import modes
from pullsecret.delivery.base import Delivery
from pullsecret.errors import ConfigError
from pullsecret.model import events, status
from pullsecret.model.status_data import StatusData
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings
from pullsecret.source import base as source_base
from pullsecret.source import sources
from pullsecret.source.base import Notified, Rekeyed, Source
from tests.fakes import conformance, hyperfleet
from tests.unit import fence

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

# One package per implementation, using only the seams' neutral types: a delivery that keeps what it delivers in
# a dict (its "cluster"), a source that mints a pull secret per cluster (its "service"). Each has its settings
# record, its registration (declarations, and a factory importing its machinery when built) and its machinery.
MODE = {
    "__init__.py": '"""KUBERNETES_DELIVERY=memory: the pull secret held in a dict (a throwaway mode)."""',
    "settings.py": '''
        """The memory mode's settings: MEMORY_SLOTS, 1 to 9, only with KUBERNETES_DELIVERY=memory."""
        from dataclasses import dataclass

        from pullsecret.errors import ConfigError

        MODE = "memory"


        @dataclass(frozen=True)
        class MemorySettings:
            slots: int = 1


        def read(env, mode):
            slots = env.get("MEMORY_SLOTS")
            if mode != MODE:
                if slots is not None:
                    raise ConfigError(f"MEMORY_SLOTS must be unset with KUBERNETES_DELIVERY={mode}")
                return MemorySettings()
            if slots is not None and slots not in tuple("123456789"):
                raise ConfigError(f"MEMORY_SLOTS must be 1 to 9, got {slots!r}")
            return MemorySettings(int(slots or 1))
    ''',
    "registration.py": '''
        """KUBERNETES_DELIVERY=memory as pullsecret.delivery.modes registers it."""
        from typing import TypedDict

        from pullsecret.delivery.base import Registration, Wording
        from pullsecret.delivery.memory import settings
        from pullsecret.model.status import Declared

        WORDING = Wording("Pull secret held.", "Pull secret with its own credentials held.", "changed", "unchanged")


        class MemoryData(TypedDict, total=False):
            memory: str
            memory_cleanup: str


        REASONS = {"MemoryFull": "No room is left for the pull secret; the platform team must make some."}


        def build(wiring):
            from pullsecret.delivery.memory import mode

            return mode.MemoryDelivery(wiring.settings.of(settings.MemorySettings).slots)


        REGISTRATION = Registration(
            settings.MODE, WORDING, build, settings.read, Declared(MemoryData, REASONS, services=("memory",))
        )
    ''',
    "mode.py": '''
        """The memory mode's machinery."""
        from pullsecret.delivery.base import Cleaned, Delivered, DryRun
        from pullsecret.delivery.memory.registration import WORDING
        from pullsecret.errors import TerminalError

        HELD = {}  # (namespace, name) -> (generation, content): the "cluster"


        class Probed:
            def __init__(self, key, slots):
                self.key, self.slots = key, slots
                held = HELD.get(key)
                self.present, self.recorded_generation = held is not None, held[0] if held else 0
                self.recorded_lineage = None

            def apply(self, desired, deadline):
                held = HELD.get(self.key)
                if held is None and len(HELD) >= self.slots:
                    raise TerminalError("no slot left", reason="MemoryFull", service="memory")
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

            def __init__(self, slots):
                self.slots = slots

            def probe(self, where, deadline):
                return Probed((where.placement.namespace, where.kube_name), self.slots)

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
    ''',
}

SOURCE = {
    "__init__.py": '"""A throwaway source (MINT_URL): a pull secret per cluster, minted on first use."""',
    "settings.py": '''
        """The mint source's settings: MINT_URL selects it."""
        from dataclasses import dataclass

        NAME, SELECTED_BY = "mint", "MINT_URL"


        @dataclass(frozen=True)
        class MintSettings:
            url: str | None = None


        def read(env, selected):
            return MintSettings(env.get(SELECTED_BY) if selected == NAME else None)
    ''',
    "registration.py": '''
        """The mint source as pullsecret.source.sources registers it."""
        from typing import TypedDict

        from pullsecret.model.status import Declared
        from pullsecret.source.base import Registration
        from pullsecret.source.mint import settings


        class MintData(TypedDict, total=False):
            mint_serial: int
            mint_revoked: bool


        REASONS = {"MintRefused": "The mint refused this cluster; the platform team must fix it."}


        def build(wiring):
            from pullsecret.source.mint import source

            return source.MintSource(wiring.settings.of(settings.MintSettings).url)


        REGISTRATION = Registration(
            settings.NAME,
            settings.SELECTED_BY,
            "a mint of per-cluster pull secrets",
            True,
            build,
            settings.read,
            Declared(MintData, REASONS, services=("mint",)),
        )
    ''',
    "source.py": '''
        """The mint source's machinery."""
        import base64

        from pullsecret.model import dockerconfig
        from pullsecret.source.base import Source

        MINTED = {}  # cluster id -> serial: the "service"


        def document(serial):
            auth = base64.b64encode(f"mint{serial}:t{serial}".encode()).decode()
            return dockerconfig.parse({"auths": {"mint.example": {"auth": auth}}}, source="mint")


        class Fetch:
            ready, wrote = True, False

            def __init__(self, cluster_id):
                self.cluster_id = cluster_id

            def pull_secret(self, act, deadline, *, create=True, newest=None):
                MINTED.setdefault(self.cluster_id, 1)
                return document(MINTED[self.cluster_id])

            def status_data(self):
                return {"mint_serial": MINTED.get(self.cluster_id)}


        class MintSource(Source):  # the base's defaults for the optional parts: `notified`, `rekeying`
            name, own_credentials = "mint", True

            def __init__(self, url):
                self.url = url

            def start(self, cluster_id, deadline, *, first=False):
                return Fetch(cluster_id)

            def revoke(self, cluster_id, deadline):
                return {"mint_revoked": MINTED.pop(cluster_id, None) is not None}

            def doctor_checks(self):
                return []
    ''',
}
BASE = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000"}
PLATFORM = {**BASE, "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/1"}
MINT = {**BASE, "MINT_URL": "https://mint.example"}


@dataclass(frozen=True)
class Recipe:
    mode: ModuleType  # pullsecret.delivery.memory.mode
    source: ModuleType  # pullsecret.source.mint.source
    memory_settings: type
    mint_settings: type


def _write(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


@pytest.fixture
def recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recipe]:
    """Step 1: each package beside the others (here on the seam packages' path); step 2: its one registration line."""
    _write(tmp_path / "delivery" / "memory", MODE)
    _write(tmp_path / "source" / "mint", SOURCE)
    monkeypatch.setattr(pullsecret.delivery, "__path__", [*pullsecret.delivery.__path__, str(tmp_path / "delivery")])
    monkeypatch.setattr(pullsecret.source, "__path__", [*pullsecret.source.__path__, str(tmp_path / "source")])
    memory = importlib.import_module("pullsecret.delivery.memory.registration")
    mint = importlib.import_module("pullsecret.source.mint.registration")
    monkeypatch.setattr(modes, "MODES", (*modes.MODES, memory.REGISTRATION))  # the mode's one line
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, mint.REGISTRATION))  # the source's one line
    monkeypatch.setattr(declared, "WORDS", declared.assemble())  # as the import of the registries would assemble it
    yield Recipe(
        importlib.import_module("pullsecret.delivery.memory.mode"),
        importlib.import_module("pullsecret.source.mint.source"),
        importlib.import_module("pullsecret.delivery.memory.settings").MemorySettings,
        importlib.import_module("pullsecret.source.mint.settings").MintSettings,
    )
    for name in [m for m in sys.modules if m.startswith(("pullsecret.delivery.memory", "pullsecret.source.mint"))]:
        sys.modules.pop(name)


class MemoryKit:
    """The mode through the registry, on the settings configured.load gives it."""

    def __init__(self, recipe: Recipe) -> None:
        self.recipe = recipe
        self.loaded = configured.load({**PLATFORM, "KUBERNETES_DELIVERY": "memory", "MEMORY_SLOTS": "2"})

    def settings(self, settings: Settings) -> Settings:
        return replace(settings, kubernetes_delivery="memory").with_own(self.loaded.of(self.recipe.memory_settings))

    def build(self, world: conformance.World, settings: Settings) -> Delivery:
        return modes.build(delivery_base.Wiring(settings, None, world.sm))  # type: ignore[arg-type]

    def delivered(self, world: conformance.World) -> bytes | None:
        held = self.recipe.mode.HELD.get((conformance.NAMESPACE, conformance.KUBE_NAME))
        return None if held is None else bytes(held[1])

    def damage(self, world: conformance.World) -> None:
        generation, _ = self.recipe.mode.HELD[(conformance.NAMESPACE, conformance.KUBE_NAME)]
        self.recipe.mode.HELD[(conformance.NAMESPACE, conformance.KUBE_NAME)] = (generation, b"{}")


class MintKit:
    """The source through the registry, on the settings configured.load gives it."""

    def __init__(self, recipe: Recipe) -> None:
        self.recipe = recipe
        self.loaded = configured.load(MINT)

    def settings(self, settings: Settings) -> Settings:
        return replace(settings, source=self.loaded.source).with_own(self.loaded.of(self.recipe.mint_settings))

    def build(self, world: conformance.World, settings: Settings) -> Source:
        return sources.build(source_base.Wiring(settings, world.store(), conformance.InlineExecutor()))  # type: ignore[arg-type]

    def change(self, world: conformance.World) -> None:
        self.recipe.source.MINTED[conformance.CID] += 1

    def holds(self, world: conformance.World) -> bool:
        return conformance.CID in self.recipe.source.MINTED


def test_the_configuration_accepts_the_mode_alone_and_refuses_its_settings_under_another(recipe: Recipe) -> None:
    settings = configured.load({**PLATFORM, "KUBERNETES_DELIVERY": "memory", "MEMORY_SLOTS": "3"})
    assert settings.kubernetes_delivery == "memory" and settings.of(recipe.memory_settings).slots == 3
    built = modes.build(delivery_base.Wiring(settings, None, None))  # type: ignore[arg-type]
    assert isinstance(built, recipe.mode.MemoryDelivery) and built.slots == 3  # its own record, not shadowed
    beside = configured.load(PLATFORM)  # both registered, the default chosen: the new one's record read too
    assert beside.kubernetes_delivery == "direct" and beside.of(recipe.memory_settings).slots == 1
    with pytest.raises(ConfigError, match="MEMORY_SLOTS must be 1 to 9"):
        configured.load({**PLATFORM, "KUBERNETES_DELIVERY": "memory", "MEMORY_SLOTS": "12"})
    with pytest.raises(ConfigError, match="MEMORY_SLOTS must be unset with KUBERNETES_DELIVERY=direct"):
        configured.load({**PLATFORM, "MEMORY_SLOTS": "3"})


def test_the_configuration_accepts_the_source_alone_and_refuses_two_selected(recipe: Recipe) -> None:
    settings = configured.load(MINT)
    assert settings.source == "mint" and settings.of(recipe.mint_settings).url == "https://mint.example"
    built = sources.build(source_base.Wiring(settings, None, None))  # type: ignore[arg-type]
    assert isinstance(built, recipe.source.MintSource) and built.url == "https://mint.example"
    assert configured.load(PLATFORM).source == "platform"  # beside it, the registered one is still chosen alone
    with pytest.raises(ConfigError) as two:
        configured.load({**PLATFORM, "MINT_URL": "https://mint.example"})  # not silently one of them
    assert "PULL_SECRET_SOURCE and MINT_URL are set" in str(two.value)
    with pytest.raises(ConfigError) as none:
        configured.load(BASE)
    for variable in ("PULL_SECRET_SOURCE", "PULL_SECRET_SERVICE_URL", "MINT_URL"):
        assert variable in str(none.value) and variable in str(two.value)


def test_what_they_declare_reaches_the_reports_words(recipe: Recipe) -> None:
    words = declared.WORDS
    assert (
        words.available_message("MemoryFull")
        == "No room is left for the pull secret; the platform team must make some."
    )
    assert words.available_message("MintRefused").startswith("The mint refused this cluster")
    assert words.phase_of("memory") == words.phase_of("mint") == status.PHASE_RESOURCES
    assert {"memory", "memory_cleanup", "mint_serial", "mint_revoked"} <= declared.status_keys()


@pytest.mark.parametrize("source", sorted(conformance.SOURCE_KITS))
def test_a_mode_made_by_the_recipe_passes_the_conformance_story(recipe: Recipe, source: str) -> None:
    conformance.story(MemoryKit(recipe), conformance.SOURCE_KITS[source]())


@pytest.mark.parametrize("mode", sorted(conformance.DELIVERY_KITS))
def test_a_source_made_by_the_recipe_passes_the_conformance_story(recipe: Recipe, mode: str) -> None:
    conformance.story(conformance.DELIVERY_KITS[mode](), MintKit(recipe))


def test_a_mode_and_a_source_made_by_the_recipe_pass_together_reporting_declared_keys_only(
    recipe: Recipe, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict[str, Any]] = []
    report_status = hyperfleet.HyperFleet.report_status

    def recorded(self: hyperfleet.HyperFleet, cluster_id: str, body: dict[str, Any]) -> int:
        sent.append(body)
        return report_status(self, cluster_id, body)

    monkeypatch.setattr(hyperfleet.HyperFleet, "report_status", recorded)
    conformance.story(MemoryKit(recipe), MintKit(recipe))
    keys = {key for body in sent for key in body["data"]}
    assert {"memory", "mint_serial"} <= keys
    assert keys <= set(typing.get_type_hints(StatusData)) | declared.status_keys()


def test_a_source_made_by_the_recipe_has_the_optional_parts_by_default(recipe: Recipe) -> None:
    # A notification it does not follow is acknowledged; `rekey` publishes events only and refuses what needs
    # credentials of a cluster's own to rotate; CREDS says it has none to compare.
    kit = MintKit(recipe)
    source = kit.build(conformance.World(), kit.settings(conformance.SETTINGS))
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


def test_the_fence_finds_them_until_the_contracts_name_them(recipe: Recipe) -> None:
    new = {"pullsecret.delivery.memory", "pullsecret.source.mint"}
    text = PYPROJECT.read_text(encoding="utf-8")
    missing = fence.unfenced(text)
    assert missing == {
        "modes-independent": new,
        "layers": new,
        "operator-no-delivery-impl": {"pullsecret.delivery.memory"},
        "operator-no-source-impl": {"pullsecret.source.mint"},
    }
    # The recipe's step: each package named in the contracts that keep implementations apart.
    named = (
        text.replace(
            '  "pullsecret.source.service",\n]',
            '  "pullsecret.source.service",\n  "pullsecret.delivery.memory",\n  "pullsecret.source.mint",\n]',
            1,
        )
        .replace(
            '| pullsecret.source.service",',
            '| pullsecret.source.service | pullsecret.delivery.memory | pullsecret.source.mint",',
            1,
        )
        .replace(
            '"pullsecret.delivery.external_secrets"]\n',
            '"pullsecret.delivery.external_secrets", "pullsecret.delivery.memory"]\n',
            1,
        )
        .replace('"pullsecret.source.service"]\n', '"pullsecret.source.service", "pullsecret.source.mint"]\n', 1)
    )
    assert fence.unfenced(named) == {}
