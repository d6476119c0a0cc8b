"""Running probes: one check with its timeout, a batch on one event loop."""

import asyncio
import socket
import ssl
import time
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import aiohttp

from monitoring.probes.base import (
    MAX_DETAIL_LENGTH,
    MAX_ERROR_LENGTH,
    ProbeContext,
    ProbeFailed,
    ProbeResult,
    ProbeTask,
)
from monitoring.probes.network import NOT_ALLOWED, numeric_host_allowed, refused_by_policy
from monitoring.probes.registry import get_probe
from monitoring.targets import MASK, is_secret_name

# Schemes whose lone user name is an account name, not a token.
_ACCOUNT_SCHEMES = frozenset({"postgresql", "postgres", "mysql", "mariadb"})


async def run_probe(task: ProbeTask, context: ProbeContext) -> ProbeResult:
    """Run one check; its timeout covers the whole exchange, DNS to the last byte."""
    started = time.perf_counter()
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
    secrets = secrets_of(task)
    return ProbeResult(
        ok=not error,
        response_time_ms=elapsed_ms,
        status_detail=scrub(detail, secrets)[:MAX_DETAIL_LENGTH],
        error=scrub(error, secrets)[:MAX_ERROR_LENGTH],
        detected_type=detected,
    )


def describe_error(exc: BaseException) -> str:
    """A short message for a client error, without the target's secrets."""
    if refused_by_policy(exc):
        return NOT_ALLOWED
    if isinstance(exc, aiohttp.InvalidURL) and "canonical IPv4" in str(exc):
        # aiohttp refuses `127.1` before resolving: the refusal names no address either way.
        allowed = numeric_host_allowed(str(exc).split(" - ", 1)[0].strip())
        return NOT_ALLOWED if allowed is False else "the URL's IPv4 address is not canonical"
    for error in _chain(exc):
        if isinstance(error, ConnectionRefusedError) or "refused" in str(error).lower():
            return "connection refused"
        if isinstance(error, socket.gaierror):
            return "DNS lookup failed"
        if isinstance(error, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {error.verify_message}"
        if isinstance(error, ssl.SSLError):
            return f"TLS error: {error.reason or error}"
        if isinstance(error, ConnectionResetError):
            return "connection reset by the server"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        wrapped = getattr(current, "os_error", None)
        current = wrapped if isinstance(wrapped, BaseException) else current.__cause__
        current = current or None


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
    """Run checks concurrently on this event loop, at most `concurrency` at a time."""
    limit = asyncio.Semaphore(concurrency)
    async with ProbeContext() as context:

        async def one(task: ProbeTask) -> ProbeResult:
            async with limit:
                return await run_probe(task, context)

        return list(await asyncio.gather(*(one(task) for task in tasks)))
