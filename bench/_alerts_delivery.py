"""Part 2 of bench/alerts.py (not a benchmark itself): delivery attempts against a local
receiver. Django must be set up."""

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from _support import CPUS, HELPER_CPU, percentile, pin, print_table, stop, up_endpoint

WARMUP = 20

RECEIVER = """
import sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(self.server.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

ports = []
for status in sys.argv[1:]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.status = int(status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ports.append(str(server.server_address[1]))
print(" ".join(ports), flush=True)
threading.Event().wait()
"""


def _ms(values: Sequence[float], share: float) -> str:
    return f"{percentile(values, share):.1f}"


@contextmanager
def receivers(*statuses: int) -> Iterator[dict[int, str]]:
    """Local HTTP receivers answering each status to every POST (one subprocess, pinned
    to the helper core): {status: URL}."""
    process = subprocess.Popen(
        [sys.executable, "-c", RECEIVER, *map(str, statuses)], stdout=subprocess.PIPE, text=True
    )
    try:
        ports = process.stdout.readline().split() if process.stdout else []
        if len(ports) != len(statuses):
            raise RuntimeError("the receiver did not start")
        if CPUS > 1:
            pin(process.pid, HELPER_CPU)
        yield {
            status: f"http://127.0.0.1:{port}/hooks/healthmon"
            for status, port in zip(statuses, ports, strict=True)
        }
    finally:
        stop(process)


def _world(urls: dict[int, str], count: int) -> dict[str, tuple[Any, list[uuid.UUID], str]]:
    """Per case, its webhook channel, pending deliveries of one real event (`count` and
    the warm-up's) and the status an attempt should leave them in."""
    from django.conf import settings
    from django.utils import timezone

    from accounts.services import organization_create
    from alerts import messages
    from alerts.models import Delivery, NotificationEvent
    from alerts.services import channel_create
    from monitoring.models import Incident

    now = timezone.now()
    org, project = organization_create(name="Delivery")
    endpoint = up_endpoint(project, "Checkout API", "https://a.example.com/", 60, now, now)
    endpoint.save(force_insert=True)
    incident = Incident.objects.create(
        endpoint=endpoint, started_at=now, cause="unexpected status 503"
    )
    document = messages.event_document(
        event=NotificationEvent.OPENED,
        event_id=uuid.uuid4(),
        occurred_at=now,
        incident=incident,
        endpoint=endpoint,
        project_name=project.name,
    )
    cases = {}
    for label, status, attempts, expected in (
        ("204: delivered", 204, 0, "delivered"),
        ("500: retry scheduled", 500, 0, "pending"),
        ("500, last attempt: gives up", 500, settings.NOTIFY_MAX_ATTEMPTS - 1, "failed"),
    ):
        channel = channel_create(
            organization=org, name=label, kind="webhook", config={"url": urls[status]}
        )
        rows = [
            Delivery(
                channel=channel,
                event=NotificationEvent.OPENED,
                event_id=uuid.uuid4(),
                incident=incident,
                occurred_at=now,
                payload=document,
                attempts=attempts,
                next_attempt_at=now + timedelta(seconds=60),  # held, its task "queued"
            )
            for _ in range(count + WARMUP + 1)
        ]
        Delivery.objects.bulk_create(rows)
        cases[label] = (channel, [row.pk for row in rows], expected)
    return cases


def _kinds(queries: list[dict[str, str]]) -> str:
    """`SELECT delivery, BEGIN, INSERT deliveryattempt, ...`: what one attempt sends."""
    said = []
    for query in queries:
        sql = query["sql"].replace('"', "")
        table = re.search(r"(?:FROM|INTO|UPDATE)\s+monitoring_(\w+)", sql)
        said.append(sql.split()[0] + (f" {table.group(1)}" if table else ""))
    return ", ".join(said)


def _timed_loop(count: int, call: Callable[[], Any]) -> tuple[list[float], float, float]:
    """Per-call ms, wall s and CPU s of `count` calls one after the other."""
    times = []
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return times, time.perf_counter() - wall, time.process_time() - cpu


def _row(times: list[float], wall: float, cpu: float) -> list[object]:
    """per s, p50, p95, CPU ms per call."""
    n = len(times)
    return [f"{n / wall:.0f}", _ms(times, 50), _ms(times, 95), f"{cpu / n * 1000:.2f}"]


def _attempts(ids: list[uuid.UUID], expected: str) -> tuple[list[object], str]:
    """Attempts one after the other: figures, and the queries of one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from alerts.delivery import delivery_attempt
    from alerts.models import DeliveryAttempt

    for pk in ids[:WARMUP]:
        delivery_attempt(delivery_id=pk)
    with CaptureQueriesContext(connection) as captured:
        delivery_attempt(delivery_id=ids[WARMUP])
    timed = ids[WARMUP + 1 :]
    pending = iter(timed)
    ended: list[str | None] = []
    times, wall, cpu = _timed_loop(
        len(timed), lambda: ended.append(delivery_attempt(delivery_id=next(pending)))
    )
    wrong = [status for status in ended if status != expected]
    if wrong:
        raise RuntimeError(f"{len(wrong)} attempts ended {wrong[0]!r}, not {expected!r}")
    posts = DeliveryAttempt.objects.filter(delivery_id__in=timed)
    http = list(posts.values_list("duration_ms", flat=True))
    return [*_row(times, wall, cpu), _ms(http, 50), len(captured)], _kinds(
        captured.captured_queries
    )


def _transport_rows(url: str, channel: Any, delivery_id: uuid.UUID, count: int) -> list[list]:
    """The POST alone: `send_once` (encode, sign, policy, a session per call), and the same
    body and headers through one reused `requests` session (no policy): the floor."""
    import requests

    from alerts import messages
    from alerts.delivery import EVENT_HEADER, SIGNATURE_HEADER, send_once, signature
    from alerts.models import Delivery

    delivery = Delivery.objects.get(pk=delivery_id)
    body = messages.encode(delivery.payload)
    headers = {
        "Content-Type": "application/json",
        EVENT_HEADER: delivery.event,
        SIGNATURE_HEADER: signature(channel.secret, body),
    }
    rows = []
    with requests.Session() as session:
        session.trust_env = False
        for label, call in (
            ("send_once alone (no database)", lambda: send_once(channel, delivery)),
            ("requests, one reused session", lambda: session.post(url, data=body, headers=headers)),
        ):
            for _ in range(WARMUP):
                call()
            rows.append([label, *_row(*_timed_loop(count, call)), "", 0])
    return rows


def measure_delivery(count: int) -> None:
    """`delivery_attempt` against receivers answering 204 and 500, with the POST alone."""
    from django.test.utils import override_settings

    allowed = {"PROBE_ALLOW_PRIVATE_NETWORKS": False, "PROBE_ALLOWED_NETWORKS": ["127.0.0.0/8"]}
    with receivers(204, 500) as urls, override_settings(**allowed):
        cases = _world(urls, count)
        rows, said = [], {}
        for label, (_, ids, expected) in cases.items():
            row, said[label] = _attempts(ids, expected)
            rows.append([f"delivery_attempt, {label}", *row])
        channel, ids, _ = cases["204: delivered"]
        rows += _transport_rows(urls[204], channel, ids[0], count)
    print(f"\n2. delivery: {count} attempts one after the other, signed webhook, local receiver")
    headers = ["attempts", "per s", "p50 ms", "p95 ms", "CPU ms", "POST p50", "queries"]
    print_table(headers, rows)
    print("   POST p50: the attempts' own duration_ms; CPU: this process's, per attempt")
    for label, kinds in said.items():
        print(f"   queries of one attempt, {label}: {kinds}")
