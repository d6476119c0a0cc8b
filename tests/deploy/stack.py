"""The product deployed as the README says, for the deploy test: a fresh clone of the
repository, a fresh PostgreSQL database, the Procfile's commands run as written, and a small
HTTP client that talks to gunicorn as a TLS-terminating proxy would."""

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from cryptography.fernet import Fernet
from psycopg import sql

from tests.faults.processes import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
# The worktree's virtualenv supplies the dependencies; the clone supplies the code.
VENV_BIN = Path(sys.executable).parent
# As root, each process sees the clone through a read-only bind mount of its own mount
# namespace (root writes through file modes), entered again so that the working directory
# is on it too; otherwise the clone's files are made read-only.
READ_ONLY_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && cd "$0" && '


def procfile(path: Path) -> dict[str, str]:
    """The Procfile's processes: name to command line, in file order."""
    processes = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, command = line.partition(":")
            processes[name.strip()] = command.strip()
    return processes


@contextlib.contextmanager
def fresh_clone() -> Iterator[Path]:
    """A `git clone` of this checkout's HEAD, read-only for its processes (`Deployment`)."""
    parent = Path(tempfile.mkdtemp(prefix="hm_deploy_"))
    try:
        parent.chmod(0o755)
        clone = parent / "healthmon"
        subprocess.run(  # noqa: S603 - fixed command line
            ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)],  # noqa: S607
            check=True,
        )
        if os.geteuid() != 0:
            for path in [clone, *clone.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode & 0o555)
        yield clone
    finally:
        for path in [parent, *parent.rglob("*")]:
            with contextlib.suppress(OSError):
                path.chmod(path.stat().st_mode | 0o700)
        shutil.rmtree(parent, ignore_errors=True)


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty PostgreSQL database (hm_deploy_*) as a DATABASE_URL; dropped after."""
    # The server of the suite's DATABASE_URL when that is PostgreSQL, else the local one.
    suite = os.environ.get("DATABASE_URL", "")
    server = "postgres://postgres@127.0.0.1:5432/postgres"
    if suite.startswith(("postgres://", "postgresql://")):
        server = suite.rsplit("/", 1)[0] + "/postgres"
    name = f"hm_deploy_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield server.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as connection:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            connection.execute(drop.format(sql.Identifier(name)))


def production_environment(state: Path, database_url: str, broker_url: str) -> dict[str, str]:
    """The production variables the README lists, and nothing of this test process's."""
    return {
        "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url,
        "CACHE_URL": broker_url.rsplit("/", 1)[0] + "/1",
        "CELERY_BROKER_URL": broker_url,
        "SECURE_PROXY_SSL_HEADER": "true",
        "STATE_DIR": str(state),
        "STATIC_ROOT": str(state / "static"),
        "WEB_BASE_URL": "https://healthmon.example.com",
        "PORT": str(free_port()),
        # The peers of this test are on loopback, which production refuses unless allowed.
        "PROBE_ALLOWED_NETWORKS": "127.0.0.0/8",
        # The shortest interval the product accepts is a production setting (default 10 s).
        "MIN_CHECK_INTERVAL": "5",
    }


class Deployment:
    """The Procfile's processes in the clone, each in a session of its own and logging to a
    file of the log directory, none able to write to the clone."""

    def __init__(self, clone: Path, logs: Path, env: dict[str, str]) -> None:
        self.clone = clone
        self.logs = logs
        self.env = {**env, "PYTHONPATH": str(clone)}
        self.commands = procfile(clone / "Procfile")
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def _argv(self, line: str) -> list[str]:
        if os.geteuid() == 0:
            return ["unshare", "--mount", "sh", "-c", READ_ONLY_MOUNT + line, str(self.clone)]
        return ["sh", "-c", line]

    def run(self, name: str, timeout: float = 120) -> str:
        """Run a one-off Procfile line (release) to its end; returns its output."""
        return self.shell(self.commands[name], timeout)

    def shell(self, line: str, timeout: float = 120) -> str:
        """Run a command line as the Procfile's are run; returns its output. Fails unless
        it succeeds."""
        result = subprocess.run(  # noqa: S603 - our own command lines
            self._argv(line),
            cwd=self.clone,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert result.returncode == 0, f"{line} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def start(self, name: str) -> int:
        """Start a long-running Procfile process; returns its pid."""
        with (self.logs / f"{name}.log").open("a") as log:
            process = subprocess.Popen(  # noqa: S603 - the Procfile's own line
                self._argv(f"exec {self.commands[name]}"),
                cwd=self.clone,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.running[name] = process
        return process.pid

    def kill(self, name: str) -> None:
        """SIGKILL the process and its children (a worker and its pool), as a crash would."""
        process = self.running.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def alive(self, name: str) -> bool:
        return self.running[name].poll() is None

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop_all(self) -> None:
        """SIGTERM every process group; SIGKILL what has not ended within 10 s."""
        for process in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        self.running.clear()

    def print_logs(self) -> None:
        """The end of every log: pytest shows it only when the test fails."""
        for path in sorted(self.logs.glob("*.log")):
            print(f"--- {path.stem} ---\n{path.read_text(errors='replace')[-3000:]}")


class Api:
    """JSON over plain HTTP to gunicorn, marked as forwarded from HTTPS by a proxy."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.token = ""

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        headers = {"X-Forwarded-Proto": "https", "Accept": "application/json", **(headers or {})}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(  # noqa: S310 - loopback only
            self.base + path, data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def get(self, path: str) -> Any:
        status, body = self.call("GET", path)
        assert status == 200, (path, status, body)
        return body

    def post(self, path: str, body: Any) -> Any:
        status, answer = self.call("POST", path, body)
        assert status == 201, (path, status, answer)
        return answer

    def answers(self) -> bool:
        """gunicorn accepts connections and the API answers."""
        try:
            return self.call("GET", "/api/v1/health")[0] == 200
        except OSError:
            return False


def wait_until(condition: Any, timeout: float) -> None:
    """Poll every 0.2 s (the checks come every few seconds)."""
    wait_for(condition, timeout, interval=0.2)
