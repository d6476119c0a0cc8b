"""The probe kinds beside HTTP, for bench/probes.py: TCP, DNS and HTTP with five assertions,
each run through the engine (`run_batch`, one `asyncio.run` per batch, as a worker does) on
the measured core, against real local peers on the helper core: the nginx that serves the
HTTP targets (TCP connects to its ports) and a dnslib DNS server in a process of its own.

Goals (issue 22), per CPU-second of the measured process: TCP >= 2x HTTP, DNS >= HTTP, and
HTTP with 5 assertions within 10% of HTTP without.
"""

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from _support import HELPER_CPU, free_ports, pin, print_table, stop, tree_cpu_seconds

# A DNS server answering every A question with one address, as fast as dnslib can.
DNS_SERVER = """
import sys, time
from dnslib import RR, QTYPE, A
from dnslib.server import BaseResolver, DNSLogger, DNSServer

class Answer(BaseResolver):
    def resolve(self, request, handler):
        reply = request.reply()
        reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A("192.0.2.1"), ttl=60))
        return reply

server = DNSServer(Answer(), address="127.0.0.1", port=int(sys.argv[1]),
                   logger=DNSLogger(log="-request,-reply,-truncated,-error", prefix=False))
server.start_thread()
while True:
    time.sleep(3600)
"""

ASSERTIONS = [
    {"source": "status_code", "comparison": "equals", "target": 200},
    {"source": "status_code", "comparison": "less_than", "target": 300},
    {"source": "body", "comparison": "contains", "target": "ok"},
    {"source": "body", "comparison": "matches", "target": "^ok"},
    {"source": "response_time", "comparison": "less_than", "target": 5000},
]


@dataclass
class KindFigure:
    name: str
    probes: int
    ok: int
    wall: float
    cpu: float
    helper_cpu: float

    @property
    def per_cpu(self) -> float:
        return self.probes / self.cpu if self.cpu else float("nan")


@contextlib.contextmanager
def dns_server() -> Iterator[tuple[str, int]]:
    """A dnslib server on 127.0.0.1 (UDP), pinned to the helper core: (address, pid)."""
    [port] = free_ports(1)
    process = subprocess.Popen([sys.executable, "-c", DNS_SERVER, str(port)])
    try:
        pin(process.pid, HELPER_CPU)
        time.sleep(1.0)  # UDP: nothing to connect to; give it a moment to bind
        if process.poll() is not None:
            raise RuntimeError("the DNS server did not start")
        yield f"127.0.0.1:{port}", process.pid
    finally:
        stop(process)


def kind_tasks(urls: list[str], resolver: str, count: int, timeout: float) -> dict[str, list]:
    """The four workloads, `count` probes each."""
    from monitoring.probes import ProbeTask
    from monitoring.validation import validate_config

    ports = [urlsplit(url).port for url in urls]
    http, asserted = (
        validate_config("http", {}),
        validate_config("http", {"assertions": ASSERTIONS}),
    )
    tcp, dns = validate_config("tcp", {}), validate_config("dns", {})
    return {
        "http": [ProbeTask("http", urls[i % len(urls)], http, timeout) for i in range(count)],
        "http + 5 assertions": [
            ProbeTask("http", urls[i % len(urls)], asserted, timeout) for i in range(count)
        ],
        "tcp": [
            ProbeTask("tcp", f"tcp://127.0.0.1:{ports[i % len(ports)]}", tcp, timeout)
            for i in range(count)
        ],
        "dns": [
            ProbeTask("dns", f"dns://{resolver}/host{i % 50}.bench.test", dns, timeout)
            for i in range(count)
        ],
    }


def measure_kind(
    name: str, tasks: list, batch: int, concurrency: int, helper_cpu: Callable[[], float]
) -> KindFigure:
    from monitoring.probes import run_batch

    asyncio.run(run_batch(tasks[:batch], concurrency=concurrency))  # warm-up
    helper0, started, cpu0 = helper_cpu(), time.perf_counter(), time.process_time()
    ok = 0
    for i in range(0, len(tasks), batch):
        results = asyncio.run(run_batch(tasks[i : i + batch], concurrency=concurrency))
        ok += sum(result.ok for result in results)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    return KindFigure(name, len(tasks), ok, wall, cpu, helper_cpu() - helper0)


def measure_kinds(
    urls: list[str], nginx_cpu: Callable[[], float], count: int, batch: int, timeout: float
) -> list[KindFigure]:
    """Each kind twice, alternated, the better run kept (other work only slows a run)."""
    best: dict[str, KindFigure] = {}
    with dns_server() as (resolver, dns_pid):

        def helpers() -> float:
            return nginx_cpu() + tree_cpu_seconds(dns_pid)

        # A DNS batch of `batch` lookups at once would queue on one dnslib thread: the
        # concurrency is the batch's, as for HTTP, and the server is the limit it shows.
        for _ in range(2):
            for name, tasks in kind_tasks(urls, resolver, count, timeout).items():
                figure = measure_kind(name, tasks, batch, batch, helpers)
                print(f"{name}: {figure.per_cpu:,.0f} probes per CPU-second", flush=True)
                if name not in best or figure.per_cpu > best[name].per_cpu:
                    best[name] = figure
    return list(best.values())


def report_kinds(figures: list[KindFigure]) -> None:
    print()
    rows = [
        [
            f.name,
            f.probes,
            f.ok,
            f"{f.wall:.2f}",
            f"{f.probes / f.wall:,.0f}",
            f"{f.cpu:.2f}",
            f"{f.per_cpu:,.0f}",
            f"{f.helper_cpu:.2f}",
        ]
        for f in figures
    ]
    headers = ["kind", "probes", "ok", "wall s", "probes/s", "CPU s", "probes/CPU-s"]
    print_table([*headers, "peers' CPU s"], rows)
    by = {f.name: f for f in figures}
    http = by["http"].per_cpu
    print()
    for name, goal, text in (
        ("tcp", 2.0, ">= 2x HTTP"),
        ("dns", 1.0, ">= HTTP"),
        ("http + 5 assertions", 0.9, "within 10% of HTTP"),
    ):
        ratio = by[name].per_cpu / http
        verdict = "meets" if ratio >= goal else "BELOW"
        print(f"{name} / http per CPU-second: {ratio:.2f} ({verdict} the goal: {text})")
    for f in figures:
        if f.ok != f.probes:
            print(f"WARNING: {f.name}: {f.probes - f.ok} probes failed: its figure is not valid")
