"""Running probes: one check with its timeout, a batch on one event loop."""

import asyncio
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from monitoring.probes.base import (
    MAX_DETAIL_LENGTH,
    MAX_ERROR_LENGTH,
    ProbeContext,
    ProbeFailed,
    ProbeResult,
    ProbeTask,
    describe_error,
)
from monitoring.probes.registry import get_probe
from monitoring.targets import MASK, is_secret_name

# Schemes whose lone user name is an account name, not a token.
_ACCOUNT_SCHEMES = frozenset({"postgresql", "postgres", "mysql", "mariadb"})


async def run_probe(task: ProbeTask, context: ProbeContext) -> ProbeResult:
    """Run one check; its timeout covers the whole exchange, DNS to the last byte."""
    started, started_at = time.perf_counter(), time.time()
    detail, error, detected = "", "", ""
    try:
        async with asyncio.timeout(task.timeout):
            outcome = await get_probe(task.type)(task, context)
        detail, error, detected = outcome.status_detail, outcome.error, outcome.detected_type
    except ProbeFailed as exc:
        detail, error, detected = exc.status_detail, exc.error, exc.detected_type
    except TimeoutError:
        error = f"timed out after {task.timeout:g} s"
    except Exception as exc:
        error = describe_error(exc)
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    try:
        secrets = secrets_of(task)
    except ValueError:  # a target urllib cannot split has no secret it could find either
        secrets = []
    return ProbeResult(
        ok=not error,
        response_time_ms=elapsed_ms,
        status_detail=scrub(detail, secrets)[:MAX_DETAIL_LENGTH],
        error=scrub(error, secrets)[:MAX_ERROR_LENGTH],
        detected_type=detected,
        started_at=started_at,
    )


def secrets_of(task: ProbeTask) -> list[str]:
    """Secret values a message could echo: the target's password and secret options."""
    found: list[str] = []
    if "://" in task.target:
        parts = urlsplit(task.target)
        found += [unquote(parts.password or ""), parts.password or ""]
        if parts.username and parts.password is None and parts.scheme not in _ACCOUNT_SCHEMES:
            found.append(unquote(parts.username))  # a token used as a user name
        found += [v for k, v in parse_qsl(parts.query) if is_secret_name(k)]
    found += list(_config_secrets(task.config))
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)


def _config_secrets(config: Any) -> Iterable[str]:
    if isinstance(config, dict):
        for key, value in config.items():
            if isinstance(value, str) and is_secret_name(key):
                yield value
                yield from value.split()  # "Bearer <token>": the token alone too
            else:
                yield from _config_secrets(value)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """The text with every secret value replaced by the mask, on one line."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return " ".join(text.split())


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
