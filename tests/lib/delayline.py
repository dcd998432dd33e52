#!/usr/bin/env python3
"""A fixed delay for the packets a test node sends (tests/lib/linkshape.sh).

    delayline.py TUN OUTDEV DELAY_MS

Runs inside the node's network namespace. It opens the tun device TUN (which the node's
route to the host points at), holds every IP packet read from it for DELAY_MS, then sends it
out of OUTDEV through a raw socket bound to that device. This stands in for tc's netem,
which the test machine's kernel lacks (CONFIG_NET_SCH_NETEM is not set): the rate stays
with tc (tbf). Prints "ready" once the device is open; exits when its parent does."""
import collections
import fcntl
import os
import select
import socket
import struct
import sys
import time

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000


def main():
    tun, out_dev, delay = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000.0
    parent = os.getppid()
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", tun.encode(), IFF_TUN | IFF_NO_PI))
    os.set_blocking(fd, False)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, out_dev.encode())
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    print("ready", flush=True)
    q = collections.deque()
    last_check = time.monotonic()
    while True:
        now = time.monotonic()
        while q and q[0][0] <= now:
            _, p = q.popleft()
            try:
                raw.sendto(p, (socket.inet_ntoa(p[16:20]), 0))
            except OSError:
                pass
        if now - last_check > 1.0:
            last_check = now
            if os.getppid() != parent:
                return
        timeout = min(1.0, max(0.0, q[0][0] - now)) if q else 1.0
        try:
            r, _, _ = select.select([fd], [], [], timeout)
        except InterruptedError:
            continue
        if not r:
            continue
        t = time.monotonic() + delay
        while True:
            try:
                p = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                return
            q.append((t, p))


main()
