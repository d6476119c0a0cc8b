"""An ICMP echo responder that answers only even sequence numbers: a host losing exactly
half of a series, for the ICMP probe's partial-loss test.

Run inside a network namespace whose kernel ignores echo requests
(`net.ipv4.icmp_echo_ignore_all=1`); it needs a raw socket (root). Prints `ready` once
listening.
"""

import socket
import struct

ECHO_REQUEST, ECHO_REPLY = 8, 0


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print("ready", flush=True)
    while True:
        packet, (source, _) = sock.recvfrom(65_535)
        icmp = packet[(packet[0] & 0x0F) * 4 :]
        if icmp[0] != ECHO_REQUEST:
            continue
        ident, sequence = struct.unpack("!HH", icmp[4:8])
        if sequence % 2:
            continue  # the odd ones are "lost"
        reply = struct.pack("!BBHHH", ECHO_REPLY, 0, 0, ident, sequence) + icmp[8:]
        reply = reply[:2] + struct.pack("!H", checksum(reply)) + reply[4:]
        sock.sendto(reply, (source, 0))


if __name__ == "__main__":
    main()
