#!/usr/bin/env python3
"""Retention never deletes above the high watermark. A controller and
three brokers on loopback; topic `h` (1 partition, replication factor 3,
min.insync.replicas 2, 4 KiB segments, retention.bytes 8 KiB, retention
checked every 200 ms, followers allowed 60 s of lag). Both followers are
stopped (SIGSTOP: still in the ISR), so the high watermark stays where it
was while `weir produce --acks 1` writes 3,000 records to the leader.

While they are stopped, the leader's log start (earliest) never passes
the high watermark (latest), however far past retention.bytes the log
grows: what the followers have not copied stays. Once they run again
(SIGCONT) they copy it all, the high watermark reaches the log end, and
only then does retention cut the log back to its limit."""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import diskfault  # noqa: E402
from diskfault import partition_state  # noqa: E402
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC = "h"


def offsets(c, which, but=()):
    out = weir(c.live(but), "offsets", TOPIC, "--time", which).stdout
    return int(out.decode().split()[1])


def test_retention_stops_at_high_watermark():
    with weirtest.Cluster(args=diskfault.broker_args(
            "--replica-lag-time-max-ms", "60000",
            "--retention-check-interval-ms", "200"),
            prefix="weir-rethw-") as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
             "--replication-factor", "3", "--config", "segment.bytes=4096",
             "--config", "retention.bytes=8192")
        st = wait_until("a full ISR", lambda: (
            lambda p: p if p["leader"] > 0 and len(p["isr"]) == 3 else None)(
                partition_state(c, TOPIC, 0)), 20)
        leader = st["leader"]
        followers = [b for b in (1, 2, 3) if b != leader]
        weir(c.brokers[leader], "produce", TOPIC, "--acks", "all",
             "--batch-size", "512", input="".join(f"a{i}\n" for i in range(200)).encode())
        hw0 = offsets(c, "latest")
        assert hw0 == 200, hw0
        for f in followers:
            c.brokers[f].proc.send_signal(signal.SIGSTOP)
        try:
            p = weir(c.brokers[leader], "produce", TOPIC, "--acks", "1",
                     "--batch-size", "512", "--report", input="".join(
                         f"b{i}\n" for i in range(3000)).encode())
            acked = [ln for ln in p.stdout.decode().splitlines()
                     if not ln.startswith("ERROR")]
            log(f"{len(acked)} records acknowledged by the leader alone; "
                f"high watermark {hw0}")
            worst = 0
            for _ in range(15):  # 3 s: many retention passes
                start = offsets(c, "earliest", but=tuple(followers))
                hw = offsets(c, "latest", but=tuple(followers))
                worst = max(worst, start - hw)
                assert start <= hw, f"log start {start} passed the high " \
                                    f"watermark {hw}"
                time.sleep(0.2)
            log(f"log start stayed at or below the high watermark {hw}")
        finally:
            for f in followers:
                c.brokers[f].proc.send_signal(signal.SIGCONT)
        wait_until("the high watermark at the log end", lambda: offsets(
            c, "latest") == 3200, 30)
        wait_until("retention back under its limit", lambda: offsets(
            c, "earliest") > 3200 - 1000, 30)
        st = partition_state(c, TOPIC, 0)
        assert len(st["isr"]) == 3, st
        for f in followers:
            assert "OFFSET_OUT_OF_RANGE" not in c.brokers[f].log_text()
        log(f"followers caught up (isr={st['isr']}); log start now "
            f"{offsets(c, 'earliest')}")


if __name__ == "__main__":
    run_main([test_retention_stops_at_high_watermark])
