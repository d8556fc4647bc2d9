"""An operator's second day (issue 43), the CLI's side: a shell that differs from the running playground refused
before it writes (pullsecret.operator.playground), a dead port-forward told apart from a stopped playground
(staleness), the endpoint really tried named at once (reach)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from pullsecret import configured
from pullsecret.operator import inspect, playground, reach, staleness
from pullsecret.settings import common


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _record(cwd: Path, settings: dict[str, str], *, pid: int | None = None) -> None:
    (cwd / ".playground").mkdir(exist_ok=True)
    record = {"format": 1, "pid": os.getpid() if pid is None else pid, "settings": settings, "unset": []}
    (cwd / ".playground" / "settings.json").write_text(json.dumps(record))


PLAYED = {"HYPERFLEET_API_URL": "http://127.0.0.1:4711/", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/1"}


def test_a_shell_left_from_an_external_secrets_playground_is_refused_naming_each_difference(tmp_path: Path) -> None:
    _record(tmp_path, PLAYED)
    stale = {
        **PLAYED,
        "HYPERFLEET_API_URL": "http://127.0.0.1:4242/",
        "KUBERNETES_DELIVERY": "external-secrets",
        "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": "principal://x/{namespace}",
        "LOG_LEVEL": "DEBUG",  # how, not what: never a difference
    }
    said = playground.refusal(stale, tmp_path)
    assert said is not None and said.startswith("refusing to write"), said
    assert "KUBERNETES_DELIVERY: here 'external-secrets', playground unset" in said
    assert "HYPERFLEET_API_URL: here 'http://127.0.0.1:4242/', playground 'http://127.0.0.1:4711/'" in said
    assert "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE" in said and "LOG_LEVEL" not in said
    assert "source .playground/env" in said and said.endswith("nothing was written")
    assert playground.refusal(dict(PLAYED), tmp_path) is None  # a sourced shell agrees
    assert playground.refusal({**PLAYED, "KUBERNETES_DELIVERY": "DIRECT"}, tmp_path) is None  # as the function reads


def test_a_shell_aimed_at_a_real_api_or_a_stopped_playground_is_not_compared(tmp_path: Path) -> None:
    _record(tmp_path, PLAYED)
    assert playground.refusal({"HYPERFLEET_API_URL": "https://api.example.com/"}, tmp_path) is None
    _record(tmp_path, PLAYED, pid=2**22 + 17)  # no such process: the playground stopped without its cleanup
    assert playground.refusal({"HYPERFLEET_API_URL": "http://127.0.0.1:1/"}, tmp_path) is None
    assert playground.unsourced_hint({}, tmp_path) == ""


def test_a_fresh_shell_next_to_a_running_playground_is_told_to_source_its_env_file(tmp_path: Path) -> None:
    _record(tmp_path, PLAYED)
    assert "run `source .playground/env` in this shell first" in playground.unsourced_hint({}, tmp_path)
    assert playground.unsourced_hint({"HYPERFLEET_API_URL": "https://api.example.com"}, tmp_path) == ""


def test_a_dead_port_forward_is_not_called_a_stopped_playground(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/"
    said = staleness.hint({"HYPERFLEET_API_URL": url}, cwd=tmp_path)
    assert said is not None and "playground that stopped" not in said, said
    assert "no playground's" in said and "kubectl port-forward" in said and url.rstrip("/") in said
    gone = {"HYPERFLEET_API_URL": url, "HYPERFLEET_API_TOKEN_FILE": str(tmp_path / "no-such-token")}
    assert "playground that stopped" not in str(staleness.hint(gone, cwd=tmp_path))


def _refused(address: tuple[str, int], timeout: float) -> object:
    raise OSError(-3, "Temporary failure in name resolution")


def test_an_unset_emulator_variable_names_googles_endpoint_at_once() -> None:
    settings = common.load(PLAYED)
    said = reach.unreachable(settings, connect=_refused, playground_running=True)
    assert said is not None and said.startswith("cannot reach Secret Manager at secretmanager.googleapis.com:443")
    assert "SECRET_MANAGER_EMULATOR_HOST is unset" in said and "source .playground/env" in said
    emulated = common.load(
        {**PLAYED, "SECRET_MANAGER_EMULATOR_HOST": "127.0.0.1:9", "GKE_EMULATOR_HOST": "127.0.0.1:9"}
    )
    said = reach.unreachable(emulated, connect=_refused)
    assert said is not None and "at 127.0.0.1:9 (the emulator SECRET_MANAGER_EMULATOR_HOST names)" in said
    assert reach.unreachable(emulated, connect=lambda address, timeout: None) is None


def test_fleets_delivery_column_fits_its_longest_cell_and_its_counts_agree() -> None:
    from types import SimpleNamespace

    from pullsecret.operator import fleet

    long = "no placement: " + "x" * 60
    view = fleet.View(rows=[fleet.Row("cls-a", 1, "Available=True g1", "v1 ENABLED", "g1", long)])
    view.rows.append(fleet.Row("cls-b", 2, "Available=True g2", "v2 ENABLED", "g2", "Secret abc g2"))
    app: Any = SimpleNamespace(
        settings=SimpleNamespace(adapter_name="pullsecret"), delivery=SimpleNamespace(mode="direct")
    )
    lines = fleet.render(view, app)
    header, first, second = lines[1], lines[2], lines[3]
    column = header.index("DISAGREES")
    assert first[column - 1 :] == " -" and second[column - 1 :] == " -", lines  # each row's DISAGREES under its head
    # What --fix does (issue 52, item 6): the Kubernetes Secret without a fix of its own goes with its cluster's secret.
    assert fleet.fix_hint(1, 2) == (
        "run again with --fix to remove these 2 (ours): 1 removal; the other 1 goes with its cluster's secret "
        "(the delivery is cleaned up first)"
    )
    assert fleet.fix_hint(2, 2) == "run again with --fix to remove these 2 (ours)"


def test_inspect_says_not_applicable_for_a_delivery_that_shows_no_content() -> None:

    ours = {"data": {"fingerprint": "199aa65c12c1ffff"}}
    external = {"delivery": "external-secrets", "access_member": "serviceAccount:p.svc.id.goog[ns/eso]"}
    assert inspect.in_sync(ours, external, {"name": "projects/p/secrets/s"}) == "not applicable"
    assert inspect.in_sync(ours, {"exists": True, "content_fingerprint": "199aa65c12c1"}, {}) is True
    assert inspect.in_sync(ours, {"exists": False}, {}) is False


def test_counts_are_whole_numbers_and_mode_names_are_compared_one_way() -> None:
    import pytest

    from pullsecret.errors import ConfigError

    for bad in ("zero", "2.7", "-1", "0"):
        with pytest.raises(ConfigError) as raised:
            common.load({**PLAYED, "RETAIN_VERSIONS": bad})
        assert "RETAIN_VERSIONS must be a whole number from 1 to 100" in str(raised.value), bad
        assert "seconds" not in str(raised.value)
    assert common.load({**PLAYED, "RETAIN_VERSIONS": " 5 "}).retain_versions == 5
    template = (
        "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
        "mgmt.svc.id.goog/subject/ns/{namespace}/sa/hyperfleet-pull-secret-reader"
    )
    mixed = {**PLAYED, "KUBERNETES_DELIVERY": "External-Secrets", "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": template}
    assert configured.load(mixed).kubernetes_delivery == "external-secrets"


def test_the_playgrounds_source_is_case_insensitive_and_its_error_names_the_make_variable() -> None:
    import subprocess
    import sys

    from emulators import __main__ as emulators_main
    from tests.support import ROOT, clean_env

    assert emulators_main._source("Service") == "service" and emulators_main._source(None) in emulators_main.SOURCES
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "playground", "--state-dir", "/nonexistent/h43"],
        cwd=ROOT,
        env=clean_env(SOURCE="Servce"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stderr == "", done.stderr
    assert done.stdout == "configuration error: SOURCE must be platform or service, got 'Servce'; nothing was started\n"
    make = subprocess.run(["make", "-n", "up", "SOURCE=service"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert "--source" not in make.stdout, make.stdout  # SOURCE reaches it as a variable: its error names SOURCE


def test_a_cluster_waiting_on_its_dependencies_reads_as_waiting_within_the_frameworks_health() -> None:
    from pullsecret.model import status

    report = status.preconditions_not_met(3, "waiting for adapters: dns (no status)")
    health = next(c for c in report.conditions if c.type == "Health")
    assert (health.status, health.reason) == ("False", "ResourcesSkipped")  # the framework's pairing, unchanged
    assert health.message.startswith("Resources skipped: waiting for adapters: dns (no status)")
    assert "waiting, nothing failed" in health.message
