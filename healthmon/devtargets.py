"""Small local HTTP services for `make demo` to probe: steady, jittery, flaky and slow.

The development supervisor (`healthmon.devserver`) serves them from a thread; the demo seed
(`monitoring.demo`) points the demo organization's endpoints at their paths. Each answers
from its own rules, so the charts show latency bands, errors and an incident within minutes.
"""

import random
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Behaviour:
    """How one path answers: a latency range in seconds, a share of 500s, and an outage of
    `down_seconds` at the start of every `cycle_seconds` (0: never down)."""

    latency: tuple[float, float]
    error_rate: float = 0.0
    down_seconds: int = 0
    cycle_seconds: int = 600

    def answer(self, now: float, rng: random.Random) -> tuple[int, float]:
        """The status to send and how long to wait before sending it."""
        delay = rng.uniform(*self.latency)
        if self.down_seconds and now % self.cycle_seconds < self.down_seconds:
            return 503, delay
        return (500 if rng.random() < self.error_rate else 200), delay


# Path to behaviour. The names are the demo endpoints' (monitoring.demo).
TARGETS: dict[str, Behaviour] = {
    "/catalog": Behaviour(latency=(0.02, 0.08)),
    "/checkout": Behaviour(latency=(0.05, 0.30), error_rate=0.08),
    "/search": Behaviour(latency=(0.15, 0.60), error_rate=0.02),
    # Down for two minutes every ten: an incident opens and resolves while you watch.
    "/payments": Behaviour(latency=(0.03, 0.12), down_seconds=120, cycle_seconds=600),
}


class _Handler(BaseHTTPRequestHandler):
    rng = random.Random()  # noqa: S311 - jitter, not secrets

    def do_GET(self) -> None:
        behaviour = TARGETS.get(self.path.split("?", 1)[0])
        if behaviour is None:
            status, delay = 404, 0.0
        else:
            status, delay = behaviour.answer(time.time(), self.rng)
        time.sleep(delay)
        body = b'{"status": "%d"}\n' % status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: the probes' results are what the demo shows."""


def serve(host: str, port: int) -> ThreadingHTTPServer:
    """Serve the targets on host:port from a daemon thread; returns the server."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="demo-targets", daemon=True).start()
    return server
