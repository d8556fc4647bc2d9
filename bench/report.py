"""The bench's tables, from one run's results: printed, written as markdown, and copied into bench/README.md.

Every figure has one label, used in the printed table, in `tables.md` and in bench/README.md, so the words a
reader sees are the words the bench prints. A full run replaces the block between the markers below in
bench/README.md with `tables.md`, so one quiet run refreshes every table (and the plots).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BEGIN = "<!-- bench:tables (written by `make bench`; do not edit by hand) -->"
END = "<!-- /bench:tables -->"
TABLES_MD = "tables.md"


@dataclass(frozen=True)
class Figure:
    label: str
    path: tuple[str, ...]
    target: str = ""
    met: Callable[[float], bool] | None = None
    profile: str = ""  # where a figure off its target is explained: a profile file beside the results


INPROC_PROFILE = "profile-inproc.txt"  # bench.profile: py-spy over steady events in process
WORKER_PROFILE = "profile-worker.txt"  # bench.profile: py-spy over the served worker at concurrency 80


def _at_most(bound: float) -> Callable[[float], bool]:
    return lambda value: value <= bound


def _at_least(bound: float) -> Callable[[float], bool]:
    return lambda value: value >= bound


SECTIONS: tuple[tuple[str, tuple[Figure, ...]], ...] = (
    (
        "Writes and bursts",
        (
            Figure("Secret Manager writes per changed cluster", ("writes_per_changed_cluster",), "1", _at_most(1.0)),
            Figure("Secret Manager writes per new cluster", ("writes_per_new_cluster",), "2", _at_most(2.0)),
            Figure("50 duplicates: versions kept", ("duplicates_50", "versions"), "1", _at_most(1)),
            Figure("50 duplicates: Kubernetes writes", ("duplicates_50", "kubernetes_writes"), "1", _at_most(1)),
            Figure("rotation burst (s)", ("burst", "seconds")),
            Figure("rotation bound (s)", ("burst", "quota_bound_seconds")),
            Figure("rotation burst / bound", ("burst", "ratio_to_bound"), "≤ 1.1", _at_most(1.1)),
            Figure("rotation: terminal failures", ("burst", "terminal_failures"), "0", _at_most(0)),
            Figure("rotation: duplicate versions", ("burst", "duplicate_versions"), "0", _at_most(0)),
            Figure("rotation: past deadline", ("burst", "past_deadline"), "0", _at_most(0)),
            Figure("rotation: redeliveries", ("burst", "redeliveries")),
            Figure("rotation: writes refused by the quota", ("burst", "writes_rejected")),
            Figure("rotation: emulators CPU (cores, at most ~1)", ("burst", "cpu", "emulators_cpu_util")),
            Figure(
                "rotation: adapter process CPU per event (ms)", ("burst", "cpu", "adapter_process_cpu_ms_per_event")
            ),
            Figure("new-cluster burst (s)", ("new_cluster_burst", "seconds")),
            Figure("new-cluster bound (s)", ("new_cluster_burst", "quota_bound_seconds")),
            Figure("new-cluster burst / bound", ("new_cluster_burst", "ratio_to_bound"), "≤ 1.1", _at_most(1.1)),
            Figure("rekey -c: the limits it ran under", ("rekey", "limits")),
            Figure("rekey -c: start to last cluster re-keyed (s)", ("rekey", "seconds")),
            Figure("rekey -c: at the DDR's limits (s)", ("rekey", "seconds_at_ddr_limits")),
            Figure("rekey -c: bound, 1 request/cluster/identity (s)", ("rekey", "bound_seconds")),
            Figure("rekey -c / bound", ("rekey", "ratio_to_bound"), "≤ 1.1", _at_most(1.1)),
            Figure("rekey -c: the command's exit code", ("rekey", "exit_code"), "0", _at_most(0)),
            Figure("rekey -c: clusters on the new credentials", ("rekey", "holding_new_credentials")),
            Figure(
                "rekey -c: old credentials still accepted",
                ("rekey", "old_credentials_still_accepted"),
                "0",
                _at_most(0),
            ),
            Figure("rekey -c: 429s answered (by rule)", ("rekey", "answered_429")),
            Figure("rekey -c: new clusters' time to Ready, max (s)", ("rekey", "new_clusters_ready_s_max")),
            Figure("routine rekey at /rotations 10/h (h, computed)", ("rekey", "routine_rekey_hours_at_ddr_limits")),
            Figure(
                "service: requests per ready cluster per hour",
                ("service_steady", "requests_per_ready_cluster_per_hour"),
            ),
            Figure(
                "service: largest fleet in half the budget",
                ("service_steady", "largest_fleet_half_budget"),
                "≥ 10000",
                _at_least(10000),
            ),
        ),
    ),
    (
        "Calls and critical path (L = 25 ms per call)",
        (
            Figure("calls per event: first provisioning", ("calls_per_event", "first")),
            Figure("calls per event: change", ("calls_per_event", "change")),
            Figure("calls per event: steady", ("calls_per_event", "steady"), "≤ 5", _at_most(5)),
            Figure("round trips: first provisioning", ("critical_path_round_trips", "first"), "≤ 5", _at_most(5.2)),
            Figure("round trips: change", ("critical_path_round_trips", "change"), "≤ 4", _at_most(4.2)),
            Figure("round trips: steady", ("critical_path_round_trips", "steady"), "3 (floor)", _at_most(3.2)),
            Figure("critical path: first provisioning (L)", ("critical_path_L", "first"), "≤ 5.2", _at_most(5.2)),
            Figure("critical path: change (L)", ("critical_path_L", "change")),
            Figure("critical path: steady (L)", ("critical_path_L", "steady"), "≤ 3.2", _at_most(3.2)),
            Figure("service mode: calls per event: steady", ("service_mode", "calls_per_event", "steady")),
            Figure(
                "service mode: round trips: steady",
                ("service_mode", "critical_path_round_trips", "steady"),
                "3 (floor)",
                _at_most(3.2),
            ),
            Figure("service mode: critical path: steady (L)", ("service_mode", "critical_path_L", "steady")),
            Figure(
                "service mode: round trips: first provisioning", ("service_mode", "critical_path_round_trips", "first")
            ),
            Figure(
                "service mode: round trips: first, beyond platform",
                ("service_mode", "first_beyond_platform"),
                "≤ 1",
                _at_most(1.0),
            ),
        ),
    ),
    (
        "A cluster owner's worst-shaped pull secret (256 registries, 64 KiB)",
        (
            Figure("CPU of its first event, in process (ms)", ("hostile_pull_secret", "cpu_ms_worst")),
            Figure("CPU of an ordinary first event, same run (ms)", ("hostile_pull_secret", "cpu_ms_ordinary")),
            Figure("worst / ordinary", ("hostile_pull_secret", "ratio"), "a few times", _at_most(10)),
        ),
    ),
    (
        "CPU, throughput, cold start, memory",
        (
            Figure(
                "CPU per steady event, in process (ms)", ("cpu_ms_per_event",), "≤ 3", _at_most(3.0), INPROC_PROFILE
            ),
            Figure("CPU per first-provisioning event, in process (ms)", ("cpu_ms_per_event_first",)),
            Figure(
                "function CPU per event at concurrency 80 (ms)",
                ("throughput_detail", "80", "function_cpu_ms_per_event"),
                "≤ 4",
                _at_most(4.0),
                WORKER_PROFILE,
            ),
            Figure(
                "events per function CPU second at concurrency 80",
                ("events_per_function_cpu_second",),
                "≥ 250",
                _at_least(250),
                WORKER_PROFILE,
            ),
            Figure("events/s at concurrency 1", ("throughput_eps", "1")),
            Figure("events/s at concurrency 8", ("throughput_eps", "8")),
            Figure("events/s at concurrency 32", ("throughput_eps", "32")),
            Figure("events/s at concurrency 80", ("throughput_eps", "80")),
            Figure("cold start to first event (s)", ("cold_start_s",), "≤ 0.5", _at_most(0.5)),
            Figure("cold start to listening (s)", ("cold_start_listening_s",)),
            Figure("import of the entry module (s)", ("import_s",)),
            Figure(
                "cold start, direct delivery (s)",
                ("cold_start_s_by_mode", "direct"),
                "≤ 0.5",
                _at_most(0.5),
            ),
            Figure(
                "cold start, external-secrets delivery (s)",
                ("cold_start_s_by_mode", "external-secrets"),
                "≤ 0.5",
                _at_most(0.5),
            ),
            Figure("import of main, direct delivery (s, median of 5)", ("import_s_by_mode", "direct")),
            Figure(
                "import of main, external-secrets (s, median of 5)",
                ("import_s_by_mode", "external-secrets"),
            ),
            Figure("peak RSS of the worker at concurrency 80 (MiB)", ("peak_rss_mib",), "≤ 100", _at_most(100)),
            Figure("Pss of arbiter + worker (MiB)", ("memory_mib", "pss_sum")),
        ),
    ),
    (
        "Instructions (callgrind; do not move with the machine's load: compare these between runs)",
        (
            Figure("instructions per steady event, in process (M)", ("instructions_m", "steady")),
            Figure("instructions per first-provisioning event (M)", ("instructions_m", "first")),
            Figure("instructions of import main: direct (M)", ("instructions_m", "import_direct")),
            Figure(
                "instructions of import main: external-secrets (M)",
                ("instructions_m", "import_external-secrets"),
            ),
            Figure("instructions of import main: service source (M)", ("instructions_m", "import_service")),
        ),
    ),
)
FIGURES: tuple[Figure, ...] = tuple(f for _, figures in SECTIONS for f in figures)


def dig(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = data
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def derive(results: dict[str, Any]) -> None:
    """Figures computed from others, for the adapter and the seed design alike."""
    for flow in (results, results.get("seed_flow") or {}):
        cpu = dig(flow, ("throughput_detail", "80", "function_cpu_ms_per_event"))
        flow["events_per_function_cpu_second"] = round(1000 / cpu) if isinstance(cpu, (int, float)) and cpu else None
    service_first = dig(results, ("service_mode", "critical_path_round_trips", "first"))
    platform_first = dig(results, ("critical_path_round_trips", "first"))
    if isinstance(service_first, (int, float)) and isinstance(platform_first, (int, float)):
        results["service_mode"]["first_beyond_platform"] = round(service_first - platform_first, 2)
    counted = results.get("instructions") or {}
    if counted:
        millions = {kind: round(counted[kind] / 1e6, 2) for kind in ("steady", "first") if kind in counted}
        for mode, value in (counted.get("import_main") or {}).items():
            millions[f"import_{mode}"] = round(value / 1e6, 1)
        results["instructions_m"] = millions


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _met(figure: Figure, value: Any) -> str:
    if figure.met is None or not isinstance(value, (int, float)):
        return ""
    return "yes" if figure.met(value) else "no"


def _met_cell(figure: Figure, value: Any, plots: str) -> str:
    """`met` in the README: a "no" says the target it misses, and where the profile explaining it is."""
    met = _met(figure, value)
    if met != "no":
        return met
    cell = f"no: target {figure.target}"
    if figure.profile:
        cell += f"; profile [{figure.profile}]({plots}{figure.profile})"
    return cell


def rows(results: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(label, adapter, seed design, target, met) per figure."""
    seed = results.get("seed_flow") or {}
    return [
        (f.label, _shown(dig(results, f.path)), _shown(dig(seed, f.path)), f.target, _met(f, dig(results, f.path)))
        for f in FIGURES
    ]


def text_table(results: dict[str, Any]) -> str:
    lines = [f"{'figure':<52} {'adapter':>9} {'seed design':>12} {'target':>10} {'met':>4}", "-" * 91]
    lines += [f"{a:<52} {b:>9} {c:>12} {d:>10} {e:>4}" for a, b, c, d, e in rows(results)]
    return "\n".join(lines)


def _conditions(results: dict[str, Any]) -> str:
    machine = results.get("machine") or {}
    start = machine.get("loadavg_at_start") or [0.0]
    end = machine.get("loadavg") or [0.0]
    return (
        f"One run of `make bench`, ended {machine.get('when', '?')}, {results.get('bench_seconds', '?')} s, on "
        f"{machine.get('cpus', '?')} x {machine.get('cpu_model', '?')} (Python {machine.get('python', '?')}); "
        f"load average {start[0]:.1f} at its start, {end[0]:.1f} at its end. The emulators and the load "
        "generator share those cores with the function."
    )


def markdown(results: dict[str, Any], plots: str = "") -> str:
    """Every table of the READMEs, from `results` alone; `plots` is the path from the document to the plots."""
    seed = results.get("seed_flow") or {}
    by_label = {f.label: f for f in FIGURES}
    out = [_conditions(results), ""]
    for title, figures in SECTIONS:
        out += [f"**{title}**", "", "| figure | adapter | seed design | target | met |", "|---|---|---|---|---|"]
        for figure in figures:
            mine = dig(results, figure.path)
            theirs = dig(seed, figure.path)
            shown = _shown(mine)
            if by_label[figure.label].met is not None and shown:
                shown = f"**{shown}**"
            out.append(
                f"| {figure.label} | {shown} | {_shown(theirs)} | {figure.target} | {_met_cell(figure, mine, plots)} |"
            )
        out.append("")
    out.append(f"Plots of the same run: [throughput]({plots}throughput.png), [bursts]({plots}burst.png).")
    return "\n".join(out) + "\n"


def publish(results: dict[str, Any], directory: Path, readmes: tuple[Path, ...]) -> list[Path]:
    """Write `tables.md` beside the results; replace the marked block of each README (full runs only)."""
    written = [directory / TABLES_MD]
    written[0].write_text(markdown(results))
    block = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    for readme in readmes:
        content = readme.read_text()
        if BEGIN not in content:
            continue
        plots = os.path.relpath(directory, readme.parent) + "/"
        replacement = f"{BEGIN}\n{markdown(results, plots)}{END}".replace("\\", "\\\\")
        content = block.sub(replacement, content)
        readme.write_text(content)
        written.append(readme)
    return written
