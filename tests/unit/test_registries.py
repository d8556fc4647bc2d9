"""The two registries are one shape and the model reads them instead of naming implementations: each registration is
its package's `registration` module's REGISTRATION (a name, a settings record whose every field has a default, its
declarations, a factory importing its machinery when built); no module under pullsecret/model/ names what an
implementation declares; terraform's KUBERNETES_DELIVERY values are the registered modes'."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pullsecret import configured
from pullsecret.delivery import modes
from pullsecret.model import status
from pullsecret.settings.common import Settings
from pullsecret.source import sources
from pullsecret.source.platform.settings import PlatformSettings

ROOT = Path(__file__).resolve().parents[2]
VERSION = "projects/p/secrets/s/versions/1"
REGISTRATIONS = [*modes.MODES, *sources.SOURCES]
# Words an implementation declares that the model also uses for something else, each with what it is there.
HOMONYMS = {
    "platform": "the platform side of a merge (MERGE_PRECEDENCE) and a cluster's spec.platform",
    "direct": "a CloudEvent's transport (model/events.py: Sentinel's direct publish)",
    "source": "a shadowed registry key's side in the merge's details (model/dockerconfig.py)",
    "kubernetes_resource_version": "a field of data.lineage (model/lineage.py), '' in a mode whose object has none",
}


@pytest.mark.parametrize("registered", REGISTRATIONS, ids=lambda r: r.name)
def test_each_registration_is_its_packages_registration_module_with_a_defaulted_settings_record(
    registered: object,
) -> None:
    module = sys.modules[registered.build.__module__]  # type: ignore[attr-defined]
    assert module.__name__.endswith(".registration") and module.REGISTRATION is registered
    reader = registered.settings  # type: ignore[attr-defined]
    assert reader is not None
    record = reader({}, "none of them")  # under another implementation: its defaults, no variable needed
    assert dataclasses.is_dataclass(record) and type(record)() == record  # Settings.of answers kind() when absent


def test_names_and_selecting_variables_are_unique() -> None:
    assert len(modes.names()) == len(set(modes.names()))
    names = [registered.name for registered in sources.SOURCES]
    variables = [registered.selected_by for registered in sources.SOURCES]
    assert len(set(names)) == len(names) and len(set(variables)) == len(variables)


def _model_strings() -> list[tuple[str, int, str]]:
    """Every string constant in pullsecret/model/ that is not a docstring: (module, line, text)."""
    found = []
    for path in sorted((ROOT / "pullsecret" / "model").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            (path.name, node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        ]
    return found


def test_no_model_module_names_what_an_implementation_declares() -> None:
    declared: dict[str, str] = {}
    for registered in REGISTRATIONS:
        own = registered.declared
        keys = set(typing.get_type_hints(own.keys)) if own.keys is not None else set()
        services = set(own.services) - status.RESOURCE_SERVICES  # Secret Manager: every deployment's store
        for word in {registered.name, *own.reasons, *services, *keys}:
            declared[word] = registered.name
    named = [
        f"model/{module}:{line} {text!r} ({declared[text]})"
        for module, line, text in _model_strings()
        if text in declared and text not in HOMONYMS
    ]
    assert not named, named
    assert "pullsecret.delivery." not in str(_model_strings()) and "pullsecret.source." not in str(_model_strings())


def test_terraforms_delivery_modes_are_the_registered_ones() -> None:
    text = (ROOT / "terraform" / "variables.tf").read_text(encoding="utf-8")
    block = text.split('variable "kubernetes_delivery" {', 1)[1].split("\n}\n", 1)[0]
    listed = re.search(r"contains\(\[([^\]]*)\], var\.kubernetes_delivery\)", block)
    assert listed is not None, "terraform/variables.tf: kubernetes_delivery's validation lists no values"
    assert json.loads(f"[{listed.group(1)}]") == list(modes.names())
    said = re.search(r'error_message\s*=\s*"([^"]*)"', block)
    assert said is not None and all(name in said.group(1) for name in modes.names())


def test_an_external_secrets_cold_start_imports_none_of_direct_modes_machinery() -> None:
    """The registries import each mode's registration, never its machinery (the factory imports it when built)."""
    code = (
        "import sys, json\n"
        "from pullsecret import configured\n"
        "from pullsecret.delivery import base, modes\n"
        "settings = configured.load({'HYPERFLEET_API_URL': 'http://127.0.0.1:8000',"
        " 'PULL_SECRET_SOURCE': 'projects/p/secrets/s/versions/1', 'KUBERNETES_DELIVERY': 'external-secrets',"
        " 'EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE': 'principal://iam.googleapis.com/projects/1/x/{namespace}'})\n"
        "modes.build(base.Wiring(settings, None, None))\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "pullsecret.delivery.external_secrets.mode" in loaded
    direct = {m for m in loaded if m.startswith("pullsecret.delivery.direct.")}
    assert direct == {
        "pullsecret.delivery.direct.registration",
        "pullsecret.delivery.direct.reports",
        "pullsecret.delivery.direct.settings",
    }
    assert not {m for m in loaded if m.split(".")[0] == "kubernetes"}
    # No source was built: each source's machinery stays out too (its registration and settings are read).
    assert not loaded & {"pullsecret.source.platform.source", "pullsecret.source.service.source"}


def test_two_registrations_reading_one_settings_record_class_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings.of finds a record by its class: a second one of the same class would shadow the first."""
    platform = sources.registration("platform")
    twin = dataclasses.replace(platform, name="twin", selected_by="TWIN_SOURCE")
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, twin))
    with pytest.raises(TypeError, match="PlatformSettings"):
        configured.load({"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "TWIN_SOURCE": "x"})


def test_a_record_is_read_back_by_its_class_and_replaced_by_one_of_its_class() -> None:
    settings = configured.load({"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": VERSION})
    assert settings.of(PlatformSettings).version == VERSION
    moved = settings.with_own(PlatformSettings("projects/p/secrets/t/versions/2"))
    assert moved.of(PlatformSettings).version == "projects/p/secrets/t/versions/2"
    assert len(moved.own) == len(settings.own)  # replaced, not added beside it
    assert Settings(hyperfleet_api_url="x").of(PlatformSettings) == PlatformSettings()  # by hand: its defaults
