"""PNG plots of a bench run (matplotlib, headless): throughput against concurrency, bursts against the quota."""

from __future__ import annotations

from pathlib import Path
from typing import Any

THROUGHPUT_PNG = "throughput.png"
BURST_PNG = "burst.png"


def draw(results: dict[str, Any], directory: Path) -> list[Path]:
    """Write the plots next to latest.json; returns the files written (none when there is nothing to draw)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    written: list[Path] = []
    if results.get("throughput_eps"):
        written.append(_throughput(results, directory / THROUGHPUT_PNG))
    bursts = {
        "new clusters (adapter)": results.get("new_cluster_burst") or {},
        "rotation (adapter)": results.get("burst") or {},
        "rotation (seed design)": (results.get("seed_flow") or {}).get("burst") or {},
    }
    if any(b.get("timeline") for b in bursts.values()):
        written.append(_bursts(bursts, directory / BURST_PNG))
    return written


def _throughput(results: dict[str, Any], path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.2), dpi=110)
    for label, data, style in (
        ("adapter", results.get("throughput_eps") or {}, "o-"),
        ("seed design", (results.get("seed_flow") or {}).get("throughput_eps") or {}, "s--"),
    ):
        points = sorted((int(c), eps) for c, eps in data.items())
        if points:
            axis.plot([c for c, _ in points], [e for _, e in points], style, label=label)
            for c, e in points:
                axis.annotate(f"{e:g}", (c, e), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    axis.axhline(150, color="grey", linestyle=":", linewidth=1, label="target at 80 (150 events/s)")
    axis.set_ylim(0, max([150.0, *(float(v) for v in (results.get("throughput_eps") or {}).values())]) * 1.12)
    axis.set_xlabel("events in flight (clients posting back to back)")
    axis.set_ylabel("events per second, one process")
    axis.set_title(f"Throughput, L = {results.get('latency_ms', 25):g} ms per call")
    axis.set_xscale("log", base=2)
    axis.set_xticks([1, 8, 32, 80], labels=["1", "8", "32", "80"])
    axis.grid(True, alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def _bursts(bursts: dict[str, dict[str, Any]], path: Path) -> Path:
    import matplotlib.pyplot as plt

    shown = {label: burst for label, burst in bursts.items() if burst.get("timeline")}
    figure, axes = plt.subplots(1, len(shown), figsize=(5 * len(shown), 4.2), dpi=110, squeeze=False)
    for axis, (label, burst) in zip(axes[0], shown.items(), strict=True):
        times = [t for t, _ in burst["timeline"]]
        done = [n for _, n in burst["timeline"]]
        clusters = burst["clusters"]
        rate = burst["quota"]["writes_per_s"]
        per_cluster = burst.get("bound_writes_per_cluster", 1)
        bound = burst["quota_bound_seconds"]
        axis.plot(times, done, label=f"acknowledged ({burst['seconds']:g} s)")
        end = max(times[-1], bound)
        axis.plot(
            [0, bound, end],
            [0, clusters, clusters],
            color="red",
            linestyle="--",
            label=f"quota line: {rate:g} writes/s at {per_cluster:g}/cluster",
        )
        axis.set_title(f"{label}: {burst['ratio_to_bound']:g} x bound", fontsize=10)
        axis.set_xlabel("seconds since the burst began")
        axis.set_ylabel("clusters converged")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8, loc="lower right")
        axis.text(
            0.02,
            0.97,
            f"terminal {burst['terminal_failures']}, duplicates {burst.get('duplicate_versions', '?')}, "
            f"past deadline {burst.get('past_deadline', '?')}\nwrites refused {burst['writes_rejected']}, "
            f"writes/cluster {burst['writes_per_cluster']:g}",
            transform=axis.transAxes,
            va="top",
            fontsize=8,
        )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
