"""The replica fixture cleans up after test sessions that were killed (CI runs cut short)."""

import os
import subprocess
import sys
from pathlib import Path

from tests.healthmon.replica_server import DIR_PREFIX, HBA_MARK, drop_dead_rules, reap_dead_replicas


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_reaps_the_replicas_of_dead_sessions_only(tmp_path: Path) -> None:
    dead = tmp_path / f"{DIR_PREFIX}{_dead_pid()}-abc123"
    alive = tmp_path / f"{DIR_PREFIX}{os.getpid()}-def456"
    unnamed = tmp_path / f"{DIR_PREFIX}xyz789"  # made before directories carried the pid
    other = tmp_path / "something-else-1-x"
    for directory in (dead, alive, unnamed, other):
        (directory / "data").mkdir(parents=True)

    assert reap_dead_replicas(tmp_path) == [dead]

    assert not dead.exists()
    assert alive.exists()
    assert unnamed.exists()
    assert other.exists()


def test_takes_out_the_hba_rules_of_dead_sessions_only(tmp_path: Path) -> None:
    hba = tmp_path / "pg_hba.conf"
    rule = "host replication postgres 127.0.0.1/32 trust  {mark} {pid}\n"
    mine = rule.format(mark=HBA_MARK, pid=os.getpid())
    theirs = rule.format(mark=HBA_MARK, pid=_dead_pid())
    hba.write_text(f"{theirs}local all all peer\n{mine}")

    assert drop_dead_rules(hba)

    assert hba.read_text() == f"local all all peer\n{mine}"
    assert not drop_dead_rules(hba)
