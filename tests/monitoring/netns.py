"""Test hosts in network namespaces: a veth pair from this host to a namespace of our own.

Only root may make them (`ip netns add`); the tests that need one skip with that reason
otherwise. Each namespace gets a /30 of 10.222.0.0/16 picked from the process id, so that
test runs side by side (helpers, CI) do not clash, and is deleted with its veth pair.
A namespace made with `routed=True` sends everything beyond its link through this host, as a
remote site does through its router: it reaches any address of this host, not only `gateway`.
"""

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count

import pytest

NOT_ROOT = "network namespaces need root (ip netns add)"
_serial = count()
IP = shutil.which("ip") or "/usr/sbin/ip"


def skip_unless_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(NOT_ROOT)


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run([IP, *args], check=check, capture_output=True, timeout=10)  # noqa: S603 - our own command line


@dataclass(frozen=True)
class Namespace:
    """A namespace reached from here at `address` (our side of the link is `gateway`)."""

    name: str
    address: str
    gateway: str

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        """A command inside the namespace, checked."""
        return subprocess.run(  # noqa: S603 - our own command line
            [IP, "netns", "exec", self.name, *command],
            check=True,
            capture_output=True,
            text=True,
            timeout=10,
        )

    def command(self, *command: str) -> list[str]:
        """The command line that runs `command` inside the namespace (`ip netns exec`
        executes it in place, so its process id is the command's)."""
        return [IP, "netns", "exec", self.name, *command]

    def popen(self, *command: str) -> subprocess.Popen[str]:
        """A process started inside the namespace."""
        return subprocess.Popen(  # noqa: S603 - our own command line
            [IP, "netns", "exec", self.name, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@contextmanager
def namespace(*, routed: bool = False) -> Iterator[Namespace]:
    """A fresh namespace linked to this one by a veth pair; `routed`: with a default route
    through `gateway`."""
    skip_unless_root()
    serial = next(_serial)
    tag = f"{os.getpid() % 100_000}x{serial}"
    name, here, there = f"hm{tag}", f"hmh{tag}", f"hmn{tag}"
    subnet = (os.getpid() * 8 + serial) % 16_384  # a /30 in 10.222.0.0/16
    base = f"10.222.{subnet // 64}.{(subnet % 64) * 4}"
    prefix = base.rsplit(".", 1)[0]
    last = int(base.rsplit(".", 1)[1])
    gateway, address = f"{prefix}.{last + 1}", f"{prefix}.{last + 2}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", name)
        _ip("addr", "add", f"{gateway}/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("-n", name, "addr", "add", f"{address}/30", "dev", there)
        _ip("-n", name, "link", "set", there, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        if routed:
            _ip("-n", name, "route", "add", "default", "via", gateway)
        yield Namespace(name, address, gateway)
    finally:
        _ip("link", "del", here, check=False)
        _ip("netns", "del", name, check=False)
