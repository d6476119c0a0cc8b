"""A real PostgreSQL streaming replica of the tests' primary, in a temporary directory.

`pg_basebackup -R` copies the primary's whole cluster (so the test database made on the
primary is on the replica by itself) and writes `primary_conninfo` and `standby.signal`;
`pg_ctl` starts it as a hot standby on a free port. The primary must accept replication
connections from 127.0.0.1: when its pg_hba.conf has no rule for that, `allow_replication`
puts one at its top for the session and takes it out again (README, "Read replicas").

The replica holds a replication slot on the primary, so that the primary keeps the WAL the
replica has not received yet (other work on a shared primary writes gigabytes, and the
replica is stopped for a while in a test). A slot left behind would keep WAL forever: the
slot is dropped at the end. A test session that was killed leaves its replica running (the
server outlives the session) and with it an active slot, and its rule in pg_hba.conf: at the
start, the replicas of sessions whose process is gone are stopped and deleted, their slots
dropped and their rules taken out.
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

BIN = Path("/usr/lib/postgresql/15/bin")
# Settings a hot standby needs at least as high as its primary's.
MATCH_PRIMARY = (
    "max_connections",
    "max_worker_processes",
    "max_wal_senders",
    "max_prepared_transactions",
    "max_locks_per_transaction",
)
HBA_MARK = "# healthmon test replica, pid"
SLOT_PREFIX = "healthmon_test_replica_"
DIR_PREFIX = "healthmon-replica-"  # then the session's pid, a dash and mkdtemp's letters


def _as_postgres(command: list[str]) -> list[str]:
    """initdb, pg_ctl and the server refuse to run as root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str]) -> None:
    done = subprocess.run(  # noqa: S603 - our own command line
        _as_postgres(command), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr.strip() or done.stdout.strip()}")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # a live process of another user
        return False
    return False


def reap_dead_replicas(parent: Path) -> list[Path]:
    """Stop and delete the replicas under `parent` whose test session is gone."""
    reaped = []
    for directory in parent.glob(f"{DIR_PREFIX}*-*"):
        pid = directory.name.removeprefix(DIR_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or not _gone(int(pid)):
            continue
        data = directory / "data"
        if (data / "postmaster.pid").exists():
            stop = [str(BIN / "pg_ctl"), "stop", "-w", "-m", "immediate", "-D", str(data)]
            subprocess.run(_as_postgres(stop), capture_output=True, check=False)  # noqa: S603
        shutil.rmtree(directory, ignore_errors=True)
        reaped.append(directory)
    return reaped


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def drop_dead_rules(hba: Path) -> bool:
    """Take out the rules a killed test session left in pg_hba.conf; True if there were."""
    lines = hba.read_text().splitlines(True)
    kept = [
        line
        for line in lines
        if HBA_MARK not in line or not _gone(int(line.rsplit(HBA_MARK, 1)[1].split()[0]))
    ]
    if len(kept) == len(lines):
        return False
    hba.write_text("".join(kept))
    return True


@contextmanager
def allow_replication(primary: psycopg.Connection[Any]) -> Iterator[None]:
    """Let 127.0.0.1 open replication connections to the primary while inside."""
    hba = Path(str(primary.execute("SHOW hba_file").fetchone()[0]))  # type: ignore[index]
    if drop_dead_rules(hba):
        primary.execute("SELECT pg_reload_conf()")
    allowed = primary.execute(
        "SELECT count(*) FROM pg_hba_file_rules WHERE 'replication' = ANY(database)"
        " AND auth_method = 'trust' AND error IS NULL"
    ).fetchone()
    if allowed and allowed[0]:
        yield
        return
    mark = f"{HBA_MARK} {os.getpid()}"
    # At the top: the first rule that matches decides.
    rule = f"host replication postgres 127.0.0.1/32 trust  {mark}\n"
    hba.write_text(rule + hba.read_text())
    primary.execute("SELECT pg_reload_conf()")
    try:
        yield
    finally:
        kept = [line for line in hba.read_text().splitlines(True) if mark not in line]
        hba.write_text("".join(kept))
        primary.execute("SELECT pg_reload_conf()")


class StreamingReplica:
    """A hot standby of the primary that `primary` (libpq keywords) reaches."""

    def __init__(self, primary: dict[str, Any], dbname: str) -> None:
        self.primary = primary
        self.dbname = dbname
        self.slot = f"{SLOT_PREFIX}{os.getpid()}"
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-"))
        self.data = self.dir / "data"
        if os.geteuid() == 0:
            os.chown(self.dir, pwd.getpwnam("postgres").pw_uid, -1)

    def _on_primary(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(**self.primary, dbname="postgres", autocommit=True) as primary:
            return primary.execute(query, params or None).fetchall()

    def _drop_dead_slots(self) -> None:
        """Stop the replicas of test sessions whose process is gone, and drop their slots."""
        reap_dead_replicas(self.dir.parent)
        deadline = time.monotonic() + 10  # a stopped replica's WAL sender ends soon after
        while True:
            dead = [
                (slot, active)
                for slot, active in self._on_primary(
                    "SELECT slot_name, active FROM pg_replication_slots WHERE slot_name LIKE %s",
                    f"{SLOT_PREFIX}%",
                )
                if _gone(int(slot.removeprefix(SLOT_PREFIX)))
            ]
            for slot, active in dead:
                if not active:
                    self._on_primary("SELECT pg_drop_replication_slot(%s)", slot)
            if all(not active for _, active in dead) or time.monotonic() > deadline:
                return
            time.sleep(0.1)

    def create(self) -> None:
        """Copy the primary and write the little configuration the copy lacks."""
        self._drop_dead_slots()
        _run(
            [
                str(BIN / "pg_basebackup"),
                f"--host={self.primary['host']}",
                f"--port={self.primary['port']}",
                f"--username={self.primary['user']}",
                f"--pgdata={self.data}",
                "--write-recovery-conf",
                "--create-slot",
                f"--slot={self.slot}",
                "--wal-method=stream",
                "--checkpoint=fast",
                "--no-sync",  # a throwaway copy
                "--no-password",
            ]
        )
        # Debian keeps a cluster's configuration outside its data directory: none came along.
        hba = "local all all trust\nhost all all 127.0.0.1/32 trust\n"
        for name, text in (("postgresql.conf", ""), ("pg_hba.conf", hba), ("pg_ident.conf", "")):
            (self.data / name).write_text(text)
            if os.geteuid() == 0:
                os.chown(self.data / name, pwd.getpwnam("postgres").pw_uid, -1)

    def start(self) -> None:
        """Start the standby and wait until it accepts connections."""
        with psycopg.connect(**self.primary, dbname="postgres") as primary:
            same = {name: primary.execute(f"SHOW {name}").fetchone()[0] for name in MATCH_PRIMARY}  # type: ignore[index]
        options = {
            "port": self.port,
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": self.dir,
            "hot_standby": "on",
            "ssl": "off",
            "fsync": "off",  # nor does it sync its data directory at start (minutes here)
            "shared_buffers": "32MB",
            "shared_preload_libraries": "",
            **same,
        }
        flags = " ".join(f"-c {name}={value!s}" for name, value in options.items())
        flags = flags.replace("shared_preload_libraries=", "shared_preload_libraries=''")
        log = self.dir / "server.log"
        _run(
            [
                str(BIN / "pg_ctl"),
                "start",
                "-w",
                "-t",
                "300",
                "-D",
                str(self.data),
                "-l",
                str(log),
                "-o",
                flags,
            ]
        )

    def stop(self) -> None:
        """Stop the standby (fast: its sessions are cut)."""
        _run([str(BIN / "pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(self.data)])

    def remove(self) -> None:
        """Stop it if it runs, drop its slot and delete its directory."""
        try:
            if (self.data / "postmaster.pid").exists():
                self.stop()
        finally:
            self._on_primary(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                " WHERE slot_name = %s",
                self.slot,
            )
            shutil.rmtree(self.dir, ignore_errors=True)

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run a query on the replica's copy of the test database."""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=self.dbname, autocommit=True
        ) as replica:
            return replica.execute(query, params or None).fetchall()

    def run(self, statement: str) -> None:
        """Run a statement that returns no rows (ALTER SYSTEM, ...) on the replica."""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=self.dbname, autocommit=True
        ) as replica:
            replica.execute(statement)

    def catch_up(self, primary_lsn: str, timeout: float = 300.0) -> None:
        """Wait until the replica has replayed the primary's WAL up to `primary_lsn`."""
        deadline = time.monotonic() + timeout
        while not self.sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", primary_lsn)[0][0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica did not replay up to {primary_lsn}")
            time.sleep(0.02)

    def wait_lag_over(self, seconds: float, lag_sql: str, timeout: float = 30.0) -> None:
        """Wait until `lag_sql` on the replica says it is more than `seconds` behind."""
        deadline = time.monotonic() + timeout
        while self.sql(lag_sql)[0][0] <= seconds:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica stayed within {seconds} s of the primary")
            time.sleep(0.05)
