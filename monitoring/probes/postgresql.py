"""PostgreSQL: connect and run SELECT 1."""

import math

import psycopg
from psycopg import conninfo

from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.network import resolve

# Options the probe sets itself: libpq must connect to the address the policy checked.
_FIXED = ("host", "hostaddr", "port", "connect_timeout")
# libpq fills every option left unset from the worker's own environment and files
# (PGPASSWORD, ~/.pgpass, PGUSER or the OS user, ~/.postgresql/postgresql.crt, services):
# the worker's credentials would go to a tenant's server. Every such option is set here.
_NOWHERE = "/nonexistent/healthmon"
_WORKER_DEFAULTS = {
    "user": "postgres",
    "password": "",
    "passfile": _NOWHERE,
    "sslcert": _NOWHERE,
    "sslkey": _NOWHERE,
    "sslmode": "prefer",
    "options": "",
    "gssencmode": "disable",
}


def connection_parameters(target: str, address: str, timeout: float) -> dict[str, str]:
    """Separate connection fields for libpq, pinned to the checked `address`, with nothing
    taken from the worker's environment."""
    parsed = conninfo.conninfo_to_dict(target)
    params = {k: str(v) for k, v in parsed.items() if k not in _FIXED}
    if params.get("sslmode") == "verify-full":
        # The system's CAs, as a browser would use; never the worker's ~/.postgresql/root.crt.
        params["sslrootcert"] = "system"
    return {
        **_WORKER_DEFAULTS,
        **params,
        "host": str(parsed.get("host") or "localhost"),
        "hostaddr": address,
        "port": str(parsed.get("port") or 5432),
        "connect_timeout": str(max(2, math.ceil(timeout))),
        "application_name": str(params.get("application_name") or "healthmon"),
    }


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Connect (TLS per the target's sslmode) and check that SELECT 1 answers 1."""
    parsed = conninfo.conninfo_to_dict(task.target)
    host, port = str(parsed.get("host") or "localhost"), int(parsed.get("port") or 5432)
    _, sockaddr = (await resolve(host, port))[0]
    params = connection_parameters(task.target, sockaddr[0], task.timeout)
    try:
        connection = await psycopg.AsyncConnection.connect(
            conninfo.make_conninfo(**params), autocommit=True
        )
    except psycopg.OperationalError as exc:
        raise ProbeFailed(describe(exc)) from exc
    async with connection:
        try:
            row = await (await connection.execute("SELECT 1")).fetchone()
        except psycopg.Error as exc:
            raise ProbeFailed(describe(exc)) from exc
    if row != (1,):
        raise ProbeFailed("SELECT 1 did not answer 1")
    return Outcome("SELECT 1")


def describe(exc: psycopg.Error) -> str:
    """libpq's message, cut to its first meaningful line."""
    text = str(exc).strip()
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return "authentication failed"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
