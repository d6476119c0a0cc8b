"""Local targets of the probe, scheduler and hanging-probe benchmarks (it is no benchmark):
one nginx worker answering `200 ok` on a few loopback ports, and TCP listeners that accept,
read and never answer, each pinned to the helper core, with the CPU of what serves them."""

import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from _support import CPUS, HELPER_CPU, free_ports, pin, stop, tree_cpu_seconds, wait_for_port

NGINX_CONF = """
worker_processes 1;
{affinity}
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile 20000;
events {{ worker_connections 8192; multi_accept on; }}
http {{
    access_log off;
    keepalive_timeout 0;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        {listen}
        location / {{ default_type text/plain; return 200 "ok\\n"; }}
    }}
}}
"""


@dataclass
class Targets:
    """HTTP targets on loopback and the processes that serve them."""

    urls: list[str]
    pids: list[int] = field(default_factory=list)

    def cpu_seconds(self) -> float:
        return sum(tree_cpu_seconds(pid) for pid in self.pids)


@contextlib.contextmanager
def nginx_targets(ports: int = 4) -> Iterator[Targets]:
    """One nginx worker (pinned to the helper core) answering `200 ok` on `ports` ports.

    `keepalive_timeout 0`: nginx closes each connection after its response, so probes
    open a fresh connection each time, as the engine's `force_close` client does anyway.
    """
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        sys.exit("nginx is not installed: `apt-get install -y nginx-light` (Debian/Ubuntu).")
    chosen = free_ports(ports)
    with (
        tempfile.TemporaryDirectory(prefix="bench-nginx-") as folder,
        Path(folder, "stderr.log").open("w+") as log,
    ):
        affinity = f"worker_cpu_affinity {1 << HELPER_CPU:b};" if CPUS > 1 else ""
        listen = " ".join(f"listen 127.0.0.1:{port};" for port in chosen)
        conf = Path(folder, "nginx.conf")
        conf.write_text(NGINX_CONF.format(dir=folder, affinity=affinity, listen=listen))
        process = subprocess.Popen([nginx, "-c", str(conf), "-p", folder], stdout=log, stderr=log)
        try:
            for port in chosen:
                wait_for_port(port, process)
            pin(process.pid, HELPER_CPU)
            urls = [f"http://127.0.0.1:{port}/health" for port in chosen]
            yield Targets(urls, [process.pid])
        except Exception:
            log.seek(0)
            sys.stderr.write("--- nginx log ---\n" + log.read()[-2000:])
            raise
        finally:
            stop(process, signal.SIGQUIT)


HANG_SERVER = """
import asyncio, sys

async def hold(reader, writer):
    try:
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass
    writer.close()

async def main():
    servers = [
        await asyncio.start_server(hold, "127.0.0.1", int(port), backlog=4096)
        for port in sys.argv[1:]
    ]
    print("ready", flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))

asyncio.run(main())
"""


@contextlib.contextmanager
def hanging_targets(ports: int = 2) -> Iterator[Targets]:
    """TCP listeners that accept, read and never answer (pinned to the helper core)."""
    chosen = free_ports(ports)
    process = subprocess.Popen(
        [sys.executable, "-c", HANG_SERVER, *map(str, chosen)], stdout=subprocess.PIPE, text=True
    )
    try:
        if process.stdout is None or process.stdout.readline().strip() != "ready":
            raise RuntimeError("the hanging server did not start")
        pin(process.pid, HELPER_CPU)
        yield Targets([f"http://127.0.0.1:{port}/health" for port in chosen], [process.pid])
    finally:
        stop(process)
