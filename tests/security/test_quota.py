#!/usr/bin/env python3
"""Byte-rate quotas on a real broker: a producer over its quota is slowed
to the quota while another client's latency stays normal; the answer says
how long it was held (throttle_time_ms); a consumer over the fetch quota
is slowed too; and without quotas the same work is fast (the measure of
what the quota did)."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (CLI_BIN, PRODUCE, Broker, frame, log,  # noqa: E402
                      pb_int, pb_msg, pb_parse, read_frame, record_batch,
                      run_main, weir)

RATE = 100_000        # produce quota, bytes a second
FETCH_RATE = 200_000  # fetch quota
RECORDS, SIZE = 5000, 100


def bench(b, client_id, *args):
    p = subprocess.run([CLI_BIN, "--bootstrap", b.addr, "--client-id",
                        client_id, "bench", *args, "--json"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def heavy_produce(b, topic):
    return bench(b, "heavy", "produce", "--topic", topic, "--records",
                 str(RECORDS), "--record-size", str(SIZE))


def test_produce_quota_slows_only_the_heavy_client():
    with Broker() as free, Broker(args=[
            "--quota-produce-bytes-per-sec", str(RATE),
            "--quota-fetch-bytes-per-sec", str(FETCH_RATE)]) as q:
        for b in (free, q):
            weir(b, "topic", "create", "t", "--partitions", "1")
        base = heavy_produce(free, "t")
        log(f"no quota: {RECORDS} x {SIZE} B in {base['seconds']} s "
            f"({base['mb_per_sec']} MB/s)")
        light = {}

        def run_light():
            time.sleep(0.5)  # the heavy one is over its quota by then
            light.update(bench(q, "light", "produce", "--topic", "t",
                               "--records", "100", "--rate", "50",
                               "--record-size", str(SIZE)))
        t = threading.Thread(target=run_light)
        t.start()
        heavy = heavy_produce(q, "t")
        t.join(60)
        log(f"quota {RATE} B/s: heavy took {heavy['seconds']} s "
            f"({heavy['mb_per_sec']} MB/s, p99 {heavy['p99_ms']} ms); "
            f"light meanwhile: p50 {light['p50_ms']} ms, p99 "
            f"{light['p99_ms']} ms")
        # about 550 kB with the batch framing, one second of burst: at
        # least 3 s at the quota; without it well under that
        assert heavy["seconds"] >= 3.0, heavy
        assert heavy["mb_per_sec"] <= 1.5 * RATE / 1e6, heavy
        assert base["seconds"] < heavy["seconds"] / 2, (base, heavy)
        assert heavy["errors"] == 0 and heavy["unacknowledged"] == 0
        assert light["p99_ms"] < 250, light
        assert light["errors"] == 0, light

        # the answer says how long it was held
        s = socket.create_connection(("127.0.0.1", q.port))
        batch = record_batch([b"x" * 1000] * 250)  # ~250 kB: 1.5 s over
        body = pb_msg((1, 1), (2, 30000), (3, [pb_msg(
            (1, "t"), (2, 0), (3, len(batch)))]))
        t0 = time.time()
        s.sendall(frame(pb_msg((1, 7), (2, "raw-heavy"), (PRODUCE, body)),
                        batch))
        r = read_frame(s, timeout=30)
        waited = time.time() - t0
        resp = pb_parse(r[0][PRODUCE][0])
        throttle = pb_int(resp, 2)
        part = pb_parse(resp[1][0])
        log(f"raw 250 kB produce: answered after {waited:.2f} s, "
            f"throttle_time_ms {throttle}, error {pb_int(part, 3)}")
        assert pb_int(part, 3) == 0
        assert 1000 <= throttle <= 2500, throttle
        assert waited >= throttle / 1000 - 0.1, (waited, throttle)
        s.close()

        # fetch: the heavy consumer is slowed to its quota as well (timed
        # from the outside: bench times from the first record, and the
        # first answer is the one held)
        def timed_consume(b):
            t0 = time.time()
            bench(b, "reader", "consume", "--topic", "t", "--records",
                  str(RECORDS))
            return time.time() - t0
        fast, slow = timed_consume(free), timed_consume(q)
        log(f"consume {RECORDS} records: {fast:.2f} s without a quota, "
            f"{slow:.2f} s at {FETCH_RATE} B/s")
        assert slow >= 1.5, slow
        assert fast < slow / 2, (fast, slow)


if __name__ == "__main__":
    run_main([test_produce_quota_slows_only_the_heavy_client])
