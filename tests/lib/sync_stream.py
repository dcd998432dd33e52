"""Sync streams by hand, for tests that must send what skiff never would (docs/sync.md):
records, frames, and the content hash a file record ends with.

    import sys; sys.path.insert(0, "tests/lib"); import sync_stream as ss
    data = ss.hello("d") + ss.file_rec("x", b"hi\\n") + ss.end(1)
    open("s", "wb").write(ss.frame(data))
"""
import struct

P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
M = (1 << 64) - 1
SEED2 = 0x27D4EB2F165667C5


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def _round(acc, v):
    return (_rotl((acc + v * P2) & M, 31) * P1) & M


def xxh64(data, seed=0):
    """XXH64 (xxHash's specification)."""
    n, p = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while p + 32 <= n:
            for i in range(4):
                v[i] = _round(v[i], struct.unpack_from("<Q", data, p + 8 * i)[0])
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M
        for x in v:
            h = ((h ^ _round(0, x)) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while p + 8 <= n:
        h = (_rotl(h ^ _round(0, struct.unpack_from("<Q", data, p)[0]), 27) * P1 + P4) & M
        p += 8
    if p + 4 <= n:
        h = (_rotl(h ^ ((struct.unpack_from("<I", data, p)[0] * P1) & M), 23) * P2 + P3) & M
        p += 4
    while p < n:
        h = (_rotl(h ^ ((data[p] * P5) & M), 11) * P1) & M
        p += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


def content_hash(data):
    """A file's content hash (bootstrap/sync/sync_hash.h): two XXH64s, 16 bytes."""
    return struct.pack(">QQ", xxh64(data), xxh64(data, SEED2))


def rec(t, body):
    return t.encode() + struct.pack("<I", len(body)) + body


def frame(data, kind="R"):
    out = b""
    for i in range(0, len(data), 1 << 18):
        piece = data[i:i + (1 << 18)]
        out += kind.encode() + struct.pack("<I", len(piece))[:3] + piece
    return out


def hello(mode="d", session=False):
    return rec("H", b"skiff-sync" + bytes([2, ord(mode), 1 if session else 0, 0]) + bytes(32))


def file_rec(name, data=b"x", mode=0o644, mtime=0):
    name = name.encode() if isinstance(name, str) else name
    return (rec("f", struct.pack("<IqQ", mode, mtime, len(data)) + name) +
            (rec("c", data) if data else b"") + rec("h", content_hash(data)))


def link_rec(name, target):
    return rec("l", struct.pack("<qI", 0, len(target)) + target.encode() + name.encode())


def dir_rec(name, mode=0o755):
    return rec("d", struct.pack("<I", mode) + name.encode())


def end(n):
    return rec("E", struct.pack("<Q", n))
