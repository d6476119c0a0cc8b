"""Local protocol peers for the probe tests (see `tests/monitoring/peers.py`).

Stateless peers live for the session; those whose state a test changes (Elasticsearch's
cluster status, gRPC serving statuses) are reset before each test that asks for them.
"""

from collections.abc import Iterator
from typing import Protocol, TypeVar

import pytest

from tests.monitoring.async_peers import (
    FTP_BANNER,
    IMAP_BANNER,
    POP3_BANNER,
    SMTP_BANNER,
    SMTP_REFUSAL,
    SSH_BANNER,
    BannerPeer,
    SMTPPeer,
)
from tests.monitoring.peers import (
    ECHO_AUTHORIZATION,
    GRPC_NAMED_SERVICE,
    ClosedPort,
    ElasticsearchPeer,
    GraphQLPeer,
    GRPCHealthPeer,
    HTTPPeer,
    ReplyPeer,
    StallPeer,
    WebSocketPeer,
    banner_peer,
    redis_wrong_peer,
    self_signed_context,
)


class _Stoppable(Protocol):
    def stop(self) -> None: ...


P = TypeVar("P", bound=_Stoppable)


def _serve(peer: P) -> Iterator[P]:
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture(scope="session")
def tls_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPPeer]:
    """The HTTP peer's routes over TLS with a self-signed certificate."""
    context = self_signed_context(tmp_path_factory.mktemp("tls"))
    yield from _serve(HTTPPeer(context))


@pytest.fixture(scope="session")
def stall_peer() -> Iterator[StallPeer]:
    yield from _serve(StallPeer())


@pytest.fixture(scope="session")
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 where connecting is refused."""
    port = ClosedPort()
    try:
        yield port.port
    finally:
        port.stop()


@pytest.fixture(scope="session")
def graphql_peer() -> Iterator[GraphQLPeer]:
    yield from _serve(GraphQLPeer())


@pytest.fixture(scope="session")
def _elasticsearch_server() -> Iterator[ElasticsearchPeer]:
    yield from _serve(ElasticsearchPeer())


@pytest.fixture
def elasticsearch_peer(_elasticsearch_server: ElasticsearchPeer) -> ElasticsearchPeer:
    """The Elasticsearch stand-in, green at the start of the test."""
    _elasticsearch_server.status = "green"
    return _elasticsearch_server


@pytest.fixture(scope="session")
def _grpc_server() -> Iterator[GRPCHealthPeer]:
    yield from _serve(GRPCHealthPeer())


@pytest.fixture
def grpc_peer(_grpc_server: GRPCHealthPeer) -> GRPCHealthPeer:
    """The gRPC health server: the whole server ("") and `GRPC_NAMED_SERVICE` SERVING."""
    _grpc_server.set("", "SERVING")
    _grpc_server.set(GRPC_NAMED_SERVICE, "SERVING")
    return _grpc_server


@pytest.fixture(scope="session")
def websocket_peer() -> Iterator[WebSocketPeer]:
    """Echoes every message."""
    yield from _serve(WebSocketPeer())


@pytest.fixture(scope="session")
def websocket_wrong_peer() -> Iterator[WebSocketPeer]:
    """Answers every message with the same wrong text."""
    yield from _serve(WebSocketPeer(reply="something else"))


@pytest.fixture(scope="session")
def websocket_auth_echo_peer() -> Iterator[WebSocketPeer]:
    """Answers every message with the `Authorization` header of its handshake."""
    yield from _serve(WebSocketPeer(reply=ECHO_AUTHORIZATION))


@pytest.fixture(scope="session")
def websocket_auth_accept_peer() -> Iterator[WebSocketPeer]:
    """Answers the handshake with its `Authorization` header as `Sec-WebSocket-Accept`."""
    yield from _serve(WebSocketPeer(bad_accept=True))


@pytest.fixture(scope="session")
def redis_wrong() -> Iterator[ReplyPeer]:
    """Answers every line with `-ERR nope`."""
    yield from _serve(redis_wrong_peer())


@pytest.fixture(scope="session")
def banner() -> Iterator[ReplyPeer]:
    """Speaks another protocol first (an SSH banner) and hangs up."""
    yield from _serve(banner_peer())


# --- Servers that speak first, and SMTP (asyncio peers: tests/monitoring/async_peers.py) ---


@pytest.fixture(scope="session")
def silent_peer() -> Iterator[BannerPeer]:
    """Accepts connections and never sends anything."""
    yield from _serve(BannerPeer())


@pytest.fixture(scope="session")
def pong_peer() -> Iterator[BannerPeer]:
    """Says nothing first; answers every line with `+PONG`."""
    yield from _serve(BannerPeer(replies=b"+PONG\r\n"))


@pytest.fixture(scope="session")
def reset_peer() -> Iterator[BannerPeer]:
    """Resets every connection as soon as it is accepted."""
    yield from _serve(BannerPeer(reset=True))


@pytest.fixture(scope="session")
def hangup_peer() -> Iterator[BannerPeer]:
    """Accepts, then closes at once without a word."""
    yield from _serve(BannerPeer(close=True))


BANNERS = {
    "smtp": SMTP_BANNER,
    "ssh": SSH_BANNER,
    "ftp": FTP_BANNER,
    "imap": IMAP_BANNER,
    "pop3": POP3_BANNER,
    "smtp_refusal": SMTP_REFUSAL,
    "unknown": b"HELLO stranger, what do you want?\r\n",
}


@pytest.fixture(scope="session")
def banner_peers() -> Iterator[dict[str, BannerPeer]]:
    """By name (`BANNERS`): a server greeting with that banner, then silent."""
    peers = {name: BannerPeer(greeting) for name, greeting in BANNERS.items()}
    try:
        yield peers
    finally:
        for peer in peers.values():
            peer.stop()


@pytest.fixture(scope="session")
def smtp_peer() -> Iterator[SMTPPeer]:
    """aiosmtpd without TLS: no STARTTLS offered."""
    yield from _serve(SMTPPeer())


@pytest.fixture(scope="session")
def smtp_starttls_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SMTPPeer]:
    """aiosmtpd offering STARTTLS with a self-signed certificate for 127.0.0.1."""
    context = self_signed_context(tmp_path_factory.mktemp("smtp-starttls"))
    yield from _serve(SMTPPeer(starttls=context))


@pytest.fixture(scope="session")
def smtps_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SMTPPeer]:
    """aiosmtpd speaking TLS from the first byte (smtps), self-signed."""
    context = self_signed_context(tmp_path_factory.mktemp("smtps"))
    yield from _serve(SMTPPeer(implicit=context))
