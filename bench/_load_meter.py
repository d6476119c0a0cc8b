"""What a phase of the load benchmark used (it is no benchmark): CPU of the server, of the
database backends, of the load client and of the whole machine, and PostgreSQL's blocks."""

import asyncio
import time
from pathlib import Path

from _support import CPUS, cpu_seconds, pg_url, tree_cpu_seconds


def machine_busy() -> tuple[float, float]:
    """Busy and total CPU seconds of the whole machine since boot."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / 100, sum(ticks) / 100


def database_backends(database: str) -> list[int]:
    """Processes of the PostgreSQL backends connected to one database."""
    found = []
    marker = f" {database} ".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if command.startswith(b"postgres: ") and marker in command:
            found.append(int(entry.name))
    return found


class Meter:
    """CPU used during a phase. Backends come and go (connections are recycled after
    `DATABASE_CONN_MAX_AGE`), so they are polled every second; a backend's last second
    before it exits is missed."""

    def __init__(self, server_pid: int, database: str) -> None:
        self.server_pid = server_pid
        self.database = database

    def blocks(self) -> tuple[int, int]:
        """The database's blocks found in PostgreSQL's shared buffers, and read from outside
        them (the OS page cache or the disk), since the statistics were reset."""
        import psycopg

        with psycopg.connect(pg_url(self.database)) as conn:
            hit, read = conn.execute(
                "SELECT blks_hit, blks_read FROM pg_stat_database WHERE datname = %s",
                [self.database],
            ).fetchone()
        return int(hit), int(read)

    def start(self) -> None:
        self.started_blocks = self.blocks()
        self.wall = time.monotonic()
        self.machine = machine_busy()
        self.server = tree_cpu_seconds(self.server_pid)
        self.client = time.process_time()
        self.first = {pid: cpu_seconds(pid) for pid in database_backends(self.database)}
        self.last = dict(self.first)

    def poll(self) -> None:
        for pid in database_backends(self.database):
            self.first.setdefault(pid, 0.0)
            self.last[pid] = cpu_seconds(pid) or self.last.get(pid, 0.0)

    async def run(self, until: float) -> None:
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            await asyncio.sleep(1)
            self.poll()

    def stop(self) -> tuple[dict[str, float], dict[str, float]]:
        """Shares of the machine (0..1) and CPU seconds, by process kind."""
        self.poll()
        wall = time.monotonic() - self.wall
        busy, total = (b - a for a, b in zip(self.machine, machine_busy(), strict=True))
        seconds = {
            "gunicorn": tree_cpu_seconds(self.server_pid) - self.server,
            "postgres": sum(self.last[pid] - self.first[pid] for pid in self.last),
            "client": time.process_time() - self.client,
        }
        shares = {"machine": busy / total if total else 0.0}
        shares.update((kind, value / (wall * CPUS)) for kind, value in seconds.items())
        shares["other"] = max(0.0, 2 * shares["machine"] - sum(shares.values()))
        hit, read = (b - a for a, b in zip(self.started_blocks, self.blocks(), strict=True))
        return shares, {**seconds, "wall": wall, "blocks_hit": hit, "blocks_read": read}
