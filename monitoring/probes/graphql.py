"""GraphQL: POST a health query; up on HTTP 200 with no `errors`."""

import json

from monitoring.probes import phrases
from monitoring.probes.base import MAX_RAW_TEXT, Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.http import fetch, read_body, unexpected_status


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Send the query (`{ __typename }` by default) and read the errors list."""
    query = task.config.get("query") or "{ __typename }"
    accept = {"Accept": "application/json"}
    body = {"query": query}
    async with fetch(context, task, "POST", task.target, accept, json=body) as response:
        detail = f"HTTP {response.status}"
        if response.status != 200:
            raise unexpected_status(response)
        try:
            document = json.loads(await read_body(response))
        except ValueError as exc:
            raise ProbeFailed(phrases.NOT_GRAPHQL, detail, detail="the body is not JSON") from exc
        if not isinstance(document, dict) or not ("data" in document or "errors" in document):
            raise ProbeFailed(phrases.NOT_GRAPHQL, detail, detail="no `data` and no `errors`")
        errors = document.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) else errors
            message = first.get("message") if isinstance(first, dict) else first
            raise ProbeFailed(phrases.GRAPHQL_ERROR, detail, detail=str(message)[:MAX_RAW_TEXT])
        return Outcome(detail)
