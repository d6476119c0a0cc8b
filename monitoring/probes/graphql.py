"""GraphQL: POST a health query; up on HTTP 200 with no `errors`."""

import json
import time

from monitoring.probes import assertions, phrases
from monitoring.probes.base import MAX_RAW_TEXT, Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.http import fetch, read_body, unexpected_status


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Send the query (`{ __typename }` by default), read the errors list, then check the
    assertions."""
    started = time.perf_counter()
    query = task.config.get("query") or "{ __typename }"
    accept = {"Accept": "application/json"}
    request = {"query": query}
    async with fetch(context, task, "POST", task.target, accept, json=request) as response:
        detail = f"HTTP {response.status}"
        if response.status != 200:
            raise unexpected_status(response)
        body = await read_body(response)
        seen = assertions.response_of(response, body, started)
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise ProbeFailed(phrases.NOT_GRAPHQL, detail, detail="the body is not JSON") from exc
        if not isinstance(document, dict) or not ("data" in document or "errors" in document):
            raise ProbeFailed(phrases.NOT_GRAPHQL, detail, detail="no `data` and no `errors`")
        errors = document.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) else errors
            message = first.get("message") if isinstance(first, dict) else first
            raise ProbeFailed(phrases.GRAPHQL_ERROR, detail, detail=str(message)[:MAX_RAW_TEXT])
    await assertions.check(task, context, seen)
    return Outcome(detail)
