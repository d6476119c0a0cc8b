"""Running probes: one check with its timeout, a batch on one event loop."""

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from monitoring.probes.base import (
    MAX_DETAIL_LENGTH,
    MAX_ERROR_DETAIL_LENGTH,
    MAX_ERROR_LENGTH,
    ProbeContext,
    ProbeFailed,
    ProbeResult,
    ProbeTask,
    describe_error,
)
from monitoring.probes.certificates import handshakes, last_certificate
from monitoring.probes.phrases import TIMED_OUT
from monitoring.probes.registry import get_probe
from monitoring.probes.secrets import scrub, secrets_of


async def run_probe(task: ProbeTask, context: ProbeContext) -> ProbeResult:
    """Run one check; its timeout covers the whole exchange, DNS to the last byte."""
    started, started_at = time.perf_counter(), time.time()
    detail, error, raw, detected = "", "", "", ""
    certificate, loss, round_trip = None, None, None
    with handshakes() as noted:
        try:
            async with asyncio.timeout(task.timeout):
                outcome = await get_probe(task.type)(task, context)
            detail, error, detected = outcome.status_detail, outcome.error, outcome.detected_type
            certificate = outcome.certificate
            loss, round_trip = outcome.loss_percent, outcome.round_trip_ms
        except ProbeFailed as exc:
            detail, error, raw = exc.status_detail, exc.error, exc.detail
            detected, certificate = exc.detected_type, exc.certificate
        except TimeoutError:
            error = TIMED_OUT.format(seconds=f"{task.timeout:g}")
        except Exception as exc:
            error, raw = describe_error(exc)
    # A client that hides its connection (aiohttp) still shook hands through a noting context.
    certificate = certificate or last_certificate(noted)
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    # The one place a probe's texts are scrubbed: everything stored or shown comes from here.
    secrets = secrets_of(task)
    return ProbeResult(
        ok=not error,
        response_time_ms=elapsed_ms if round_trip is None else round(round_trip, 2),
        status_detail=scrub(detail, secrets)[:MAX_DETAIL_LENGTH],
        error=scrub(error, secrets)[:MAX_ERROR_LENGTH],
        error_detail=scrub(raw, secrets)[:MAX_ERROR_DETAIL_LENGTH],
        detected_type=detected,
        started_at=started_at,
        certificate=certificate,
        loss_percent=loss,
    )


async def run_batch(tasks: Sequence[ProbeTask], concurrency: int) -> list[ProbeResult]:
    """Run checks concurrently on this event loop, at most `concurrency` at a time.

    DNS lookups run in the loop's default executor: it gets a thread per running check, so
    a few targets whose DNS hangs cannot hold up the lookups of all the others. Threads
    still blocked in a lookup when the batch ends are left to finish on their own.
    """
    loop = asyncio.get_running_loop()
    lookups = ThreadPoolExecutor(max_workers=min(concurrency, 512), thread_name_prefix="dns")
    loop.set_default_executor(lookups)
    limit = asyncio.Semaphore(concurrency)
    try:
        async with ProbeContext() as context:

            async def one(task: ProbeTask) -> ProbeResult:
                wait = task.not_before - time.time()
                if wait > 0:  # handed over ahead of its slot: start on the dot
                    await asyncio.sleep(wait)
                async with limit:
                    return await run_probe(task, context)

            return list(await asyncio.gather(*(one(task) for task in tasks)))
    finally:
        lookups.shutdown(wait=False, cancel_futures=True)
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))  # closes at once
