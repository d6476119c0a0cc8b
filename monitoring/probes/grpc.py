"""gRPC: the standard `grpc.health.v1.Health/Check`; up on SERVING."""

import asyncio
import contextlib
import ssl
from typing import Any
from urllib.parse import urlsplit

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from monitoring.probes import phrases
from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask, tls_context
from monitoring.probes.network import open_socket, resolve

_CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.enable_http_proxy", 0),  # never through a proxy named in the environment
    ("grpc.enable_retries", 0),
    ("grpc.max_receive_message_length", 65_536),
]


def _address(sockaddr: Any) -> str:
    host = sockaddr[0]
    return f"[{host}]:{sockaddr[1]}" if ":" in host else f"{host}:{sockaddr[1]}"


async def _server_certificate(host: str, port: int) -> bytes:
    """The certificate the server presents: to trust it as is (`verify_tls` off), and to
    record it (gRPC core shows its own handshake's certificate to no one)."""
    sock = await open_socket(host, port)
    _, writer = await asyncio.open_connection(
        sock=sock, ssl=tls_context(verify=False), server_hostname=host
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.transport.abort()  # no TLS goodbye to wait for
        await asyncio.sleep(0)  # the loop closes the socket on its next turn
    return ssl.DER_cert_to_PEM_cert(der).encode()


async def _channel(task: ProbeTask, host: str, port: int) -> grpc.aio.Channel:
    _, sockaddr = (await resolve(host, port))[0]
    address = _address(sockaddr)
    options = [*_CHANNEL_OPTIONS, ("grpc.default_authority", f"{host}:{port}")]
    if not (task.target.startswith("grpcs://") or task.config.get("tls")):
        return grpc.aio.insecure_channel(address, options=options)
    roots = task.config.get("ca_certificate", "").encode() or None
    if not task.config.get("verify_tls", True):
        roots = await _server_certificate(host, port)
    else:
        # Only to record the certificate (the runner reads this handshake): a server that
        # fails it fails gRPC's own handshake next, which names the fault.
        with contextlib.suppress(OSError, ssl.SSLError):
            await _server_certificate(host, port)
    options.append(("grpc.ssl_target_name_override", host))
    credentials = grpc.ssl_channel_credentials(root_certificates=roots)
    return grpc.aio.secure_channel(address, credentials, options=options)


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Ask the health service about the configured service ('' is the whole server)."""
    parts = urlsplit(task.target)
    host, port = parts.hostname or "", parts.port or 443
    service = task.config.get("service", "")
    channel = await _channel(task, host, port)
    async with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(
                health_pb2.HealthCheckRequest(service=service), timeout=task.timeout
            )
        except grpc.aio.AioRpcError as exc:
            code, said = exc.code().name, exc.details()
            detail = f"{code}: {said}" if said else code
            raise ProbeFailed(rpc_phrase(exc, task.timeout), code, detail=detail) from exc
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        raise ProbeFailed(phrases.NOT_SERVING, status)
    return Outcome(status)


# What gRPC core says in an UNAVAILABLE status's details, and the phrase for it; the first
# match wins (a TLS failure's details name the handshake before the certificate's fault).
_UNAVAILABLE = (
    ("refused", phrases.REFUSED),
    ("certificate has expired", phrases.TLS_EXPIRED),
    ("not in peer certificate", phrases.TLS_WRONG_HOST),
    ("certificate_verify_failed", phrases.TLS_UNTRUSTED),
    ("handshake failed", phrases.TLS_FAILED),
    ("failed parsing http/2", phrases.PROTOCOL_ERROR),
    ("socket closed", phrases.CLOSED),
    ("connection reset", phrases.RESET),
    ("unreachable", phrases.UNREACHABLE),
    ("no route to host", phrases.UNREACHABLE),
    ("dns resolution failed", phrases.DNS_FAILED),
)


def rpc_phrase(exc: grpc.aio.AioRpcError, timeout: float) -> str:
    """The phrase for a failed health RPC, from its status code and gRPC core's details."""
    code = exc.code()
    if code == grpc.StatusCode.NOT_FOUND:
        return phrases.SERVICE_NOT_FOUND
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return phrases.NO_HEALTH_SERVICE
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return phrases.TIMED_OUT.format(seconds=f"{timeout:g}")
    details = (exc.details() or "").lower()
    if code == grpc.StatusCode.UNAVAILABLE:
        for words, phrase in _UNAVAILABLE:
            if words in details:
                return phrase
    return phrases.GRPC_STATUS.format(code=code.name)
