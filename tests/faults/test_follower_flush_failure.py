#!/usr/bin/env python3
"""Issue 12 item 6 (first half): a follower reports only what is durable.

One follower runs with the faultfs LD_PRELOAD shim (tests/lib/faultfs.c)
told to make fsyncs of the partition's files fail with EIO. With
min.insync.replicas = 3, an acks=all write then needs that follower's
fetch offset to pass it. The follower appends the
batch, its fsync fails: it must never send a fetch offset past what it
flushed, so the write is not acknowledged and the leader's high watermark
does not cover it. Before the fix the fetcher sent its log end after the
failed flush and the write was acknowledged. Every wait is bounded."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import weirtest  # noqa: E402
from diskfault import FaultCtl  # noqa: E402
from weirtest import (LIST_OFFSETS, connect, log, pb_int, pb_msg,  # noqa
                      pb_parse, read_frame, request, run_main, wait_until,
                      weir)

TOPIC = "fs"


class Cluster(weirtest.Cluster):
    """Every broker runs with the faultfs shim (tests/lib/faultfs.c) and a
    control file of its own; a rule written there fails its fsyncs."""

    def __init__(self):
        super().__init__(args=["--replica-lag-time-max-ms", "3000"],
                         prefix="weir-flushfail-")
        self.fctl = {}
        for i, b in self.brokers.items():
            self.fctl[i] = FaultCtl(os.path.join(self.tmp, f"faultfs-{i}"))
            b.env = self.fctl[i].env()

    def part(self, but=()):
        return self.state(but)["partitions"][(TOPIC, 0)]


def latest_offset(broker):
    s = connect(broker)
    try:
        body = pb_msg((1, [pb_msg((1, TOPIC), (2, 0), (3, -1))]))
        s.sendall(request(1, LIST_OFFSETS, body))
        env, _ = read_frame(s)
        res = pb_parse(pb_parse(env[LIST_OFFSETS][0])[1][0])
        return pb_int(res, 3), pb_int(res, 4, -1)
    finally:
        s.close()


def report_rows(p):
    return [ln.split() for ln in p.stdout.decode().splitlines() if ln]


def test_follower_never_reports_unflushed_records():
    with Cluster() as c:
        run(c)


def run(c):
    weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
         "--replication-factor", "3", "--config", "min.insync.replicas=3")
    p = wait_until("partition led", lambda: (
        lambda q: q if q["leader"] > 0 else None)(c.part()), 15)
    leader = p["leader"]
    victim = min({1, 2, 3} - {leader})
    wait_until("full ISR", lambda: sorted(c.part()["isr"]) == [1, 2, 3], 20)
    out = weir(c.brokers[leader], "produce", TOPIC, "--report",
               input=b"".join(b"a-%d\n" % i for i in range(10)))
    assert all(r[0] != "ERROR" for r in report_rows(out)), out.stdout
    assert latest_offset(c.brokers[leader]) == (0, 10)
    pdir = os.path.join(c.brokers[victim].data_dir, f"{TOPIC}-0") + "/"
    c.fctl[victim].set([("fsync", "EIO", pdir)])
    t0 = time.time()
    out = weir(c.brokers[leader], "produce", TOPIC, "--report", "--acks",
               "all", "--delivery-timeout-ms", "8000", input=b"b-0\n",
               check=False, timeout=60)
    rows = report_rows(out)
    log(f"acks=all with broker {victim}'s fsync failing: exit "
        f"{out.returncode} {rows} after {time.time() - t0:.1f}s")
    text = c.brokers[victim].log_text()
    assert c.fctl[victim].hits(), "the shim did not fail the follower's fsync"
    assert rows and all(r[0] == "ERROR" for r in rows), rows
    # the high watermark never covered the record
    code, hw = latest_offset(c.brokers[leader])
    log(f"leader's latest offset: error {code}, offset {hw}")
    assert code != 0 or hw == 10, (code, hw)
    assert "event=partition_failed" in text


if __name__ == "__main__":
    run_main([test_follower_never_reports_unflushed_records])
