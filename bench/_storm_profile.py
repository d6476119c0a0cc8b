"""The delivery path of bench/incident_storm.py in this process, no Celery (not a
benchmark itself): the same storm's deliveries written by `checks_record` with their tasks
caught instead of queued, then sent by calling the task's function batch by batch, timed
and then profiled with cProfile. Django must be set up."""

import cProfile
import io
import pstats
import time
from collections.abc import Callable, Sequence
from typing import Any


class Caught:
    """Stands in for `enqueue_batch` where `alerts.delivery.queue` calls it: keeps the tasks."""

    def __init__(self) -> None:
        self.tasks: list[tuple[Any, ...]] = []

    def __call__(self, name: str, *args: Any, **options: Any) -> None:
        self.tasks.append(args)


def caught_tasks(ingest: Callable[[], None]) -> list[tuple[Any, ...]]:
    """The arguments of every delivery task `ingest` queues (none is queued)."""
    from alerts import delivery

    caught, queued = Caught(), delivery.enqueue_batch
    delivery.enqueue_batch = caught  # type: ignore[assignment]
    try:
        ingest()
    finally:
        delivery.enqueue_batch = queued
    return caught.tasks


def run_tasks(tasks: Sequence[tuple[Any, ...]], profile: bool) -> tuple[float, float, str]:
    """Run each task's function in turn: wall s, CPU s, and the profile's top lines."""
    from alerts.tasks import deliver

    profiler = cProfile.Profile(time.process_time) if profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    for args in tasks:
        deliver.run(*args)
    if profiler:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not profiler:
        return wall, cpu, ""
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumtime").print_stats(40)
    return wall, cpu, out.getvalue()
