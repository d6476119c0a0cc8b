"""Run a benchmark on a PostgreSQL server of its own, started with every setting of the
README's "PostgreSQL settings" for this machine (2 cores, 24 GB: `shared_buffers=6GB`, ...),
while the machine's server keeps its stock ones for everything else.

    .venv/bin/python bench/tuned_server.py bench/analytics.py --quick
    .venv/bin/python bench/tuned_server.py bench/load.py --quick --tenants-only

`initdb` makes a cluster in a temporary directory (run as the postgres user when we are
root: PostgreSQL refuses root), `pg_ctl` starts it on a free loopback port with
`README_SETTINGS` (bench/_support.py), and the benchmark runs with `BENCH_PG_PORT` set to
that port, so its throwaway database lives there; its first line prints the server's
settings. The server is stopped and its directory deleted at the end, also on an error or
Ctrl-C. `--keep` leaves it running and says how to stop it (to `--reuse` a kept database).
"""

import argparse
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _support import README_SETTINGS, free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def as_postgres(command: list[str]) -> list[str]:
    """initdb, pg_ctl and the server refuse to run as root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def run(command: list[str]) -> None:
    done = subprocess.run(as_postgres(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{Path(command[0]).name} failed: {done.stderr.strip() or done.stdout.strip()}")


def start(data: Path, port: int) -> None:
    """A new cluster in `data`, started on `port` with the README's settings."""
    directory = data.parent
    if os.geteuid() == 0:
        os.chown(directory, pwd.getpwnam("postgres").pw_uid, -1)
    run([str(PG_BIN / "initdb"), "--no-sync", "-U", "postgres", "--auth=trust", "-D", str(data)])
    options = {
        "port": port,
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": directory,
        **README_SETTINGS,
    }
    flags = " ".join(f"-c {name}={value}" for name, value in options.items())
    log = directory / "server.log"
    run([str(PG_BIN / "pg_ctl"), "start", "-w", "-D", str(data), "-l", str(log), "-o", flags])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="leave the server running")
    parser.add_argument("benchmark", help="a script under bench/")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the benchmark's own")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="healthmon-bench-pg-")) / "data"
    port = free_port()
    # Inside the try: a cluster that failed to start still leaves no directory behind.
    try:
        start(data, port)
        print(f"tuned server: port {port}, README's settings for 2 cores / 24 GB", flush=True)
        done = subprocess.run(
            [sys.executable, args.benchmark, *args.arguments],
            env={**os.environ, "BENCH_PG_PORT": str(port)},
            check=False,
        )
    finally:
        running = (data / "postmaster.pid").exists()
        if args.keep and running:
            print(f"kept: BENCH_PG_PORT={port}; stop it with: pg_ctl stop -D {data}")
        else:
            if running:
                run([str(PG_BIN / "pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(data)])
            shutil.rmtree(data.parent, ignore_errors=True)
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
