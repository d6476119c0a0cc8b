"""DNS: look a name up (`config.record_type`, A by default) and check the answers.

`dns://name` asks the system's resolver (/etc/resolv.conf: the operator's choice, so the
network policy does not judge it); `dns://resolver[:port]/name` asks that server, whose
address the policy checks like any other kind's. Every answer in `config.expected` must be
among those given, compared without case or a final dot. NXDOMAIN, SERVFAIL, a refusal, no
record of the type and no answer in time are each down, with their own phrase.
"""

from collections.abc import Iterable
from typing import Any

import dns.asyncresolver
import dns.exception
import dns.rdtypes.ANY.TXT
import dns.resolver

from monitoring.probes import phrases
from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.network import resolve
from monitoring.targets import dns_query

# The lookup gives up at this share of the check's timeout, so that a server that never
# answers reads as such, not as the check's own timeout (dnspython overshoots a little).
LIFETIME_SHARE = 0.75


def normalise(answer: str) -> str:
    """An answer as compared: one space between words, lower case, no final dot."""
    return " ".join(answer.split()).lower().removesuffix(".")


def answer_text(rdata: Any) -> str:
    """A record as the user would write it: TXT as its text (strings joined, unquoted)."""
    if isinstance(rdata, dns.rdtypes.ANY.TXT.TXT):
        return b"".join(rdata.strings).decode(errors="replace")
    return str(rdata.to_text())


async def _resolver(task: ProbeTask) -> tuple[dns.asyncresolver.Resolver, str]:
    """A resolver for the target, and the name to ask it."""
    server, port, name = dns_query(task.target)
    if server is None:
        resolver = dns.asyncresolver.Resolver()
    else:
        resolver = dns.asyncresolver.Resolver(configure=False)
        allowed = await resolve(server.strip("[]"), port)
        resolver.nameservers = list(dict.fromkeys(str(address[0]) for _, address in allowed))
        resolver.port = port
    resolver.cache = None
    return resolver, name


def _server_failure(exc: dns.resolver.NoNameservers) -> str:
    """SERVFAIL, or REFUSED when every server refused."""
    codes = {str(error[3]) for error in exc.kwargs.get("errors", [])}
    return phrases.DNS_REFUSED if codes == {"REFUSED"} else phrases.SERVFAIL


async def _answers(task: ProbeTask, record_type: str) -> list[str]:
    try:
        resolver, name = await _resolver(task)
    except dns.resolver.NoResolverConfiguration as exc:
        raise ProbeFailed(phrases.DNS_FAILED, detail="no resolver in /etc/resolv.conf") from exc
    try:
        answer = await resolver.resolve(name, record_type, lifetime=task.timeout * LIFETIME_SHARE)
    except dns.resolver.NXDOMAIN as exc:
        raise ProbeFailed(phrases.NXDOMAIN, detail=f"{name} does not exist") from exc
    except dns.resolver.NoAnswer as exc:
        failure = phrases.NO_ANSWER.format(record_type=record_type)
        raise ProbeFailed(failure, detail=f"{name} has no {record_type} records") from exc
    except dns.resolver.NoNameservers as exc:
        raise ProbeFailed(_server_failure(exc), detail=str(exc)) from exc
    except dns.exception.Timeout as exc:
        raise ProbeFailed(phrases.DNS_TIMEOUT, detail=str(exc)) from exc
    return [answer_text(rdata) for rdata in answer]


def _missing(expected: Iterable[str], answers: Iterable[str]) -> list[str]:
    got = {normalise(answer) for answer in answers}
    return [wanted for wanted in expected if normalise(wanted) not in got]


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Ask for the records; each expected answer must be among them."""
    record_type = str(task.config.get("record_type", "A"))
    answers = await _answers(task, record_type)
    detail = f"{record_type}: {', '.join(answers)}"
    missing = _missing(task.config.get("expected", []), answers)
    if missing:
        raise ProbeFailed(phrases.MISSING_ANSWER, detail, detail=f"missing: {', '.join(missing)}")
    return Outcome(detail)
