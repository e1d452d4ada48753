#!/usr/bin/env python3
"""Issue 12 item 5 (follower half): a replica behind its leader's log start
catches up.

A follower is stopped; the leader (4 KiB segments, 16 KiB retention by
size) writes on until retention has deleted every offset the follower
holds. Started again, the follower's fetch is below the leader's log start
(OFFSET_OUT_OF_RANGE): it must drop its log, restart it empty at the
leader's log start, copy from there and rejoin the ISR, and then hold
exactly the leader's records (checked by making it the leader and reading
everything back). Before the fix it backed off for ever, out of the ISR.
Every wait is bounded."""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC = "behind"
N_FIRST = 100
N_MORE = 1500
VALUE = b"v" * 90


class Cluster(weirtest.Cluster):
    def __init__(self):
        super().__init__(args=["--retention-check-interval-ms", "200"],
                         prefix="weir-behind-")

    def part(self, but=()):
        return self.state(but)["partitions"][(TOPIC, 0)]

    def pdir(self, i):
        return os.path.join(self.brokers[i].data_dir, f"{TOPIC}-0")


def seg_bases(pdir):
    return sorted(int(os.path.basename(f)[:20])
                  for f in glob.glob(os.path.join(pdir, "*.log")))


def rec(i):
    return b"%d-" % i + VALUE


def test_follower_behind_leader_log_start_rejoins():
    with Cluster() as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
             "--replication-factor", "3", "--config", "segment.bytes=4096",
             "--config", "retention.bytes=16384")
        p = wait_until("partition led", lambda: (
            lambda q: q if q["leader"] > 0 else None)(c.part()), 15)
        leader = p["leader"]
        victim, other = sorted({1, 2, 3} - {leader})
        weir(c.brokers[leader], "produce", TOPIC,
             input=b"".join(rec(i) + b"\n" for i in range(N_FIRST)))
        wait_until("full ISR", lambda: sorted(c.part()["isr"]) == [1, 2, 3],
                   15)
        c.brokers[victim].stop()
        victim_end = N_FIRST  # all it holds (it was in the ISR)
        weir(c.brokers[leader], "produce", TOPIC,
             input=b"".join(rec(i) + b"\n"
                            for i in range(N_FIRST, N_FIRST + N_MORE)))
        start = wait_until(
            "leader's retention past the stopped follower's end",
            lambda: (lambda b: b[0] if b and b[0] > victim_end else None)(
                seg_bases(c.pdir(leader))), 20)
        log(f"leader {leader} starts at {start}; follower {victim} ends at "
            f"{victim_end}")
        c.brokers[victim].start()
        c.wait_alive({1, 2, 3}, timeout=60)
        wait_until(f"broker {victim} back in the ISR", lambda: victim in
                   c.part()["isr"], 30)
        text = c.brokers[victim].log_text()
        assert "event=restarted_at_leader_start" in text, text[-2000:]
        assert seg_bases(c.pdir(victim))[0] >= start
        # the follower now holds what the leader holds: make it the leader
        # (controlled shutdowns move the leadership to the ISR) and read
        c.brokers[other].stop()
        c.brokers[leader].stop()
        wait_until(f"broker {victim} leads", lambda: c.part(
            but=(leader, other))["leader"] == victim, 15)
        got = weir(c.brokers[victim], "consume", TOPIC, "--from-beginning",
                   "--timeout-ms", "3000", "--format", r"%o %v\n",
                   timeout=60).stdout.split(b"\n")
        rows = [ln.split(b" ", 1) for ln in got if ln]
        assert rows, "nothing read from the caught-up follower"
        first = int(rows[0][0])
        log(f"read {len(rows)} records from broker {victim}, from offset "
            f"{first}")
        assert [int(o) for o, _ in rows] == list(
            range(first, N_FIRST + N_MORE)), (rows[:2], rows[-2:])
        assert all(v == rec(int(o)) for o, v in rows), "wrong values"


if __name__ == "__main__":
    run_main([test_follower_behind_leader_log_start_rejoins])
