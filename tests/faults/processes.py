"""Real processes for the fault tests: a private Redis server, Celery workers and beat,
gunicorn; and the few probes of /proc the tests measure them with."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
POSTGRESQL_ONLY = pytest.mark.postgres(
    "worker, beat and web processes need the test database on a server"
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], object], timeout: float, interval: float = 0.05) -> float:
    """Poll until the condition holds; returns how long it took. Fails after `timeout`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not reached within {timeout} s: {condition.__doc__}")
        time.sleep(interval)
    return time.monotonic() - started


def database_url(host: str | None = None, port: int | None = None) -> str:
    """The test database as a DATABASE_URL, optionally through another host and port."""
    database = settings.DATABASES["default"]
    password = f":{database['PASSWORD']}" if database.get("PASSWORD") else ""
    host = host or database["HOST"] or "127.0.0.1"
    port = port or database["PORT"] or 5432
    return f"postgres://{database['USER']}{password}@{host}:{port}/{database['NAME']}"


def memory_kb(pid: int) -> dict[str, int]:
    """The process's resident memory now (VmRSS) and at its peak (VmHWM), in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def children(pid: int) -> list[int]:
    """The direct child processes of `pid`."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


class RedisServer:
    """A redis-server of the test's own on a free port, without persistence: killing it
    loses everything queued, as a broker restart without AOF does."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.directory)]
        log = (self.directory / "redis.log").open("a")
        with log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        with client:
            wait_for(lambda: self._answers(client), timeout=10)

    @staticmethod
    def _answers(client: redis.Redis) -> bool:
        """Redis answers PING."""
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    def kill(self) -> None:
        """SIGKILL: no shutdown, no save."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


class Processes:
    """Processes started by one test, each in a session of its own (so that a signal can
    reach a worker and its pool together) and logging to a file; all stopped at the end."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.env = {**os.environ, **env}
        self.started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def spawn(self, name: str, *command: str, env: dict[str, str] | None = None) -> int:
        """Start a command; returns its pid."""
        log = (self.directory / f"{name}.log").open("a")
        with log:
            process = subprocess.Popen(  # noqa: S603 - our own command lines
                command,
                env={**self.env, **(env or {})},
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append((name, process))
        return process.pid

    def celery(self, name: str, *args: str, env: dict[str, str] | None = None) -> int:
        """Start `celery -A healthmon <args>`; returns its pid (see `wait_ready`)."""
        command = [sys.executable, "-m", "celery", "-A", "healthmon", *args, "--loglevel=INFO"]
        return self.spawn(name, *command, env=env)

    def worker(self, name: str, *args: str, queues: str = "celery,slow") -> int:
        """A worker on the batch queues (see `dispatcher` for the dispatcher's). Without
        the cluster chatter (mingle, gossip, heartbeats): it only slows the start down."""
        quiet = ("--without-mingle", "--without-gossip", "--without-heartbeat")
        return self.celery(name, "worker", "-n", f"{name}@%h", "-Q", queues, *quiet, *args)

    def dispatcher(self, name: str = "dispatcher") -> int:
        """The worker of the dispatcher's queue, as the README runs it."""
        return self.worker(name, "--concurrency=1", queues="dispatch")

    def beat(self, name: str = "beat") -> int:
        return self.celery(name, "beat", "-s", str(self.directory / f"{name}-schedule"))

    def wait_ready(self, *names: str, timeout: float = 30) -> None:
        """Wait until these workers say they are ready and these beats have started."""
        for name in names:
            marker = "beat: Starting" if name.startswith("beat") else " ready."
            wait_for(lambda name=name, marker=marker: marker in self.log(name), timeout)

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def kill(self, pid: int) -> None:
        """SIGKILL the process and everything in its session (a worker and its pool)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        for _, process in self.started:
            if process.pid == pid:
                process.wait(timeout=10)

    @staticmethod
    def kill_one(pid: int) -> None:
        """SIGKILL this process only (a pool process, as the OOM killer would)."""
        os.kill(pid, signal.SIGKILL)

    def stop_all(self) -> None:
        """SIGTERM everything still running; SIGKILL what has not ended within 10 s."""
        running = [p for _, p in self.started if p.poll() is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(process.pid)
        for process in running:  # pool processes left behind by a killed parent
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    def print_logs(self) -> None:
        """The end of every log: pytest shows it only when the test fails."""
        for name in dict(self.started):
            print(f"--- {name} ---\n{self.log(name)[-3000:]}")
