"""Probe locations as remote sites, for the end-to-end tests of locations.

A site is a network namespace of the test's own (`tests/monitoring/netns.py`), routed through
this host as a remote machine is through its router. Its workers reach the central services
as a remote worker does, over its link: PostgreSQL and the test's Redis listen on this host's
loopback only, so each site gets TCP forwarders on its gateway address (`gateway:5432` to
PostgreSQL, `gateway:6379` to Redis), and its workers are told those addresses.

The probe target is an HTTP server on this host, reachable from every site at one address. It
tells the sites apart by the address a request comes from (each site has its own, as in
life) and can fail for some of them only; it records the `X-Healthmon-Location` header each
request carried, so a test can check that a worker names the place it probes from.
"""

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings

from tests.faults.network import TCPProxy
from tests.faults.processes import Processes, database_url
from tests.monitoring.netns import Namespace, namespace

LOCATION_HEADER = "X-Healthmon-Location"
POSTGRESQL_PORT = 5432
REDIS_PORT = 6379


def _listen_on(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (a forwarder's side on a site's link)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


@dataclass(frozen=True)
class Site:
    """A probe location's site: its namespace and the environment its workers run with."""

    slug: str
    namespace: Namespace
    env: dict[str, str]

    @property
    def address(self) -> str:
        """The address the site's requests come from."""
        return self.namespace.address


@contextmanager
def site(slug: str, *, redis_port: int) -> Iterator[Site]:
    """A site for location `slug` whose workers reach the test database and the Redis on
    `127.0.0.1:redis_port` through forwarders on its link; all undone on exit."""
    database = settings.DATABASES["default"]
    postgresql = ("127.0.0.1", int(database["PORT"] or POSTGRESQL_PORT))
    with namespace(routed=True) as ns, ExitStack() as forwarders:
        listen = partial(_listen_on, ns.gateway)
        for upstream, port in (
            (postgresql, POSTGRESQL_PORT),
            (("127.0.0.1", redis_port), REDIS_PORT),
        ):
            forwarders.callback(TCPProxy(upstream, port, listen=listen).stop)
        broker = f"redis://{ns.gateway}:{REDIS_PORT}"
        yield Site(
            slug,
            ns,
            {
                "DATABASE_URL": database_url(host=ns.gateway, port=POSTGRESQL_PORT),
                "CELERY_BROKER_URL": f"{broker}/0",
                "CACHE_URL": f"{broker}/1",
                "PROBE_LOCATION": slug,
            },
        )


def site_worker(processes: Processes, site: Site, *, location: bool = True) -> int:
    """Start a Celery worker inside the site, named `worker-<slug>`; returns its pid.

    `location`: as `make worker LOCATION=<slug>` runs one (it consumes `probes.<slug>` and
    keeps the location online); otherwise a plain worker of the default location
    (`celery,slow`), for the harness's own test. Run with its heartbeats and the rest of
    Celery's defaults, as a user runs it."""
    env = dict(site.env)
    if location:
        queues = f"probes.{site.slug}"
    else:
        env["PROBE_LOCATION"] = ""
        queues = "celery,slow"
    command = [sys.executable, "-m", "celery", "-A", "healthmon", "worker", "--loglevel=INFO"]
    command += ["-n", f"{site.slug}@%h", "-Q", queues, "--concurrency=2"]
    return processes.spawn(f"worker-{site.slug}", *site.namespace.command(*command), env=env)


@dataclass
class _Seen:
    """What the target saw: a request from a site (by address) and the header it carried."""

    site: str
    header: str | None


@dataclass
class SplitTarget:
    """An HTTP server on `host` answering 200, or 503 to the sites named in `failing`.

    `sites` maps a source address to a site's slug; requests from elsewhere are answered
    as `other`."""

    host: str
    sites: dict[str, str]
    failing: set[str] = field(default_factory=set)
    seen: list[_Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                target.answer(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/health"

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        where = self.sites.get(handler.client_address[0], "other")
        with self._lock:
            self.seen.append(_Seen(where, handler.headers.get(LOCATION_HEADER)))
            down = where in self.failing
        body = f"down for {where}".encode() if down else b"ok"
        handler.send_response(503 if down else 200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def requests_from(self, slug: str) -> int:
        """How many requests came from this site."""
        with self._lock:
            return sum(1 for seen in self.seen if seen.site == slug)

    def headers_from(self, slug: str) -> set[str | None]:
        """The location headers the requests from this site carried."""
        with self._lock:
            return {seen.header for seen in self.seen if seen.site == slug}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
