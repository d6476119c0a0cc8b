"""The main table of bench/scheduler.py (it is no benchmark): per dispatcher, claim time
per tick and CPU; slots expected, claimed, missed, duplicated and off-phase; hand-over
against each slot; the end-to-end figures; and the verdicts against the goals."""

import argparse
from collections import Counter
from datetime import timedelta

from _scheduler_world import INTERVAL
from _support import CPUS, percentile, print_table

GOAL_LAG_MS = 50
GOAL_CPU_CORES = 0.5  # dispatcher and its PostgreSQL process together (issue 26)


def spread(values: list[float], *shares: float) -> str:
    """Percentiles of `values`, as `a / b / c` (100: the maximum)."""
    return " / ".join(f"{percentile(values, share):.1f}" for share in shares)


def analyse(
    args: argparse.Namespace,
    first_slots: dict[str, int],
    runs: dict[str, dict],
    end_to_end: dict | None,
) -> None:
    from monitoring import scheduler

    ahead = getattr(scheduler, "LOOKAHEAD", timedelta(0)) // timedelta(microseconds=1)
    claims = [(pk, slot, handed) for r in runs.values() for pk, slot, handed in r["claims"]]
    last_now = max(now for r in runs.values() for now, _, _ in r["ticks"])
    expected = {
        (pk, slot)
        for pk, first in first_slots.items()
        for slot in range(first, last_now + ahead + 1, INTERVAL * 1_000_000)
    }
    claimed = Counter((pk, slot) for pk, slot, _ in claims)
    duplicates = sum(n - 1 for n in claimed.values() if n > 1)
    missed = len(expected - set(claimed))
    off_phase = len(set(claimed) - expected)
    offsets = [(handed - slot / 1e6) * 1000 for _, slot, handed in claims]
    late = [max(0.0, offset) for offset in offsets]
    margins = [-offset for offset in offsets]
    print()
    rows = []
    for who, r in runs.items():
        times = [seconds * 1000 for _, seconds, _ in r["ticks"]]
        share = (r["cpu"] + r["db_cpu"]) / (r["wall"] * CPUS)
        rows.append(
            [
                who,
                len(r["ticks"]),
                len(r["claims"]),
                f"{percentile(times, 50):.1f}",
                f"{percentile(times, 99):.1f}",
                f"{max(times):.1f}",
                f"{r['cpu']:.2f}",
                f"{r['db_cpu']:.2f}",
                f"{share:.1%}",
            ]
        )
    headers = ["dispatcher", "ticks", "claimed", "claim p50 ms", "p99 ms", "max ms"]
    print_table([*headers, "CPU s", "postgres CPU s", f"% of {CPUS} cores"], rows)
    print()
    figures = [
        ["lookahead of the dispatcher", f"{ahead / 1000:.0f} ms"],
        ["slots expected (first slot .. last tick + lookahead)", len(expected)],
        ["slots claimed", sum(claimed.values())],
        ["missed (expected, never claimed)", missed],
        ["claimed twice or more", duplicates],
        ["claimed off-phase (not first slot + k x 30 s)", off_phase],
        ["hand-over - slot, p1 / p50 / p99 ms", spread(offsets, 1, 50, 99)],
        ["handed over after the slot", f"{sum(o > 0 for o in offsets) / len(offsets):.1%}"],
        ["lateness p50 / p99 / max ms (hand-over after slot)", spread(late, 50, 99, 100)],
        ["margin before the slot p1 / p5 ms (for broker + worker)", spread(margins, 1, 5)],
    ]
    if end_to_end is not None:
        starts = [(c - s).total_seconds() * 1000 for s, c, _ in end_to_end["results"]]
        failed = sum(not ok for _, _, ok in end_to_end["results"])
        figures += [
            ["end to end: results stored / slots claimed", f"{len(starts)} / {len(claims)}"],
            ["end to end: failed probes", failed],
            ["end to end: check start - slot p50 / p99 / max ms", spread(starts, 50, 99, 100)],
            ["end to end: checks started before their slot", sum(x < 0 for x in starts)],
            ["end to end: worker CPU s (2 prefork processes)", f"{end_to_end['cpu']:.2f}"],
        ]
    print_table(["figure", "value"], figures)
    slowest = sorted(runs["main"]["ticks"], key=lambda tick: -tick[1])[:5]
    first_tick = min(now for now, _, _ in runs["main"]["ticks"])
    print("slowest ticks (s into the run: ms, claimed): ", end="")
    print(
        ", ".join(f"{(now - first_tick) / 1e6:.0f}: {s * 1000:.0f}, {n}" for now, s, n in slowest)
    )
    main = runs["main"]
    vacuumed = main.get("vacuum", {"runs": 0, "cpu": 0.0, "autovacuum": True})
    if vacuumed["autovacuum"]:
        print("autovacuum is on: its CPU is not counted")
    else:
        print(
            f"autovacuum is off on this server: VACUUM run {vacuumed['runs']} times in its"
            f" stead, {vacuumed['cpu']:.2f} CPU s (counted below)"
        )
    share = (main["cpu"] + main["db_cpu"] + vacuumed["cpu"]) / (main["wall"] * CPUS)
    p99 = percentile(late, 99)
    print()
    verdicts = [
        (f"p99 lateness at hand-over {p99:.0f} ms", p99 <= GOAL_LAG_MS, f"<= {GOAL_LAG_MS} ms"),
        (f"missed {missed}", missed == 0, "none missed"),
        (f"duplicates {duplicates}", duplicates == 0, "no slot claimed twice"),
        (
            f"CPU {share:.1%} of {CPUS} cores ({share * CPUS:.2f} of a core)",
            share * CPUS < GOAL_CPU_CORES,
            f"under {GOAL_CPU_CORES:g} of a core",
        ),
    ]
    if end_to_end is not None:
        starts = [(c - s).total_seconds() * 1000 for s, c, _ in end_to_end["results"]]
        p99 = percentile(starts, 99)
        verdicts.insert(
            1,
            (f"end-to-end p99 start lag {p99:.0f} ms", p99 <= GOAL_LAG_MS, f"<= {GOAL_LAG_MS} ms"),
        )
    for text, ok, goal in verdicts:
        print(f"{text}: {'meets' if ok else 'MISSES'} the goal ({goal})")
