#!/usr/bin/env python3
"""A follower of a compacted topic that falls behind the leader's cleaner
catches up and rejoins the ISR. A controller and three brokers on
loopback; topic `cmp` (1 partition, replication factor 3,
cleanup.policy=compact, 4 KiB segments, dirty ratio 0.01, no compaction
lag, housekeeping every 200 ms).

100 records over 10 keys, then one follower is stopped (SIGTERM) and the
same 10 keys are overwritten 1,000 times; the leader's cleaner removes
most of them, leaving gaps between the offsets of the batches it keeps.
The follower comes back: it must accept batches that start past its log
end (the offsets in between were compacted away), rejoin the ISR, and,
made leader (the other two stopped), serve the latest value of every key.

Before the fix the follower refused every batch after a gap
(`fetched_batch_refused` / a failed append) and stayed out of the ISR."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC = "cmp"


def part(c, but=()):
    return c.state(but)["partitions"][(TOPIC, 0)]


def latest_per_key(c, i):
    out = weir(c.brokers[i], "consume", TOPIC, "--from-beginning",
               "--timeout-ms", "3000", "--format", r"%o %k %v\n",
               timeout=60).stdout.decode()
    latest, offsets = {}, []
    for ln in out.splitlines():
        o, k, v = ln.split(" ", 2)
        offsets.append(int(o))
        latest[k] = v
    assert offsets == sorted(offsets), "offsets out of order"
    return latest, offsets


def test_follower_behind_the_cleaner_rejoins():
    with weirtest.Cluster(args=["--retention-check-interval-ms", "200"],
                          prefix="weir-cmpf-") as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
             "--replication-factor", "3", "--config", "cleanup.policy=compact",
             "--config", "segment.bytes=4096",
             "--config", "min.cleanable.dirty.ratio=0.01",
             "--config", "min.compaction.lag.ms=0")
        p = wait_until("a leader", lambda: (
            lambda q: q if q["leader"] > 0 else None)(part(c)), 15)
        leader = p["leader"]
        victim = max({1, 2, 3} - {leader})
        weir(c.brokers[leader], "produce", TOPIC, "--key-separator", ":",
             "--linger-ms", "0", input=b"".join(
                 b"k%d:v%d-%s\n" % (i % 10, i, b"y" * 50) for i in range(100)))
        wait_until("a full ISR",
                   lambda: sorted(part(c)["isr"]) == [1, 2, 3], 15)
        c.brokers[victim].stop()
        for r in range(5):
            weir(c.brokers[leader], "produce", TOPIC, "--key-separator", ":",
                 "--linger-ms", "0", input=b"".join(
                     b"k%d:w%d-%d-%s\n" % (i % 10, r, i, b"z" * 50)
                     for i in range(200)))
        wait_until("the leader's cleaner at work", lambda: re.search(
            r"event=log_compacted topic=cmp .*records_removed=[1-9]",
            c.brokers[leader].log_text()), 30)
        want, _ = latest_per_key(c, leader)
        c.brokers[victim].start()
        c.wait_alive({1, 2, 3}, timeout=60)
        wait_until(f"broker {victim} back in the ISR",
                   lambda: victim in part(c)["isr"], 30)
        t = c.brokers[victim].log_text()
        for pat in ("fetched_batch_refused", "partition_failed",
                    "event=log_offline "):
            assert pat not in t, f"broker {victim}: {pat}"
        others = sorted({1, 2, 3} - {victim})
        for i in others:
            c.brokers[i].stop()
        wait_until(f"broker {victim} leads", lambda: part(
            c, but=tuple(others))["leader"] == victim, 20)
        got, offsets = latest_per_key(c, victim)
        log(f"broker {victim} serves {len(offsets)} records up to offset "
            f"{offsets[-1]}; latest per key as the leader had it: "
            f"{got == want}")
        assert got == want, (got, want)
        assert offsets[-1] == 1099, offsets[-1]


if __name__ == "__main__":
    run_main([test_follower_behind_the_cleaner_rejoins])
