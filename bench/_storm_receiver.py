"""A fast local webhook receiver for bench/incident_storm.py (not a benchmark itself).

Run as a script with one port per argument (0: any free one); prints the ports, one line,
then serves HTTP/1.1 with keep-alive on one asyncio loop. Every POST is answered 204 and
counted by (path, `X-Healthmon-Delivery` header): the first time as a delivery, again as a
duplicate. `GET /_stats` answers the counts as JSON (with the wall-clock time of the first
and last POST); `POST /_reset` forgets them. Standard library only.
"""

import asyncio
import json
import sys
import time

ID_HEADER = b"x-healthmon-delivery"
NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


class Counts:
    """What the receiver saw since the last reset."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.seen: set[tuple[bytes, bytes]] = set()
        self.posts = self.duplicates = self.connections = 0
        self.first = self.last = 0.0

    def post(self, path: bytes, key: bytes) -> None:
        now = time.time()
        self.first = self.first or now
        self.last = now
        self.posts += 1
        if (path, key) in self.seen:
            self.duplicates += 1
        else:
            self.seen.add((path, key))

    def as_json(self) -> bytes:
        return json.dumps(
            {
                "posts": self.posts,
                "unique": len(self.seen),
                "duplicates": self.duplicates,
                "connections": self.connections,
                "first": self.first,
                "last": self.last,
            }
        ).encode()


COUNTS = Counts()


def _parse(head: bytes) -> tuple[bytes, bytes, dict[bytes, bytes]]:
    lines = head.split(b"\r\n")
    method, path, _ = lines[0].split(b" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return method, path, headers


def _answer(method: bytes, path: bytes, headers: dict[bytes, bytes]) -> bytes:
    if method == b"GET" and path == b"/_stats":
        body = COUNTS.as_json()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        return head.encode() + b"\r\n\r\n" + body
    if method == b"POST" and path == b"/_reset":
        COUNTS.reset()
    elif method == b"POST":
        COUNTS.post(path, headers.get(ID_HEADER, b""))
    return NO_CONTENT


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    COUNTS.connections += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path, headers = _parse(head[:-4])
            length = int(headers.get(b"content-length", b"0"))
            if length:
                await reader.readexactly(length)
            writer.write(_answer(method, path, headers))
            if headers.get(b"connection", b"").lower() == b"close":
                break
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    writer.close()


async def main(ports: list[int]) -> None:
    servers = [await asyncio.start_server(serve, "127.0.0.1", p, backlog=4096) for p in ports]
    print(" ".join(str(s.sockets[0].getsockname()[1]) for s in servers), flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    asyncio.run(main([int(port) for port in sys.argv[1:]]))
