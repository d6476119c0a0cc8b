"""The naive design of bench/probes.py (it is no benchmark): one Celery task per probe
(`requests.get`), this module's own Celery app, drained by a real prefork worker on Redis;
the worker is bench/probes.py run again with `--naive-worker`."""

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis
import requests
from _probes_report import Figure
from _support import BIN, CPUS, ROOT, cpu_seconds, stop, tree_cpu_seconds
from celery import Celery

NAIVE_TASK = "bench.naive_probe"
SCRIPT = Path(__file__).with_name("probes.py")

naive_app = Celery("bench_naive", broker=os.environ.get("BENCH_NAIVE_BROKER", "memory://"))
naive_app.conf.update(
    broker_url=os.environ.get("BENCH_NAIVE_BROKER", "memory://"),
    task_ignore_result=True,
    task_serializer="json",
    accept_content=["json"],
    worker_hijack_root_logger=False,
    worker_enable_remote_control=False,
    broker_connection_retry_on_startup=True,
)
_done: redis.Redis | None = None


@naive_app.task(name=NAIVE_TASK, ignore_result=True)
def naive_probe(url: str, done_key: str, timeout: float) -> None:
    """One HTTP request, as a task per probe would do it; logs completion to Redis."""
    global _done
    try:
        ok = requests.get(url, timeout=timeout).status_code == 200
    except requests.RequestException:
        ok = False
    if _done is None:
        _done = redis.Redis.from_url(naive_app.conf.broker_url)
    _done.rpush(done_key, f"{time.time()} {int(ok)}")


def unpin() -> None:
    """Let a child use every core (it would inherit this process's pinning)."""
    os.sched_setaffinity(0, range(CPUS))


def run_naive_worker(concurrency: int, queue: str) -> None:
    naive_app.worker_main(
        [
            "worker",
            "--pool=prefork",
            f"--concurrency={concurrency}",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-Q",
            queue,
        ]
    )


@contextlib.contextmanager
def naive_worker(args: argparse.Namespace, queue: str) -> Iterator[subprocess.Popen]:
    """A prefork Celery worker of this module's app on every core; its log shown on errors."""
    # A plain Celery worker: without DJANGO_SETTINGS_MODULE, Celery adds no Django fixup,
    # and CELERY_BROKER_URL in the environment would override the app's broker.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "CELERY_BROKER_URL"}
    }
    env["BENCH_NAIVE_BROKER"] = args.redis_url
    command = [str(BIN / "python"), str(SCRIPT), "--naive-worker", queue]
    command += ["--naive-concurrency", str(args.naive_concurrency)]
    with tempfile.TemporaryFile("w+") as log:
        worker = subprocess.Popen(
            command, cwd=ROOT, env=env, preexec_fn=unpin, stdout=log, stderr=log
        )
        try:
            yield worker
        except Exception:
            log.seek(0)
            sys.stderr.write("--- naive worker log ---\n" + log.read()[-3000:])
            raise
        finally:
            stop(worker)


def measure_naive(args: argparse.Namespace, urls: list[str], targets_cpu) -> Figure:
    """K tasks queued first, then a prefork worker drains them; rate from first to last."""
    queue, done_key = f"bench-naive-{os.getpid()}", f"bench-naive-done-{os.getpid()}"
    client = redis.Redis.from_url(args.redis_url)
    before = set(client.keys("*"))
    # Celery reads CELERY_BROKER_URL from the environment before its own setting; Django's
    # settings were read already, so it can go.
    os.environ.pop("CELERY_BROKER_URL", None)
    naive_app.conf.broker_url = args.redis_url
    broker_pid = int(client.info("server")["process_id"])
    try:
        with naive_app.connection_for_write() as connection:
            for i in range(args.naive_tasks):
                naive_probe.apply_async(
                    args=[urls[i % len(urls)], done_key, args.timeout],
                    queue=queue,
                    connection=connection,
                )
        deadline = time.monotonic() + 120 + args.naive_tasks / 50
        with naive_worker(args, queue) as worker:
            while client.llen(done_key) == 0:
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the naive Celery worker did not start")
                time.sleep(0.005)
            helper0, cpu0 = targets_cpu(), tree_cpu_seconds(worker.pid)
            broker0 = cpu_seconds(broker_pid)
            while client.llen(done_key) < args.naive_tasks:
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the naive worker did {client.llen(done_key)} tasks")
                time.sleep(0.01)
            cpu = tree_cpu_seconds(worker.pid) - cpu0
            helpers = {"nginx": targets_cpu() - helper0}
            helpers["redis"] = cpu_seconds(broker_pid) - broker0
        records = [item.split() for item in client.lrange(done_key, 0, -1)]
        stamps = sorted(float(stamp) for stamp, _ in records)
        ok = sum(int(flag) for _, flag in records[1:])
    finally:
        created = set(client.keys("*")) - before
        if created:
            client.delete(*created)
        client.close()
    name = f"naive: 1 Celery task/probe, prefork x{args.naive_concurrency}"
    figure = Figure(name, len(stamps) - 1, ok, stamps[-1] - stamps[0], cpu)
    figure.helpers.update(helpers)
    return figure
