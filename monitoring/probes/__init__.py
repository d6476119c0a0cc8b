"""Probes: one module per endpoint type, run concurrently on one event loop."""

import asyncio
from typing import Any

from monitoring.probes.base import ProbeResult, ProbeTask
from monitoring.probes.runner import run_batch

__all__ = ["ProbeResult", "ProbeTask", "probe", "run_batch"]


def probe(
    endpoint_type: str, target: str, config: dict[str, Any] | None = None, *, timeout: float = 5.0
) -> ProbeResult:
    """Run one check now, outside any worker (tests, the shell); fills config defaults."""
    from monitoring.validation import validate_config

    task = ProbeTask(endpoint_type, target, validate_config(endpoint_type, config or {}), timeout)
    return asyncio.run(run_batch([task], concurrency=1))[0]
