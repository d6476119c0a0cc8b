"""Checking an HTTP-family response against the endpoint's `config.assertions`, in order.

The first unmet assertion fails the check; its error names the assertion (numbered from 1,
as the form's rows are) and the value found. That value is the server's text: the runner
masks the endpoint's secrets in it, as in every error, and cuts it short after masking.
A regular expression is matched in a thread with a time bound, so a pattern that
backtracks catastrophically costs at most MATCH_SECONDS, and reads as unmet.
"""

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import jmespath
import regex

from monitoring.probes import phrases
from monitoring.probes.base import MAX_RAW_TEXT, ProbeContext, ProbeFailed, ProbeTask

MATCH_SECONDS = 0.1
_NOTHING = object()  # a header or JSON value that is not there


@dataclass(frozen=True)
class Response:
    """What the assertions read: the status, headers, body (None when not read) and the
    time from the probe's start until the response was read."""

    status: int
    headers: Mapping[str, str]
    body: bytes | None
    elapsed_ms: float


def needs_body(config: Mapping[str, Any]) -> bool:
    """Whether an assertion reads the body (then the probe reads it, up to its limit)."""
    return any(a["source"] in ("body", "json") for a in config.get("assertions") or ())


def response_of(response: aiohttp.ClientResponse, body: bytes | None, started: float) -> Response:
    """The response as the assertions see it; repeated headers joined as RFC 9110 says."""
    headers: dict[str, str] = {}
    for name, value in response.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    elapsed = round((time.perf_counter() - started) * 1000, 2)
    return Response(response.status, headers, body, elapsed)


async def check(task: ProbeTask, context: ProbeContext, response: Response) -> None:
    """Raise ProbeFailed at the first assertion the response does not meet."""
    for number, assertion in enumerate(task.config.get("assertions") or (), start=1):
        actual = _actual(assertion, response)
        if not await _holds(context, assertion, actual):
            error = phrases.ASSERTION_FAILED.format(
                number=number, assertion=_described(assertion), actual=_shown(actual)
            )
            raise ProbeFailed(error, f"HTTP {response.status}")


def _actual(assertion: Mapping[str, Any], response: Response) -> Any:
    source, prop = assertion["source"], assertion["property"]
    if source == "status_code":
        return response.status
    if source == "response_time":
        return response.elapsed_ms
    if source == "header":
        return response.headers.get(prop.lower(), _NOTHING)
    text = (response.body or b"").decode("utf-8", errors="replace")
    if source == "body":
        return text
    try:
        document = json.loads(text)
    except ValueError:
        return _NotJSON()
    found = jmespath.search(prop, document)
    return _NOTHING if found is None else found


class _NotJSON:
    """A body a JSON assertion cannot read."""


async def _holds(context: ProbeContext, assertion: Mapping[str, Any], actual: Any) -> bool:
    comparison, target = assertion["comparison"], assertion["target"]
    if isinstance(actual, _NotJSON):
        return False
    if comparison in ("exists", "not_exists"):
        return (actual is not _NOTHING) is (comparison == "exists")
    if actual is _NOTHING:
        return comparison in ("not_equals", "not_contains")
    if comparison in ("less_than", "greater_than"):
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False
        return actual < target if comparison == "less_than" else actual > target
    if comparison == "matches":
        return await _matches(context, target, _text(actual))
    if comparison in ("equals", "not_equals"):
        return _equal(actual, target) is (comparison == "equals")
    return _contains(actual, target) is (comparison == "contains")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _parsed(target: Any) -> Any:
    """A JSON target as written: `true`, `3` and `"ok"` are JSON, `ok` is the text ok."""
    if not isinstance(target, str):
        return target
    try:
        return json.loads(target)
    except ValueError:
        return target


def _equal(actual: Any, target: Any) -> bool:
    if isinstance(actual, str):
        return actual == str(target) or actual == _parsed(target)
    if isinstance(actual, bool) or isinstance(_parsed(target), bool):
        return actual is _parsed(target)
    return bool(actual == _parsed(target))


def _contains(actual: Any, target: Any) -> bool:
    if isinstance(actual, str):
        return str(target) in actual
    if isinstance(actual, list):
        return any(_equal(item, target) for item in actual)
    if isinstance(actual, dict):
        return str(target) in actual
    return False


async def _matches(context: ProbeContext, pattern: str, text: str) -> bool:
    """Whether the pattern is found in the text within MATCH_SECONDS; longer is unmet."""

    def search() -> bool:
        try:
            return regex.search(pattern, text, timeout=MATCH_SECONDS, concurrent=True) is not None
        except TimeoutError:
            return False

    return await context.in_thread(search)


def _described(assertion: Mapping[str, Any]) -> str:
    """`json status equals "ok"`: the assertion as the user wrote it."""
    parts = [assertion["source"], assertion["property"], assertion["comparison"]]
    target = assertion["target"]
    if assertion["comparison"] not in ("exists", "not_exists"):
        parts.append(json.dumps(target, ensure_ascii=False))
    return " ".join(part for part in parts if part != "")


def _shown(actual: Any) -> str:
    """The value found, as JSON (a missing one in words), cut at MAX_RAW_TEXT: the runner
    masks it, then cuts the whole error far shorter."""
    if actual is _NOTHING:
        return "nothing"
    if isinstance(actual, _NotJSON):
        return "a body that is not JSON"
    return json.dumps(actual, ensure_ascii=False)[:MAX_RAW_TEXT]
