"""The probe-locations phases of bench/scheduler.py: the same dispatcher over the same
endpoints, probed from the default location alone, then from several named locations, each
batch published for real; dispatcher CPU per tick compared between the two."""

import argparse
import time
from collections.abc import Callable
from datetime import timedelta

from _support import percentile, print_table

GOAL_LOCATIONS_CPU_RATIO = 1.5


def location_slugs(count: int) -> list[str]:
    """The named probe locations of the locations phases."""
    return [f"bench-{n}" for n in range(1, count + 1)]


def locations_run(args: argparse.Namespace, run_dispatcher: Callable[..., dict]) -> dict[str, dict]:
    """The same dispatcher (`run_dispatcher` of scheduler.py), sending for real: the
    endpoints probed from the default location alone, then from `args.locations` online
    named locations."""
    from django.utils import timezone

    from monitoring.locations_live import location_heartbeat
    from monitoring.models import Endpoint, Location

    slugs = location_slugs(args.locations)
    for slug in slugs:
        location_heartbeat(slug=slug, hostname=f"bench@{slug}", now=timezone.now())
    # Heard until the run ends: no heartbeat writes inside the measured ticks.
    Location.objects.filter(slug__in=slugs).update(last_seen_at=timezone.now() + timedelta(hours=1))
    from monitoring import scheduler

    for location in (None, *slugs):  # the first sends open the broker's connection and queues
        scheduler.send_batch([], False, location)
    runs = {}
    for name, listed in (("1 location", []), (f"{len(slugs)} locations", slugs)):
        Endpoint.objects.update(locations=listed)
        start = float(int(time.time()) + 1)
        runs[name] = run_dispatcher(args, start, 0, args.locations_duration, for_real=True)
    return runs


def analyse_locations(args: argparse.Namespace, runs: dict[str, dict]) -> None:
    """Claim-and-send time and dispatcher CPU per tick, one location against several."""
    rows, per_tick = [], {}
    for name, r in runs.items():
        times = [seconds * 1000 for _, seconds, _ in r["ticks"]]
        ticks = max(1, len(r["ticks"]))
        per_tick[name] = r["cpu"] / ticks * 1000
        sent = ", ".join(f"{where} {n}" for where, n in sorted(r["per_location"].items()))
        rows.append(
            [
                name,
                len(r["ticks"]),
                len(r["claims"]),
                sent,
                r["sent_twice"],
                f"{percentile(times, 50):.1f}",
                f"{percentile(times, 99):.1f}",
                f"{per_tick[name]:.2f}",
                f"{r['db_cpu'] / ticks * 1000:.2f}",
            ]
        )
    print()
    print(f"Probe locations: {args.endpoints} endpoints, {args.locations_duration:g} s per phase")
    headers = ["phase", "ticks", "claimed", "items sent per location", "sent twice"]
    headers += ["claim+send p50 ms", "p99 ms", "CPU ms/tick", "postgres CPU ms/tick"]
    print_table(headers, rows)
    single, several = per_tick["1 location"], per_tick[f"{args.locations} locations"]
    ratio = several / single if single else float("inf")
    print()
    goal = f"<= {GOAL_LOCATIONS_CPU_RATIO:g}x"
    verdict = "meets" if ratio <= GOAL_LOCATIONS_CPU_RATIO else "MISSES"
    print(
        f"dispatcher CPU per tick with {args.locations} locations: {ratio:.2f}x the single-"
        f"location figure: {verdict} the goal ({goal})"
    )
    twice = sum(r["sent_twice"] for r in runs.values())
    verdict = "meets" if not twice else "MISSES"
    print(f"items sent twice to one location {twice}: {verdict} the goal (none)")
