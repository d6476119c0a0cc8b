"""PostgreSQL: connect and run SELECT 1."""

import math
import re

import psycopg
from psycopg import conninfo

from monitoring.probes import phrases
from monitoring.probes.base import (
    MAX_RAW_TEXT,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    raw_text,
)
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
        raise ProbeFailed(phrase(exc, task.timeout), detail=raw_text(exc)) from exc
    async with connection:
        try:
            row = await (await connection.execute("SELECT 1")).fetchone()
        except psycopg.Error as exc:
            error = phrase(exc, task.timeout, otherwise=phrases.QUERY_FAILED)
            raise ProbeFailed(error, detail=raw_text(exc)) from exc
    if row != (1,):
        raise ProbeFailed(phrases.WRONG_ANSWER, detail=f"the answer was {str(row)[:MAX_RAW_TEXT]}")
    return Outcome("SELECT 1")


# libpq's words for each failure (the server's are in English unless its lc_messages says
# otherwise: then the phrase is the fallback, and the detail still tells). First match wins.
_MESSAGES = (
    (r"refused", phrases.REFUSED),
    (r'database ".*" does not exist', phrases.NO_DATABASE),
    (r"password authentication failed|no password supplied", phrases.AUTH_FAILED),
    (r'role ".*" does not exist|authentication failed', phrases.AUTH_FAILED),
    (r"no pg_hba\.conf entry|pg_hba\.conf rejects", phrases.AUTH_FAILED),
    (r"too many (clients|connections)|connection slots are reserved", phrases.TOO_MANY_CONNECTIONS),
    (r"system is (starting up|shutting down|in recovery)|not yet accepting", phrases.NOT_ACCEPTING),
    (r"server does not support ssl", phrases.TLS_NOT_SUPPORTED),
    (r"certificate has expired", phrases.TLS_EXPIRED),
    (r"does not match host name", phrases.TLS_WRONG_HOST),
    (r"certificate verify failed|root certificate", phrases.TLS_UNTRUSTED),
    (r"ssl (error|syscall)|ssl connection has been closed", phrases.TLS_FAILED),
    (
        r"invalid response to ssl negotiation|expected authentication request",
        phrases.PROTOCOL_ERROR,
    ),
    (r"lost synchronization|unexpected message type|invalid message", phrases.PROTOCOL_ERROR),
    (r"server closed the connection|connection to server was lost", phrases.CLOSED),
    (r"connection reset", phrases.RESET),
    (r"could not translate host name", phrases.DNS_FAILED),
    (r"no route to host|network is unreachable", phrases.UNREACHABLE),
)


def phrase(exc: psycopg.Error, timeout: float, otherwise: str = phrases.CONNECTION_FAILED) -> str:
    """The phrase for libpq's message: `authentication failed`, `database does not exist`..."""
    if isinstance(exc, psycopg.errors.ConnectionTimeout):
        return phrases.TIMED_OUT.format(seconds=f"{timeout:g}")
    # libpq tries again without TLS (sslmode prefer) or at the next address, and joins each
    # attempt's message: the last attempt says what finally went wrong.
    text = str(exc).lower().rsplit("connection to server at", 1)[-1]
    for pattern, found in _MESSAGES:
        if re.search(pattern, text):
            return found
    return otherwise
