#!/usr/bin/env python3
"""Compaction never removes a committed record because of a later record
that is not committed yet. A controller (30 s session timeout) and three
brokers on loopback; topic `ck` (1 partition, replication factor 3,
cleanup.policy=compact, 600-byte segments, dirty ratio 0.01, no
compaction lag, housekeeping every 200 ms, followers allowed 60 s of lag).

`k=OLD`, then records the cleaner may remove (keys d0..d9 twice), then
enough to roll the segment are written with acks=all (committed). Both followers are stopped
(SIGSTOP: still in the ISR, so the high watermark stays where it was)
while the leader takes `k=NEW` and enough acks=1 records to roll its
segments. The cleaner cleans the committed segments but must not let
k=NEW (above the high watermark) remove k=OLD. Then the leader is killed (-9) and the followers resume:
one of them leads, holding k=OLD but not k=NEW. The old leader comes
back, truncates k=NEW on divergence and rejoins the ISR; finally it leads
again (the others stopped) and must still serve k=OLD.

Before the fix the cleaner used every closed segment: the leader dropped
k=OLD, then lost k=NEW to the truncation, and k was gone for good."""
import glob
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import cluster_broker, log, run_main, wait_until, weir  # noqa

TOPIC = "ck"
OLD = b"OLDVALUE-committed"
NEW = b"NEWVALUE-uncommitted"


def files_have(c, i, needle):
    for f in glob.glob(os.path.join(c.brokers[i].data_dir, f"{TOPIC}-0",
                                    "*.log")):
        with open(f, "rb") as fh:
            if needle in fh.read():
                return True
    return False


def part(c, but=()):
    return c.state(but)["partitions"][(TOPIC, 0)]


def produce(c, i, lines, acks="all"):
    weir(c.brokers[i], "produce", TOPIC, "--key-separator", ":",
         "--linger-ms", "0", "--acks", acks, input=lines)


def k_values(c, i):
    out = weir(c.brokers[i], "consume", TOPIC, "--from-beginning",
               "--timeout-ms", "3000", "--format", r"%o %k %v\n",
               timeout=60).stdout.decode()
    return [ln for ln in out.splitlines() if ln.split(" ")[1:2] == ["k"]]


def test_compaction_keeps_what_is_not_superseded_by_a_commit():
    c = weirtest.Cluster(prefix="weir-cmphw-")
    c.ctl = weirtest.Controller(
        data_dir=os.path.join(c.tmp, "controller"),
        args=["--session-timeout-ms", "30000"])
    c.brokers = {i: cluster_broker(c.ctl, i, c.tmp, args=[
        "--retention-check-interval-ms", "200",
        "--replica-lag-time-max-ms", "60000"]) for i in (1, 2, 3)}
    with c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
             "--replication-factor", "3", "--config", "cleanup.policy=compact",
             "--config", "segment.bytes=600",
             "--config", "min.cleanable.dirty.ratio=0.01",
             "--config", "min.compaction.lag.ms=0")
        p = wait_until("a leader", lambda: (
            lambda q: q if q["leader"] > 0 else None)(part(c)), 15)
        leader = p["leader"]
        followers = sorted({1, 2, 3} - {leader})
        produce(c, leader, b"k:" + OLD + b"\n" + b"".join(
            b"a%d:filler%d\n" % (i, i) for i in range(10)))
        for r in range(2):  # committed records the cleaner may remove
            produce(c, leader, b"".join(
                b"d%d:again%d-%d\n" % (i, r, i) for i in range(10)))
        # rolls the segment holding the second round: committed segments
        # with something to clean
        produce(c, leader, b"".join(
            b"f%d:%s\n" % (i, b"x" * 20) for i in range(20)))
        wait_until("a full ISR", lambda: sorted(part(c)["isr"]) == [1, 2, 3],
                   15)
        wait_until("k=OLD on every broker", lambda: all(
            files_have(c, i, OLD) for i in (1, 2, 3)), 60)
        for f in followers:
            c.brokers[f].proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(0.3)
            produce(c, leader, b"z:absorbs-the-parked-fetch\n", acks="1")
            time.sleep(0.3)
            produce(c, leader, b"k:" + NEW + b"\n" + b"".join(
                b"b%d:filler%d\n" % (i, i) for i in range(30)), acks="1")
            for j in range(3):
                produce(c, leader, b"c%d:more%d\n" % (j, j), acks="1")
            # housekeeping runs every 200 ms: give the cleaner 3 s
            time.sleep(3)
            compacted = [ln for ln in c.brokers[leader].log_text(
            ).splitlines() if "event=log_compacted topic=ck" in ln]
            kept = files_have(c, leader, OLD)
            log(f"leader {leader}: k=OLD still in its files={kept}; "
                f"compaction passes: {[ln[ln.index('segments='):] for ln in compacted]}")
            c.brokers[leader].kill9()
        finally:
            for f in followers:
                c.brokers[f].proc.send_signal(signal.SIGCONT)
        p2 = wait_until("a follower leads", lambda: (
            lambda q: q if q["leader"] in followers else None)(
                part(c, but=(leader,))), 40)
        log(f"broker {p2['leader']} leads in epoch {p2['epoch']}")
        c.brokers[leader].start()
        wait_until(f"broker {leader} back in the ISR",
                   lambda: leader in part(c)["isr"], 40)
        for i in (1, 2, 3):
            log(f"broker {i}: k=OLD in files {files_have(c, i, OLD)}, "
                f"k=NEW {files_have(c, i, NEW)}")
        for f in followers:
            c.brokers[f].stop()
        wait_until(f"broker {leader} leads again",
                   lambda: part(c, but=tuple(followers))["leader"] == leader,
                   20)
        ks = k_values(c, leader)
        log(f"k read from broker {leader}: {ks}")
        assert ks and ks[-1].endswith(OLD.decode()), \
            f"the committed k={OLD.decode()} is gone: {ks}"
        assert kept, "the leader's cleaner removed k=OLD while k=NEW " \
                     "was not committed"
        assert any("records_removed=0 " not in ln for ln in compacted), \
            "the cleaner removed nothing from the committed part"


if __name__ == "__main__":
    run_main([test_compaction_keeps_what_is_not_superseded_by_a_commit])
