"""A real DNS server for the DNS probe tests (dnslib, UDP on 127.0.0.1, an ephemeral port).

Zone `ok.test.` answers every record type the probe asks for; `missing.test.` answers
NXDOMAIN, `broken.test.` SERVFAIL, `refused.test.` REFUSED, and `slow.test.` answers only
after SLOW_SECONDS. It counts the queries it gets, so that the network-policy test can show
that a refused resolver was never asked.
"""

import threading
import time
from typing import Any

from dnslib import QTYPE, RCODE, RR, DNSRecord
from dnslib.server import BaseResolver, DNSLogger, DNSServer

HOST = "127.0.0.1"
SLOW_SECONDS = 3.0
ZONE = """
ok.test. 60 A 192.0.2.10
ok.test. 60 A 192.0.2.11
ok.test. 60 AAAA 2001:db8::10
ok.test. 60 MX 10 Mail.OK.test.
ok.test. 60 TXT "v=spf1 -all"
ok.test. 60 NS ns1.ok.test.
ok.test. 60 SOA ns1.ok.test. admin.ok.test. 2026112601 3600 600 86400 60
ok.test. 60 CAA 0 issue "letsencrypt.org"
_sip._tcp.ok.test. 60 SRV 10 5 5060 sip.ok.test.
www.ok.test. 60 CNAME ok.test.
10.2.0.192.in-addr.arpa. 60 PTR ok.test.
slow.test. 60 A 192.0.2.20
"""
RCODES = {"missing.test.": RCODE.NXDOMAIN, "broken.test.": RCODE.SERVFAIL}
RCODES["refused.test."] = RCODE.REFUSED


class _Zone(BaseResolver):  # type: ignore[misc]
    def __init__(self) -> None:
        self.records = RR.fromZone(ZONE)
        self.queries = 0
        self.busy = 0  # queries being answered: `stop()` lets them finish first
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def resolve(self, request: DNSRecord, handler: Any) -> DNSRecord:
        with self._lock:
            self.queries += 1
            self.busy += 1
        try:
            return self._answer(request)
        finally:
            with self._lock:
                self.busy -= 1

    def _answer(self, request: DNSRecord) -> DNSRecord:
        reply = request.reply()
        name, qtype = str(request.q.qname).lower(), QTYPE[request.q.qtype]
        if name in RCODES:
            reply.header.rcode = RCODES[name]
            return reply
        if name == "slow.test.":
            self.stopping.wait(SLOW_SECONDS)
        for record in self.records:
            rtype = QTYPE[record.rtype]
            if str(record.rname).lower() == name and (rtype == qtype or rtype == "CNAME"):
                reply.add_answer(record)
                if rtype == "CNAME" and qtype != "CNAME":
                    target = str(record.rdata).lower()
                    reply.add_answer(
                        *(
                            r
                            for r in self.records
                            if str(r.rname) == target and QTYPE[r.rtype] == qtype
                        )
                    )
        return reply


class DNSPeer:
    """The server, from construction until `stop()`."""

    def __init__(self) -> None:
        self.zone = _Zone()
        quiet = DNSLogger("-request,-reply,-truncated,-error,-recv,-send,-data", logf=print)
        self._server = DNSServer(self.zone, address=HOST, port=0, logger=quiet)
        self.port = self._server.server.server_address[1]
        self._server.start_thread()

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def queries(self) -> int:
        return self.zone.queries

    def stop(self) -> None:
        self.zone.stopping.set()
        deadline = time.monotonic() + 5
        while self.zone.busy and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # the last reply leaves after `resolve` returns
        self._server.stop()
        self._server.server.server_close()
        self._server.thread.join(timeout=5)
