#!/usr/bin/env python3
"""Clients at the limits do not stop replication: a controller and three
brokers with small connection and output limits; from other addresses,
floods of idle connections up to the per-address limit on every broker and
clients that ask for large answers and never read them; meanwhile an
acks=all producer on a replication-factor-3 topic is acknowledged
throughout, no broker is fenced and every ISR stays full."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (CLI_BIN, FETCH, frame, log, pb_msg,  # noqa: E402
                      run_main, wait_until, weir)

PER_IP = 100


def flood(addr, source, n):
    """n connections to addr from source; returns the open sockets (those
    beyond the broker's limit are closed by it)."""
    host, port = addr.rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(2)
        try:
            s.connect((host, int(port)))
            socks.append(s)
        except OSError:
            s.close()
    return socks


def open_count(socks, wait=0.5):
    """Sockets the peer has not closed."""
    time.sleep(wait)
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            alive += s.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def non_readers(addr, source, n, topic, partition):
    """Clients that fetch a partition's whole log (about 4 MB, cheap to
    serve: file segments) four times and never read the answers."""
    h = pb_msg((1, 1), (FETCH, pb_msg(
        (3, 16 << 20), (4, [pb_msg((1, topic), (2, partition), (3, 0),
                                   (4, 16 << 20), (5, -1))]), (5, -1))))
    f = frame(h)
    host, port = addr.rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(0.5)
        try:
            s.connect((host, int(port)))
            for _ in range(4):
                s.sendall(f)
        except OSError:
            pass
        socks.append(s)
    return socks


def test_replication_survives_clients_at_limits():
    args = ["--max-connections-per-ip", str(PER_IP),
            "--max-queued-response-bytes", str(32 << 20),
            "--replica-lag-time-max-ms", "2000"]
    with weirtest.Cluster(args=args, prefix="weir-limits-") as c:
        weir(c.brokers[1], "topic", "create", "l", "--partitions", "3",
             "--replication-factor", "3")
        weir(c.brokers[1], "topic", "create", "big", "--partitions", "1",
             "--replication-factor", "1")
        subprocess.run([CLI_BIN, "--bootstrap", c.brokers[1].addr, "bench",
                        "produce", "--topic", "big", "--records", "4000",
                        "--record-size", "1000"], check=True,
                       capture_output=True, timeout=60)

        def full():
            ps = [p for (t, _), p in c.state()["partitions"].items()
                  if t == "l"]
            return len(ps) == 3 and all(len(p["isr"]) == 3 for p in ps)
        wait_until("topic l with full ISRs", full, 20)
        bs = ",".join(b.addr for b in c.brokers.values())
        prod = subprocess.Popen(
            [CLI_BIN, "--bootstrap", bs, "bench", "produce", "--topic", "l",
             "--records", "30000", "--rate", "3000", "--acks", "all",
             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1)
        held = []
        for b in c.brokers.values():
            socks = flood(b.addr, "127.0.0.2", PER_IP + 50)
            left = open_count(socks)
            log(f"broker {b.addr}: {len(socks)} connections from "
                f"127.0.0.2, {left} left open (limit {PER_IP})")
            assert left <= PER_IP, left
            held += socks
        big = c.brokers[c.state()["partitions"][("big", 0)]["leader"]]
        readers = non_readers(big.addr, "127.0.0.3", 20, "big", 0)
        log(f"{len(readers)} clients fetching 4 MB four times from broker "
            f"{big.addr} and never reading (limit 32 MiB queued)")
        # while all that holds: nobody fenced, every ISR full
        samples = 0
        stop = threading.Event()
        bad = []

        def watch():
            nonlocal samples
            while not stop.is_set():
                st = c.state()
                fenced = [i for i, b in st["brokers"].items() if not b[2]]
                short = [(t, p) for (t, p), q in st["partitions"].items()
                         if t == "l" and len(q["isr"]) < 3]
                if fenced or short:
                    bad.append((fenced, short))
                samples += 1
                time.sleep(0.5)
        w = threading.Thread(target=watch)
        w.start()
        out, err = prod.communicate(timeout=120)
        stop.set()
        w.join(30)
        for s in held + readers:
            s.close()
        res = json.loads(out.decode().strip().splitlines()[-1])
        log(f"acks=all producer meanwhile: {res['records']} records, "
            f"{res['errors']} errors, {res['unacknowledged']} "
            f"unacknowledged, p99 {res['p99_ms']} ms; {samples} cluster "
            f"samples, {len(bad)} with a fenced broker or a short ISR")
        assert prod.returncode == 0, err.decode()[-2000:]
        assert res["errors"] == 0 and res["unacknowledged"] == 0, res
        assert samples >= 5 and not bad, bad[:3]
        for b in c.brokers.values():
            assert b.proc.poll() is None
        # the limits were really hit
        text = big.log_text()
        assert "event=output_shed" in text, "no connection was shed"
        log("the broker shed connections over its output limit: "
            + next(ln for ln in text.splitlines() if "output_shed" in ln))


if __name__ == "__main__":
    run_main([test_replication_survives_clients_at_limits])
