"""GraphQL: POST a health query; up on HTTP 200 with no `errors`."""

import json

from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.http import fetch, read_body


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Send the query (`{ __typename }` by default) and read the errors list."""
    query = task.config.get("query") or "{ __typename }"
    accept = {"Accept": "application/json"}
    body = {"query": query}
    async with fetch(context, task, "POST", task.target, accept, json=body) as response:
        detail = f"HTTP {response.status}"
        if response.status != 200:
            raise ProbeFailed(f"unexpected status {response.status}", detail)
        try:
            document = json.loads(await read_body(response))
        except ValueError as exc:
            raise ProbeFailed("the response is not GraphQL JSON", detail) from exc
        if not isinstance(document, dict) or not ("data" in document or "errors" in document):
            raise ProbeFailed("the response is not GraphQL JSON", detail)
        errors = document.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) else errors
            message = first.get("message") if isinstance(first, dict) else first
            raise ProbeFailed(f"GraphQL error: {str(message)[:200]}", detail)
        return Outcome(detail)
