"""Trying the bench out (`python -m bench --quick`, `--only`) never overwrites the tracked figures and plots; a full
run writes bench/README.md's tables from its own results, with the labels it prints."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from bench.__main__ import RESULTS, results_path
from tests.support import ROOT


def test_only_the_full_run_writes_the_tracked_results() -> None:
    assert results_path(quick=False, only=None) == RESULTS
    for quick, only in ((True, None), (False, "burst"), (True, "flows")):
        elsewhere = results_path(quick=quick, only=only)
        assert elsewhere.parent != RESULTS.parent
        relative = str(elsewhere.relative_to(ROOT))
        # Ignored by git, so a quick run leaves `git status` clean.
        ignored = subprocess.run(["git", "check-ignore", "-q", relative], cwd=ROOT, check=False)
        assert ignored.returncode == 0, relative


def test_one_run_writes_every_readme_table_with_the_printed_labels(tmp_path: Path) -> None:
    from bench import report

    results: dict[str, Any] = {
        "machine": {"when": "2026-01-01T00:00:00Z", "cpus": 2, "loadavg_at_start": [0.5], "loadavg": [0.7]},
        "writes_per_changed_cluster": 1.0,
        "cpu_ms_per_event": 5.0,
        "critical_path_round_trips": {"first": 6.0, "change": 5.0, "steady": 3.0},
        "throughput_detail": {"80": {"function_cpu_ms_per_event": 4.0}},
        "seed_flow": {"throughput_detail": {"80": {"function_cpu_ms_per_event": 10.0}}},
    }
    report.derive(results)
    assert results["events_per_function_cpu_second"] == 250
    results_dir = tmp_path / "bench" / "results"
    results_dir.mkdir(parents=True)
    readmes = []
    for relative in ("bench/README.md",):
        text = (ROOT / relative).read_text()
        assert report.BEGIN in text and report.END in text, f"{relative} has no table block for the bench to fill"
        (tmp_path / relative).write_text(text)
        readmes.append(tmp_path / relative)
    written = report.publish(results, results_dir, tuple(readmes))
    assert written == [results_dir / report.TABLES_MD, *readmes]
    printed = {line[:52].strip() for line in report.text_table(results).splitlines()[2:]}
    for readme in readmes:
        text = readme.read_text()
        block = text.split(report.BEGIN, 1)[1].split(report.END, 1)[0]
        labels = {row.split("|")[1].strip() for row in block.splitlines() if row.startswith("| ") and "---" not in row}
        assert labels - {"figure"} == printed
        # A figure off its target says the target, and where its profile is (issue 34).
        assert "| round trips: change | **5** |  | ≤ 4 | no: target ≤ 4 |" in block
        link = "bench/results/throughput.png" if readme.parent == tmp_path else "(results/throughput.png)"
        assert link in block
        profile = "bench/results/" if readme.parent == tmp_path else "results/"
        assert f"| ≤ 3 | no: target ≤ 3; profile [profile-inproc.txt]({profile}profile-inproc.txt) |" in block


def test_instruction_counts_are_tabled_in_millions_per_event_and_per_mode() -> None:
    from bench import report

    results: dict[str, Any] = {
        "instructions": {
            "steady": 41_234_567,
            "first": 98_765_432,
            "import_main": {"direct": 1_645_257_905, "external-secrets": 1_645_007_046, "service": 1_645_337_437},
        },
        "cold_start_s_by_mode": {"direct": 0.45, "external-secrets": 0.52},
    }
    report.derive(results)
    assert results["instructions_m"] == {
        "steady": 41.23,
        "first": 98.77,
        "import_direct": 1645.3,
        "import_external-secrets": 1645.0,
        "import_service": 1645.3,
    }
    table = report.markdown(results)
    assert "| instructions per steady event, in process (M) | 41.23 |" in table
    assert "| cold start, external-secrets delivery (s) | **0.52** |  | ≤ 0.5 | no: target ≤ 0.5" in table


def test_the_readmes_service_mode_figures_are_the_tracked_runs() -> None:
    import json

    results = json.loads(RESULTS.read_text())
    rekey, steady = results["rekey"], results["service_steady"]
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Performance", 1)[1].split("\n## ", 1)[0]
    assert f"| {steady['requests_per_ready_cluster_per_hour']} |" in section
    share = round(steady["budget_share_at_10000"] * 100)
    assert f"{steady['largest_fleet_half_budget']:,} clusters (10,000 use {share} %)" in section
    ratio = f"{rekey['seconds']:,} s / {rekey['bound_seconds']:,.0f} s = {rekey['ratio_to_bound']:.2f}"
    assert ratio in section
    assert f"| {rekey['old_credentials_still_accepted']} of {rekey['clusters']:,} clusters' |" in section
    assert f"| {rekey['new_clusters_ready_s_max']} s |" in section
