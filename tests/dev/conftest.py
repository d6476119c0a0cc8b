"""`make run` and `make demo` as a developer runs them: in a fresh clone of this checkout
(its virtualenv borrowed, nothing installed), on free ports, with a SQLite database and a
state directory of the test's own, in a process group of their own as a terminal gives."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.deploy.stack import fresh_clone
from tests.faults.processes import children, free_port, wait_for

VENV = Path(sys.executable).parent.parent
RULE = "=" * 72


@pytest.fixture(scope="module")
def checkout() -> Iterator[Path]:
    """A clone of HEAD whose .venv is this test run's virtualenv."""
    with fresh_clone() as clone:
        mode = clone.stat().st_mode
        clone.chmod(mode | 0o200)
        (clone / ".venv").symlink_to(VENV)
        clone.chmod(mode)
        yield clone


def process_identity(pid: int) -> tuple[int, str] | None:
    """(pid, start time) of a live process; None once it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in "ZX" else (pid, fields[19])


class DevRun:
    """One `make <target>` in the checkout, its output collected line by line."""

    def __init__(self, checkout: Path, state: Path, target: str, *variables: str) -> None:
        self.port = free_port()
        state.mkdir(exist_ok=True)
        env = {
            "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(state),
            "LANG": "C.UTF-8",
            "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
            "STATE_DIR": str(state),
            "PROMETHEUS_MULTIPROC_DIR": str(state / "metrics"),
        }
        # -o: the borrowed virtualenv is installed; never reinstall it from the clone.
        self.process = subprocess.Popen(  # noqa: S603 - fixed command line
            ["make", "-o", ".venv/.installed", target, f"PORT={self.port}", *variables],  # noqa: S607
            cwd=checkout,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout:
            for line in self.process.stdout:
                self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def banner(self, timeout: float = 120) -> str:
        """Wait for the start banner; returns it."""

        def shown() -> bool:
            """the banner"""
            assert self.process.poll() is None, f"make ended early:\n{self.output}"
            return any(line.startswith("healthmon is running at") for line in self.lines) and (
                self.lines.count(RULE) >= 2
            )

        wait_for(shown, timeout, interval=0.2)
        first = self.lines.index(RULE)
        return "\n".join(self.lines[first : self.lines.index(RULE, first + 1) + 1])

    def processes(self) -> set[tuple[int, str]]:
        """make and every process under it, now."""
        found, pending = set(), [self.process.pid]
        while pending:
            pid = pending.pop()
            identity = process_identity(pid)
            if identity is not None:
                found.add(identity)
                with contextlib.suppress(FileNotFoundError):
                    pending += children(pid)
        return found

    def stop(self, how: Callable[[int], None]) -> tuple[int, float]:
        """Signal as `how` does; returns the number of output lines before the signal and
        how long it took until make and every process it had started were gone."""
        processes = self.processes()
        before = len(self.lines)
        started = time.monotonic()
        how(self.process.pid)

        def gone() -> bool:
            """every process gone"""
            return all(process_identity(pid) != (pid, start) for pid, start in processes)

        wait_for(gone, timeout=10, interval=0.05)
        took = time.monotonic() - started
        self.process.wait(timeout=5)
        self._reader.join(timeout=5)
        return before, took

    def kill(self) -> None:
        """Whatever is left, gone: make's group and each child's session."""
        for pid, _ in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


@pytest.fixture
def make_run(checkout: Path) -> Iterator[Callable[..., DevRun]]:
    """Start `make <target> VAR=...` in the checkout with a state directory; killed after."""
    runs: list[DevRun] = []

    def start(target: str, state: Path, *variables: str) -> DevRun:
        run = DevRun(checkout, state, target, *variables)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.kill()
        print(f"--- make {run.process.args[3]} ---\n{run.output[-4000:]}")
