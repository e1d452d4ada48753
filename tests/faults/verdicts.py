"""Helpers for the fault tests of honest verdicts (test_min_isr_verdicts,
test_leader_loss_verdicts, test_storage_error_sequence): a raw produce
client that keeps several requests in flight on one connection and reads
every answer, the error codes of common/err.h by name, and a drain of a
partition. Real processes only; every wait is bounded."""
import os
import re
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (PRODUCE, connect, pb_msg, pb_parse,  # noqa: E402
                      record_batch, request, wait_until, weir)

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def _codes():
    """{NAME: (code, retriable, definite)} from common/err.h."""
    out = {}
    with open(os.path.join(ROOT, "common", "err.h")) as f:
        for m in re.finditer(r"X\((\w+), (\d+), (true|false), (true|false),",
                             f.read()):
            out[m.group(1)] = (int(m.group(2)), m.group(3) == "true",
                               m.group(4) == "true")
    return out


CODES = _codes()
NAMES = {v[0]: k for k, v in CODES.items()}


def code(name):
    return CODES[name][0]


def name(c):
    return NAMES.get(c, f"CODE_{c}")


def definite(c):
    """True when the table says `c` means "certainly not written"."""
    n = NAMES.get(c)
    return n is not None and CODES[n][2]


def produce_request(corr, topic, partition, values, acks=-1,
                    timeout_ms=30000):
    payload = record_batch([v.encode() for v in values])
    part = pb_msg((1, topic), (2, partition), (3, len(payload)))
    return request(corr, PRODUCE, pb_msg((1, acks), (2, timeout_ms),
                                         (3, [part])), payload)


def _signed(v, bits):
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def read_answer(sock, deadline):
    """One produce answer: (correlation id, error code, base offset,
    message), or None when the connection closed or the deadline passed."""
    head = _recv(sock, 8, deadline)
    if head is None:
        return None
    flen, hlen = struct.unpack(">II", head)
    rest = _recv(sock, flen - 4, deadline)
    if rest is None:
        return None
    resp = pb_parse(rest[:hlen])
    corr = resp.get(1, [0])[-1]
    if 13 not in resp:
        return corr, _signed(resp.get(2, [0])[-1], 32), -1, \
            resp.get(3, [b""])[-1].decode(errors="replace")
    res = pb_parse(pb_parse(resp[13][0])[1][0])
    return (corr, _signed(res.get(3, [0])[-1], 32),
            _signed(res.get(5, [0])[-1], 64),
            res.get(4, [b""])[-1].decode(errors="replace"))


def _recv(sock, n, deadline):
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.time()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(buf))
        except socket.timeout:
            return None
        except (ConnectionResetError, BrokenPipeError, OSError):
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def partition_info(broker, topic, partition=0):
    from weirtest import cluster_state
    return cluster_state(broker)["partitions"].get((topic, partition))


def wait_leader(broker, topic, partition=0, timeout=20, isr=None,
                not_leader=None):
    """Partition info once it has a leader (other than not_leader, and
    with an ISR of `isr` members when given)."""
    def ok():
        p = partition_info(broker, topic, partition)
        if p is None or p["leader"] <= 0 or p["leader"] == not_leader:
            return None
        if isr is not None and len(p["isr"]) != isr:
            return None
        return p
    return wait_until(f"a leader for {topic}/{partition}", ok, timeout)


def drain(broker, topic, partition=0, timeout_ms=3000):
    """{offset: value} of a whole partition, read with the CLI."""
    out = weir(broker, "consume", topic, "--partition", partition,
               "--from-beginning", "--timeout-ms", timeout_ms,
               "--format", r"%o %v\n", check=False, timeout=60)
    got = {}
    for line in out.stdout.decode(errors="replace").splitlines():
        if " " in line:
            o, v = line.split(" ", 1)
            got[int(o)] = v
    return got


def connect_to(broker):
    s = connect(broker)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return s
