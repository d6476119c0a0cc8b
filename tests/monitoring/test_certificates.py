"""What a probe reads of a server's certificate, and that the runner carries it to the result."""

import asyncio
import datetime
import ssl

import pytest

from monitoring.probes import registry
from monitoring.probes.base import Outcome, ProbeFailed, ProbeTask
from monitoring.probes.certificates import PeerCertificate, peer_certificate
from monitoring.probes.runner import run_batch
from tests.monitoring.peers import HOST, self_signed_context


async def _handshake(context: ssl.SSLContext) -> PeerCertificate | None:
    server = await asyncio.start_server(lambda r, w: w.close(), HOST, 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    client = ssl.create_default_context()
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE  # untrusted: still read
    try:
        _, writer = await asyncio.open_connection(HOST, port, ssl=client)
        found = peer_certificate(writer.get_extra_info("ssl_object"))
        writer.close()
        return found
    finally:
        server.close()
        await server.wait_closed()


def test_a_handshakes_certificate_is_read_with_verification_off(tmp_path):
    found = asyncio.run(_handshake(self_signed_context(tmp_path)))

    assert found is not None
    now = datetime.datetime.now(datetime.UTC)
    assert now < found.expires_at <= now + datetime.timedelta(days=1)
    assert found.not_before < now
    assert (found.issuer, found.subject) == (f"CN={HOST}", f"CN={HOST}")


def test_no_handshake_no_certificate():
    assert peer_certificate(None) is None


SEEN = PeerCertificate(
    not_before=datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC),
    expires_at=datetime.datetime(2030, 4, 1, tzinfo=datetime.UTC),
    issuer="CN=Test CA",
    subject="CN=example.test",
)


@pytest.mark.parametrize("fails", [False, True])
def test_the_runner_puts_the_probes_certificate_on_the_result(monkeypatch, fails):
    async def probe(task, context):
        if fails:
            raise ProbeFailed("certificate expired", certificate=SEEN)
        return Outcome(certificate=SEEN)

    monkeypatch.setitem(registry.PROBES, "http", probe)

    [result] = asyncio.run(run_batch([ProbeTask("http", "https://x.test", {}, 5.0)], 1))

    assert (result.ok, result.certificate) == (not fails, SEEN)
