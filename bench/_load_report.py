"""The load benchmark's report (it is no benchmark): tables per phase, route and group,
the goals, and the isolation comparison."""

import statistics

import _load_client as lc
from _load_data import BIG_ENDPOINTS
from _support import CPUS, percentile, print_table

GOAL_API_MS = 50.0
GOAL_DASHBOARD_MS = 150.0
GOAL_ISOLATION = 0.15  # issue 26: the big organization moves the tenants' p95 by at most 15%
DISTURBED = 0.10  # share of the machine other work may use before a phase counts as disturbed
# Server CPU per request measured before issue 26 (bench/README.md, 2026-11-21, b5639cc):
# gunicorn + PostgreSQL backends over a whole phase, and the worker's own CPU per dashboard
# and per API request (server hooks). Issue 26's goal is half of each.
CPU_BEFORE = {"server": 35.0, "dashboard": 54.0, "API": 15.0}
CPU_GOAL_SHARE = 0.5

GROUP_ROWS = [
    ("API (analytics + CRUD)", ("analytics", "crud")),
    ("  analytics", ("analytics",)),
    ("  CRUD", ("crud",)),
    ("dashboard", ("dashboard",)),
    ("all", ("analytics", "crud", "dashboard")),
]


def _ms(value: float) -> str:
    return "-" if value != value else f"{value:.1f}"


def _row(name: str, f: lc.Figures) -> list[str]:
    return [
        name,
        f"{f.requests:,}",
        f"{f.rate:.1f}",
        _ms(f.p50),
        _ms(f.p95),
        _ms(f.p99),
        _ms(f.worst),
        str(f.errors),
        _ms(f.worker_p95),
        _ms(f.cpu),
        f"{f.kb:.0f}",
    ]


HEADERS = [
    "route",
    "requests",
    "req/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "errors",
    "in worker p95",
    "CPU ms",
    "KB",
]


def group_figures(result: lc.Result, big: bool, groups: tuple[str, ...]) -> lc.Figures:
    chosen = [s for s in result.samples if s.big == big and s.group in groups]
    return lc.figures(chosen, result.elapsed)


def print_phase(result: lc.Result) -> None:
    cpu = result.cpu
    offered = f", offered {result.offered:.1f} req/s" if result.offered else ""
    runs = f" (the least disturbed of {result.attempts} runs)" if result.attempts > 1 else ""
    print(f"\n== {result.name}: {result.elapsed:.1f} s, {result.users} users{offered}{runs}")
    print(
        f"machine CPU {cpu['machine']:.0%} of {CPUS} cores: gunicorn {cpu['gunicorn']:.0%}, "
        f"PostgreSQL backends {cpu['postgres']:.0%}, load client {cpu['client']:.0%} "
        f"({result.cpu_s['client'] / result.cpu_s['wall']:.0%} of one core), "
        f"other {cpu['other']:.0%}"
    )
    served = len(result.samples)
    app, db = (result.cpu_s[kind] * 1000 / served for kind in ("gunicorn", "postgres"))
    print(
        f"server CPU per request: gunicorn {app:.1f} ms + PostgreSQL {db:.1f} ms = "
        f"{app + db:.1f} ms, so about {CPUS * 1000 / (app + db):.0f} req/s on {CPUS} idle cores"
    )
    if cpu["other"] > DISTURBED:
        print(
            f"WARNING: other work used {cpu['other']:.0%} of the machine during this phase: "
            "the latencies are not the server's alone"
        )
    hit, read = result.cpu_s["blocks_hit"], result.cpu_s["blocks_read"]
    print(
        f"PostgreSQL blocks per request: {(hit + read) / served:.0f}, of which "
        f"{read / served:.1f} read from outside shared buffers "
        f"({100 * hit / (hit + read) if hit + read else 100:.2f}% hits)"
    )
    print(
        f"client: event-loop lag p99 {result.loop_lag_p99 * 1000:.1f} ms; start behind schedule "
        f"p95 {result.start_lag_p95 * 1000:.1f} ms, max {result.start_lag_max * 1000:.0f} ms, "
        f"schedules reset {result.reset}"
    )
    for big in sorted({s.big for s in result.samples}):
        who = "the big organization" if big else "the tenants"
        rows = []
        for group, route in lc.ROUTES:
            chosen = [s for s in result.samples if s.big == big and s.route == route]
            rows.append(_row(f"{group}: {route}", lc.figures(chosen, result.elapsed)))
        rows.append([""] * len(HEADERS))
        rows += [_row(name, group_figures(result, big, groups)) for name, groups in GROUP_ROWS]
        print(f"-- requests of {who}")
        print_table(HEADERS, rows)
    for failure in result.failures:
        print(f"  error: {failure}")


def verdict(met: bool) -> str:
    return "met" if met else "missed"


def print_goals(results: list[lc.Result]) -> None:
    print("\n== goals (the tenants' requests; judged on the paced phases)")
    rows = []
    for result in results:
        api = group_figures(result, False, ("analytics", "crud"))
        dash = group_figures(result, False, ("dashboard",))
        errors = sum(not s.ok for s in result.samples)
        rows.append(
            [
                result.name,
                f"{errors}: {verdict(errors == 0)}",
                f"{_ms(api.p95)}: {verdict(api.p95 <= GOAL_API_MS)}",
                f"{_ms(dash.p95)}: {verdict(dash.p95 <= GOAL_DASHBOARD_MS)}",
            ]
        )
    print_table(
        [
            "phase",
            "errors = 0 (all)",
            f"API p95 <= {GOAL_API_MS:.0f} ms",
            f"dashboard p95 <= {GOAL_DASHBOARD_MS:.0f} ms",
        ],
        rows,
    )


def cpu_figures(results: list[lc.Result]) -> dict[str, float]:
    """Server CPU per request over some phases together (ms): gunicorn + PostgreSQL backends
    per request of any organization, and the worker's CPU per tenant dashboard and API
    request."""
    served = sum(len(r.samples) for r in results)
    seconds = sum(r.cpu_s["gunicorn"] + r.cpu_s["postgres"] for r in results)
    samples = [s for r in results for s in r.samples]
    pooled = lc.Result("pooled", 1.0, samples, {}, {}, 0.0, 0.0, 0.0, 0, [])
    return {
        "server": seconds * 1000 / served if served else float("nan"),
        "dashboard": group_figures(pooled, False, ("dashboard",)).cpu,
        "API": group_figures(pooled, False, ("analytics", "crud")).cpu,
    }


def print_cpu(results: list[lc.Result], pings: list[float]) -> None:
    """CPU per request beside the figures before issue 26 and its goal (half of them): per
    phase, and over the phases without the big organization's data together (more
    requests: the figure to judge); then as multiples of this run's baseline, the bare
    health view's worker CPU per request (`pings`, before the phases and after)."""
    print(
        "\n== server CPU per request, ms, beside the figures before issue 26 "
        f"(bench/README.md) and its goal ({CPU_GOAL_SHARE:.0%} of them); less swayed by other "
        "work than latency"
    )
    headers = ["phases", "requests", "server (gunicorn + PostgreSQL)", "dashboard", "API"]
    rows = [[r.name, f"{len(r.samples):,}", *_cpu_cells(cpu_figures([r]))] for r in results]
    tenants = [r for r in results if "big org" not in r.name]
    pooled = cpu_figures(tenants)
    rows.append([""] * len(headers))
    count = sum(len(r.samples) for r in tenants)
    rows.append(["without the big org, together", f"{count:,}", *_cpu_cells(pooled)])
    rows.append(["before issue 26", "", *(f"{CPU_BEFORE[k]:.1f}" for k in CPU_BEFORE)])
    rows.append(["goal", "", *(f"<= {CPU_BEFORE[k] * CPU_GOAL_SHARE:.1f}" for k in CPU_BEFORE)])
    rows.append(
        [
            "verdict (together)",
            "",
            *(verdict(pooled[k] <= CPU_BEFORE[k] * CPU_GOAL_SHARE) for k in CPU_BEFORE),
        ]
    )
    print_table(headers, rows)
    ping = statistics.mean(pings)
    print(
        "baseline of this run: the bare health view took "
        + " and ".join(f"{cpu:.3f}" for cpu in pings)
        + " ms of worker CPU per request (median of each series, before the phases and after); "
        f"the worker's CPU per request, together, is {pooled['dashboard'] / ping:.0f}x that "
        f"for a dashboard and {pooled['API'] / ping:.1f}x for an API request"
    )


def _cpu_cells(found: dict[str, float]) -> list[str]:
    return [
        f"{_ms(found[k])} ({_change(found[k], CPU_BEFORE[k])})"
        for k in ("server", "dashboard", "API")
    ]


def halves(result: lc.Result, groups: tuple[str, ...]) -> tuple[float, float]:
    """The tenants' p95 over the first and the second half of a phase."""
    middle = result.elapsed / 2
    parts = []
    for first in (True, False):
        chosen = [
            s.seconds * 1000
            for s in result.samples
            if not s.big and s.group in groups and (s.done < middle) == first
        ]
        parts.append(percentile(chosen, 95))
    return parts[0], parts[1]


def _change(after: float, before: float) -> str:
    if after != after or before != before:  # NaN: no request of that route
        return "-"
    return f"{after / before - 1:+.0%}"


def print_isolation(before: lc.Result, data: lc.Result, loaded: lc.Result) -> None:
    phases = (before, data, loaded)
    disturbed = max(r.cpu.get("other", 0.0) for r in phases)
    load = before.name.split(":")[0]
    print(
        f"\n== isolation at {load}: the tenants' requests before and after the organization of "
        f"{BIG_ENDPOINTS:,} endpoints (goal: p95 at most +{GOAL_ISOLATION:.0%} with its load)"
    )
    rows = []
    for name, groups in [*GROUP_ROWS[:1], *GROUP_ROWS[3:]]:
        b, d, lo = (group_figures(r, False, groups).p95 for r in phases)
        first, second = halves(before, groups)
        noise = max(first, second) / min(first, second) - 1
        judged = verdict(lo <= b * (1 + GOAL_ISOLATION))
        if noise > GOAL_ISOLATION:
            judged += f" (inconclusive: the halves differ by {noise:.0%})"
        elif disturbed > DISTURBED:
            judged += f" (inconclusive: other work used up to {disturbed:.0%} of the machine)"
        row = [name.strip(), _ms(b), f"{_ms(first)} / {_ms(second)}", _ms(d), _change(d, b)]
        rows.append([*row, _ms(lo), _change(lo, b), judged])
    print("-- p95 latency, ms")
    _print_isolation_verdict(rows)
    print_table(
        [
            "requests",
            "before",
            "its halves",
            "big data",
            "change",
            "big data + load",
            "change",
            "verdict",
        ],
        rows,
    )
    rows = []
    for name, groups in [*GROUP_ROWS[:1], *GROUP_ROWS[3:]]:
        b, d, lo = (group_figures(r, False, groups).cpu for r in phases)
        rows.append([name.strip(), _ms(b), _ms(d), _change(d, b), _ms(lo), _change(lo, b)])
    print("-- CPU of the worker per request, mean ms (less sensitive to other work than latency)")
    print_table(["requests", "before", "big data", "change", "big data + load", "change"], rows)
    b, d, lo = ((r.cpu_s["gunicorn"] + r.cpu_s["postgres"]) * 1000 / len(r.samples) for r in phases)
    print(
        f"gunicorn + PostgreSQL backends CPU per request over each whole phase (with the big "
        f"organization's requests in the last): {b:.1f} ms, {d:.1f} ms ({_change(d, b)}), "
        f"{lo:.1f} ms ({_change(lo, b)})"
    )
    rows = []
    for group, route in lc.ROUTES:
        b, d, lo = (
            lc.figures([s for s in r.samples if not s.big and s.route == route], r.elapsed)
            for r in phases
        )
        rows.append(
            [
                f"{group}: {route}",
                _ms(b.p95),
                _ms(d.p95),
                _ms(lo.p95),
                _change(lo.p95, b.p95),
                _ms(b.cpu),
                _ms(d.cpu),
                _ms(lo.cpu),
                _change(lo.cpu, b.cpu),
            ]
        )
    print("-- per route (a few dozen requests each: p95 is noisy)")
    print_table(
        [
            "route",
            "p95 before",
            "big data",
            "+ load",
            "change",
            "CPU before",
            "big data",
            "+ load",
            "change",
        ],
        rows,
    )


def _print_isolation_verdict(rows: list[list[str]]) -> None:
    """One line per group: the tenants' p95 before, and with the big organization's data and
    users, the change and the verdict (the goal of issue 26 at a glance)."""
    for name, before, _, _, _, loaded, change, judged in rows:
        print(
            f"   {name}: p95 {before} ms -> {loaded} ms with the big organization's data and "
            f"users ({change}; goal <= +{GOAL_ISOLATION:.0%}): {judged}"
        )
