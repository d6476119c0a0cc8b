"""A batch of probes: one slow or hostile target never holds up the others."""

import asyncio
import socket
import threading
import time

import pytest

from monitoring.probes import ProbeTask, run_batch
from monitoring.validation import validate_config


@pytest.fixture(autouse=True)
def _private_networks(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


@pytest.mark.timing  # 0.9 s of slack: a second test process on the other core can take it
def test_targets_whose_dns_hangs_do_not_starve_the_other_lookups(http_peer, monkeypatch):
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if str(host).endswith(".hang.test"):
            time.sleep(3)  # a name server that never answers
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    config = validate_config("http", {})
    hanging = [ProbeTask("http", f"http://h{n}.hang.test/", config, 2.0) for n in range(16)]
    healthy = [
        ProbeTask("http", http_peer.url("/health").replace("127.0.0.1", "localhost"), config, 2.0)
        for _ in range(30)
    ]

    started = time.monotonic()
    results = asyncio.run(run_batch(hanging + healthy, concurrency=100))
    elapsed = time.monotonic() - started

    assert [r.ok for r in results[len(hanging) :]] == [True] * len(healthy)
    assert {r.error for r in results[: len(hanging)]} == {"timed out after 2 s"}
    assert elapsed < 2.9  # the batch ends with its timeouts, not with the stuck lookups


def test_a_redis_target_announcing_a_huge_reply_is_read_no_further(monkeypatch):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    async def scenario():
        async def answer(reader, writer):
            try:
                await reader.read(100)
                writer.write(b"$300000000\r\n" + b"x" * 65_536)
                await writer.drain()
            finally:
                writer.close()

        peer = await asyncio.start_server(answer, sock=server)
        task = ProbeTask("redis", f"redis://127.0.0.1:{port}/0", validate_config("redis", {}), 2.0)
        async with peer:
            return (await run_batch([task], concurrency=1))[0]

    result = asyncio.run(scenario())

    assert result.ok is False
    assert result.error == "unexpected reply"
    assert result.status_detail == "$300000000"
    assert result.error_detail == "expected +PONG, got $300000000"


def test_the_postgresql_probe_never_offers_the_workers_own_credentials(monkeypatch):
    """libpq would fill a missing password from PGPASSWORD or ~/.pgpass, and a missing
    user from PGUSER: a tenant's server asking for a password must get none of them."""
    monkeypatch.setenv("PGPASSWORD", "worker-db-secret")
    monkeypatch.setenv("PGUSER", "worker")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    seen: list[bytes] = []

    async def scenario():
        async def answer(reader, writer):
            try:
                while True:
                    size = int.from_bytes(await reader.readexactly(4), "big")
                    body = await reader.readexactly(size - 4)
                    if body[:4] in (b"\x04\xd2\x16\x2f", b"\x04\xd2\x16\x30"):  # SSL/GSS
                        writer.write(b"N")
                        continue
                    seen.append(body)  # the startup packet, with the user name
                    writer.write(b"R" + (8).to_bytes(4, "big") + (3).to_bytes(4, "big"))
                    await writer.drain()
                    await reader.readexactly(1)
                    size = int.from_bytes(await reader.readexactly(4), "big")
                    seen.append(await reader.readexactly(size - 4))
                    return
            except asyncio.IncompleteReadError:
                return
            finally:
                writer.close()

        peer = await asyncio.start_server(answer, sock=server)
        target = f"postgresql://127.0.0.1:{port}/db"
        task = ProbeTask("postgresql", target, validate_config("postgresql", {}), 2.0)
        async with peer:
            return (await run_batch([task], concurrency=1))[0]

    result = asyncio.run(scenario())

    assert result.ok is False
    assert b"worker-db-secret" not in b"".join(seen)
    assert b"user\x00postgres\x00" in seen[0]
    assert b"worker" not in seen[0]


def test_a_mysql_server_dripping_bytes_frees_its_thread_at_the_timeout():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def drip():  # in its own thread: it outlives the probe's event loop
        connection, _ = server.accept()
        with connection, server:
            connection.sendall(b"\xff\x00\x00\x00")  # a 255-byte greeting, a byte at a time
            for _ in range(40):
                try:
                    connection.sendall(b"\x0a")
                except OSError:
                    return
                time.sleep(0.1)

    dripping = threading.Thread(target=drip)
    dripping.start()
    task = ProbeTask("mysql", f"mysql://root@127.0.0.1:{port}/", validate_config("mysql", {}), 1.0)

    [result] = asyncio.run(run_batch([task], concurrency=1))
    deadline = time.monotonic() + 1
    while any(t.name.startswith("probe") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the MySQL probe's thread is still blocked"
        time.sleep(0.05)
    dripping.join()

    assert result.error == "timed out after 1 s"


def test_a_check_handed_over_early_starts_on_its_slot(http_peer):
    slot = time.time() + 0.4
    task = ProbeTask("http", http_peer.url("/health"), validate_config("http", {}), 2.0, slot)

    [result] = asyncio.run(run_batch([task], concurrency=1))

    assert result.ok
    assert slot <= result.started_at < slot + 0.2


def test_postgresql_parameters_take_nothing_from_the_worker():
    from monitoring.probes.postgresql import connection_parameters

    plain = connection_parameters("postgresql://db.test/app", "192.0.2.10", 5.0)
    verified = connection_parameters(
        "postgresql://alice:pw@db.test:6432/app?sslmode=verify-full", "192.0.2.10", 5.0
    )

    assert plain["user"] == "postgres"
    assert plain["password"] == ""
    assert plain["passfile"].startswith("/nonexistent")
    assert plain["sslmode"] == "prefer"
    assert (plain["host"], plain["hostaddr"], plain["port"]) == ("db.test", "192.0.2.10", "5432")
    assert (verified["user"], verified["password"], verified["port"]) == ("alice", "pw", "6432")
    assert (verified["sslmode"], verified["sslrootcert"]) == ("verify-full", "system")
