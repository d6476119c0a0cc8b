"""`make run` and `make demo` as a newcomer meets them (issue 20): a banner that says where to
go, a quiet log, one clean stop on Ctrl-C or on a TERM to make, and a demo that seeds once."""

import contextlib
import json
import os
import signal
import sqlite3
import urllib.request
from pathlib import Path

from tests.dev.conftest import process_identity
from tests.faults.processes import free_port, wait_for

HEARTBEAT = "SELECT beat_at FROM monitoring_heartbeat WHERE name = 'dispatcher'"


def _value(database, sql):
    """The first column of the first row, or None."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        row = connection.execute(sql).fetchone()
    return None if row is None else row[0]


def assert_stopped_cleanly(run, before, took, statuses):
    after = run.lines[before:]
    assert took < 10
    assert run.process.returncode in statuses, run.output
    assert len(after) < 50, "\n".join(after)
    for noise in ("Traceback", "RecursionError", "Segmentation fault", "Error", "Killed"):
        assert not any(noise in line for line in after), "\n".join(after)
    assert sum("Warm shutdown" in line for line in after) <= 1
    assert after[-1] == "healthmon stopped.", "\n".join(after)


def test_make_run_says_where_to_go_and_logs_no_tick_lines(make_run, tmp_path):
    run = make_run("run", tmp_path)

    banner = run.banner()
    url = f"http://127.0.0.1:{run.port}"
    with urllib.request.urlopen(f"{url}/register") as page:  # noqa: S310 - loopback
        assert page.status == 200
    since = len(run.lines)
    ticks = set()

    def three_ticks():
        """three dispatcher ticks (its heartbeat row moves on at each)"""
        ticks.add(_value(tmp_path / "db.sqlite3", HEARTBEAT))
        return len(ticks - {None}) >= 3

    wait_for(three_ticks, 30, interval=0.1)
    quiet = run.lines[since:]

    assert f"healthmon is running at {url}" in banner
    assert f"open {url}/register to create your organization" in banner
    assert "make superuser" in banner
    assert "mails (invitations, password resets) are printed in this terminal" in banner
    assert "stop: press Ctrl-C" in banner
    assert not any("Sending due task" in line or "succeeded in" in line for line in quiet), quiet
    assert not any("No hostname was supplied" in line for line in run.lines), run.output


def test_ctrl_c_stops_make_run_and_every_process_it_started(make_run, tmp_path):
    run = make_run("run", tmp_path)
    run.banner()
    started = run.processes()

    # A terminal's Ctrl-C: SIGINT to the whole foreground process group (make and the
    # supervisor; the children run in sessions of their own).
    before, took = run.stop(lambda pid: os.killpg(pid, signal.SIGINT))

    # make, the supervisor, the worker (with beat), runserver and its autoreloader child.
    assert len(started) >= 5, started
    assert_stopped_cleanly(run, before, took, statuses=(0, 130, -signal.SIGINT))


def test_a_term_sent_to_make_stops_make_run_and_every_process_it_started(make_run, tmp_path):
    run = make_run("run", tmp_path)
    run.banner()
    started = run.processes()

    before, took = run.stop(lambda pid: os.kill(pid, signal.SIGTERM))

    assert len(started) >= 5, started
    # GNU make passes a TERM on to its child, waits for it, then ends by the same signal.
    assert_stopped_cleanly(run, before, took, statuses=(0, 143, -signal.SIGTERM))


def _login(url, email, password):
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{url}/api/v1/auth/login",
        data=json.dumps({"email": email, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
        return response.status


def test_make_demo_prints_a_login_that_works_and_seeds_its_organization_once(make_run, tmp_path):
    database = tmp_path / "db.sqlite3"
    demo_port = f"DEMO_PORT={free_port()}"
    first = make_run("demo", tmp_path, demo_port)
    banner = first.banner()
    url = f"http://127.0.0.1:{first.port}"
    login = f"demo: sign in at {url}/login as demo@example.com, password healthmon-demo"
    assert login in banner
    assert "4 endpoint(s) created, 0 already there" in banner
    assert _login(url, "demo@example.com", "healthmon-demo") == 200
    # The endpoints probe the demo services at once: the charts have data in seconds.
    wait_for(lambda: _value(database, "SELECT count(*) FROM monitoring_checkresult") >= 4, 30)
    first.stop(lambda pid: os.killpg(pid, signal.SIGINT))

    second = make_run("demo", tmp_path, demo_port)
    again = second.banner()
    second.stop(lambda pid: os.killpg(pid, signal.SIGINT))

    assert "demo@example.com, password healthmon-demo" in again
    assert "0 endpoint(s) created, 4 already there" in again
    assert _value(database, "SELECT count(*) FROM accounts_organization") == 1
    assert _value(database, "SELECT count(*) FROM accounts_user") == 1
    assert _value(database, "SELECT count(*) FROM monitoring_endpoint") == 4


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def test_a_killed_supervisor_leaves_no_worker_probing(make_run, tmp_path):
    """kill -9 of the supervisor (an OOM kill, say): its worker ends with it."""
    run = make_run("run", tmp_path)
    run.banner()
    started = run.processes()
    [supervisor] = [pid for pid, _ in started if "healthmon.devserver" in _cmdline(pid)]
    workers = [(pid, at) for pid, at in started if " worker " in f"{_cmdline(pid)} "]
    assert workers, [_cmdline(pid) for pid, _ in started]

    os.kill(supervisor, signal.SIGKILL)

    try:
        wait_for(lambda: all(process_identity(pid) != (pid, at) for pid, at in workers), 10)
    finally:  # out of make's reach now: leave no orphan behind, even when the test fails
        for pid, at in started:
            if pid != supervisor and process_identity(pid) == (pid, at):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
