"""`make run`: Django's development server and a Celery worker with embedded beat, started
together, announced once the server answers, and stopped together.

Each child runs in a session (and so a process group) of its own, out of the terminal's
reach: a Ctrl-C (SIGINT to the terminal's foreground group: make and this process) or a
SIGTERM (which make forwards to this process) reaches only this supervisor, which sends one
SIGTERM to each child's group (runserver and its autoreloader child; the worker, which shuts
down warm), waits up to `STOP_SECONDS`, then SIGKILLs whatever is left. A second signal
skips the wait. Run as `python -m healthmon.devserver --port 8000 [--demo]`.
"""

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from healthmon import devtargets

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_SECONDS = 8.0
READY_SECONDS = 120.0
POLL_SECONDS = 0.2
WORKER = ("-m", "celery", "-A", "healthmon", "--quiet", "worker", "--beat")
WORKER_OPTIONS = ("--queues=celery,slow,dispatch", "--pool=threads", "--concurrency=4")
RULE = "=" * 72
PR_SET_PDEATHSIG = 1  # prctl(2)


class Stopped(Exception):
    """A stop was asked for (a signal) while the supervisor waited."""


class Supervisor:
    """Start children each in a session of its own; stop them all, once, on a signal."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_signal: int | None = None
        self.forced = False

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Note the first signal; a second one asks to skip the graceful wait."""
        if self.stop_signal is None:
            self.stop_signal = signum
            _say("\nStopping healthmon... (Ctrl-C again to stop at once)")
        else:
            self.forced = True

    def start(self, name: str, argv: Sequence[str], capture: bool = False) -> None:
        """Start a child in a new session, with no terminal input."""
        self.children[name] = subprocess.Popen(  # noqa: S603 - our own command lines
            argv,
            cwd=BASE_DIR,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture else None,
            start_new_session=True,
            preexec_fn=_end_with_parent,  # safe: the supervisor runs no threads
        )

    def run(self, name: str, argv: Sequence[str], capture: bool = False) -> str:
        """Run a child to its end; returns its output if captured. Raises `Stopped` on a
        signal and SystemExit if the child fails."""
        self.start(name, argv, capture)
        process = self.children[name]
        while process.poll() is None:
            self.sleep()
        output = process.stdout.read().decode() if process.stdout else ""
        del self.children[name]
        if process.returncode != 0:
            sys.stdout.write(output)
            raise SystemExit(f"{name} failed (exit status {process.returncode}).")
        return output

    def sleep(self) -> None:
        """Wait a moment; raises `Stopped` once a signal came."""
        if self.stop_signal is not None:
            raise Stopped
        time.sleep(POLL_SECONDS)
        if self.stop_signal is not None:
            raise Stopped

    def exited(self) -> str | None:
        """The name of a child that ended, if any did."""
        return next((name for name, p in self.children.items() if p.poll() is not None), None)

    def stop(self) -> None:
        """SIGTERM every child's group once; SIGKILL the groups still alive at the deadline."""
        for process in self.children.values():
            _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline and not self.forced and self._alive():
            time.sleep(0.05)
        left = self._alive()
        for pid in left:
            _signal_group(pid, signal.SIGKILL)
        for process in self.children.values():
            process.wait()
        if left:
            why = "as asked" if self.forced else f"after {STOP_SECONDS:.0f} s"
            _say(f"Killed what had not stopped ({why}).")

    def _alive(self) -> list[int]:
        """The groups that still hold a process (a child reaped, its own children too)."""
        alive = []
        for process in self.children.values():
            process.poll()
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            alive.append(process.pid)
        return alive


def _say(line: str) -> None:
    """Print a line; a terminal closed under us (SIGHUP) must not stop the stopping."""
    with contextlib.suppress(OSError):
        print(line, flush=True)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _end_with_parent() -> None:
    """In a child: be sent SIGTERM when the supervisor dies, even by SIGKILL (Linux), so that
    a killed `make run` leaves no worker probing on its own."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# The local server is asked directly, never through an HTTP proxy from the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _answers(url: str) -> bool:
    try:
        with _LOCAL.open(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def environment(port: int) -> dict[str, str]:
    """This process's environment with the development defaults `make run` documents."""
    env = dict(os.environ)
    env.setdefault("DEBUG", "true")
    env.setdefault("WEB_BASE_URL", f"http://127.0.0.1:{port}")
    # Probes may reach private addresses here (your own services); production refuses them.
    env.setdefault("PROBE_ALLOW_PRIVATE_NETWORKS", "true")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BASE_DIR), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def mail_destination(env: dict[str, str]) -> str:
    """Where the product's mails (invitations, password resets) go, in words."""
    backend = env.get("EMAIL_BACKEND", "") or "console"
    if "console" in backend:
        return "printed in this terminal"
    if "filebased" in backend:
        folder = env.get("EMAIL_FILE_PATH") or f"{env.get('STATE_DIR') or 'var'}/mail"
        return f"written to files in {folder}"
    if "smtp" in backend:
        return f"sent by SMTP to {env.get('EMAIL_HOST', 'localhost')}:{env.get('EMAIL_PORT', 25)}"
    return f"handed to {backend}"


def banner(url: str, env: dict[str, str], demo: str) -> str:
    """The lines printed once the server answers."""
    lines = [
        RULE,
        f"healthmon is running at {url}",
        f"  open {url}/register to create your organization",
        *[f"  {line}" for line in demo.strip().splitlines()],
        f"  API docs: {url}/api/docs/",
        f"  Django admin: run `make superuser` in another terminal, then open {url}/admin/",
        f"  mails (invitations, password resets) are {mail_destination(env)}",
        "  stop: press Ctrl-C",
        RULE,
    ]
    return "\n".join(lines)


def serve(supervisor: Supervisor, port: int, demo_port: int | None) -> None:
    """Migrate, seed the demo if asked, start the children and watch them."""
    python = sys.executable
    print("Preparing the database (migrate)...", flush=True)
    supervisor.run("migrate", [python, "manage.py", "migrate", "--noinput", "-v", "0"])
    supervisor.start("worker", [python, *WORKER, *WORKER_OPTIONS, "--loglevel=INFO"])
    supervisor.start("web", [python, "manage.py", "runserver", f"127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_SECONDS
    while not _answers(f"{url}/healthz"):
        if (ended := supervisor.exited()) or time.monotonic() > deadline:
            raise SystemExit(f"The {ended or 'web server'} did not start: see above.")
        supervisor.sleep()
    demo = ""
    if demo_port is not None:
        # Seeded once the worker is up, so the new endpoints' first checks are not late.
        devtargets.serve("127.0.0.1", demo_port)
        seed = [python, "manage.py", "seed_demo", f"--targets=http://127.0.0.1:{demo_port}"]
        demo = supervisor.run("seed_demo", seed, capture=True)
    print(banner(url, supervisor.env, demo), flush=True)
    while (ended := supervisor.exited()) is None:
        supervisor.sleep()
    raise SystemExit(f"The {ended} stopped (exit status {supervisor.children[ended].poll()}).")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until a signal; returns the exit status (0 after a stop that was asked for)."""
    parser = argparse.ArgumentParser(prog="python -m healthmon.devserver")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--demo", action="store_true", help="seed a demo organization")
    parser.add_argument("--demo-port", type=int, help="where the demo targets listen (PORT+1)")
    args = parser.parse_args(argv)
    demo_port = (args.demo_port or args.port + 1) if args.demo else None
    for port, variable in ((args.port, "PORT"), (demo_port, "DEMO_PORT")):
        if port is not None and not _port_free(port):
            print(f"Port {port} is in use: choose another with {variable}=...", file=sys.stderr)
            return 1
    supervisor = Supervisor(environment(args.port))
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, supervisor.on_signal)
    status = 0
    try:
        serve(supervisor, args.port, demo_port)
    except Stopped:
        pass
    except SystemExit as exc:
        print(exc.code, file=sys.stderr, flush=True)
        status = 1
    finally:
        supervisor.stop()
    _say("healthmon stopped.")
    return status


if __name__ == "__main__":
    sys.exit(main())
