"""The figures of bench/probes.py and their report (it is no benchmark): probes, wall and
CPU seconds per design, the table side by side and the verdicts against the goals."""

import argparse

from _support import CPUS, print_table

GOAL_PER_CORE = 3000
GOAL_VS_BARE = 0.5
GOAL_VS_NAIVE = 5.0


class Figure:
    """Probes done, wall seconds and CPU seconds of one design."""

    def __init__(self, name: str, probes: int, ok: int, wall: float, cpu: float) -> None:
        self.name, self.probes, self.ok, self.wall, self.cpu = name, probes, ok, wall, cpu
        self.helpers: dict[str, float] = {}
        self.phases: dict[str, float] = {}

    @property
    def rate(self) -> float:
        return self.probes / self.wall

    @property
    def per_cpu(self) -> float:
        return self.probes / self.cpu if self.cpu else float("nan")


def report(figures: dict[str, Figure], args: argparse.Namespace) -> None:
    """The designs side by side, the worker path's phases and the verdicts."""
    print()
    rows = []
    for f in figures.values():
        helpers = ", ".join(f"{k} {v:.2f}" for k, v in f.helpers.items())
        rate, per_cpu = f"{f.rate:,.0f}", f"{f.per_cpu:,.0f}"
        rows.append(
            [f.name, f.probes, f.ok, f"{f.wall:.2f}", rate, f"{f.cpu:.2f}", per_cpu, helpers]
        )
    headers = ["design", "probes", "ok", "wall s", "probes/s", "CPU s", "probes/CPU-s"]
    print_table([*headers, "other processes' CPU s"], rows)
    engine, bare = figures["engine"], figures["bare"]
    print()
    for f in figures.values():
        if f.phases:
            text = ", ".join(f"{k} {v:.2f} s" for k, v in f.phases.items())
            print(f"{f.name}: wall time in {text}")
    print()
    # Per core = per CPU-second of the worker process: the pinned core also runs other
    # work on a shared machine, which lowers probes/s but not probes per CPU-second.
    verdict = "meets" if engine.per_cpu >= GOAL_PER_CORE else "BELOW"
    print(
        f"engine per worker core: {engine.per_cpu:,.0f} probes per CPU-second "
        f"({verdict} the goal of {GOAL_PER_CORE:,}); {engine.rate:,.0f} probes/s of wall "
        f"time on its pinned core ({engine.cpu / engine.wall:.0%} busy)"
    )
    ratio = engine.rate / bare.rate
    verdict = "meets" if ratio >= GOAL_VS_BARE else "BELOW"
    print(
        f"engine / bare loop: {ratio:.2f} wall, {engine.per_cpu / bare.per_cpu:.2f} per CPU-s "
        f"({verdict} the goal of >= {GOAL_VS_BARE})"
    )
    steady = [f for key, f in figures.items() if key.startswith("worker") and key != "worker1"]
    if steady:
        rate = sum(f.probes for f in steady) / sum(f.wall for f in steady)
        per_cpu = sum(f.probes for f in steady) / sum(f.cpu for f in steady)
        verdict = "meets" if per_cpu >= GOAL_PER_CORE else "BELOW"
        print(
            f"worker path (steady rounds): {rate:,.0f} probes/s, {per_cpu:,.0f} per CPU-s, "
            f"{rate / engine.rate:.2f} of the engine alone ({verdict} the goal of "
            f"{GOAL_PER_CORE:,} per core)"
        )
    naive = figures.get("naive")
    if naive is not None:
        wall, per_cpu = engine.rate / naive.rate, engine.per_cpu / naive.per_cpu
        print(
            f"engine / naive: {wall:.1f}x in probes/s (1 engine process on 1 core against "
            f"{args.naive_concurrency} prefork processes on {CPUS} cores): "
            f"{'meets' if wall >= GOAL_VS_NAIVE else 'BELOW'} the goal of >= {GOAL_VS_NAIVE:g}x; "
            f"{per_cpu:.1f}x per worker CPU-second: "
            f"{'meets' if per_cpu >= GOAL_VS_NAIVE else 'BELOW'} it"
        )
        if steady:
            ratio = rate / naive.rate
            print(f"worker path / naive: {ratio:.1f}x in probes/s", end="")
            print(f" ({'meets' if ratio >= GOAL_VS_NAIVE else 'BELOW'} the goal)")
    for f in figures.values():
        if f.ok != f.probes:
            print(f"WARNING: {f.name}: {f.probes - f.ok} probes failed: its figure is not valid")
