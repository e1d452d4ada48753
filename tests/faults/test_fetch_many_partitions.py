#!/usr/bin/env python3
"""A follower fetches every partition it follows from one leader, however
many: a fetch request carries at most 1,024 of them, and the next request
starts after the last one carried. A controller (preferred-leader
rebalance off) and three brokers on loopback; topic `many` with 1,100
partitions, replication factor 3.

Brokers 2 and 3 are stopped (SIGTERM: leaderships move, they leave every
ISR), so broker 1 leads all 1,100 partitions. Broker 2 starts again and
follows all of them from broker 1: it must be back in the ISR of every
one of them.

Before the fix every request started from the first partition, so the 76
past the first 1,024 were never fetched and broker 2 never rejoined their
ISR."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import cluster_broker, log, run_main, wait_until, weir  # noqa

TOPIC = "many"
PARTS = 1100


def parts(c, but=()):
    return {p: v for (t, p), v in c.state(but)["partitions"].items()
            if t == TOPIC}


def test_follower_of_1100_partitions_rejoins_every_isr():
    c = weirtest.Cluster(prefix="weir-many-")
    c.ctl = weirtest.Controller(data_dir=os.path.join(c.tmp, "controller"),
                                args=["--rebalance-interval-ms", "0",
                                      "--session-timeout-ms", "30000"])
    c.brokers = {i: cluster_broker(c.ctl, i, c.tmp) for i in (1, 2, 3)}
    with c:
        t0 = time.time()
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions",
             str(PARTS), "--replication-factor", "3", timeout=120)
        wait_until(f"{PARTS} partitions with a full ISR", lambda: (
            lambda ps: len(ps) == PARTS and all(
                len(v["isr"]) == 3 for v in ps.values()))(parts(c)), 90,
            step=1)
        log(f"{PARTS} partitions, full ISRs, {time.time() - t0:.1f} s")
        for i in (2, 3):
            c.brokers[i].stop(timeout=60)
        wait_until("broker 1 leading every partition", lambda: all(
            v["leader"] == 1 and v["isr"] == [1]
            for v in parts(c, but=(2, 3)).values()), 60, step=1)
        log("broker 1 leads all of them, ISR {1}")
        t1 = time.time()
        c.brokers[2].start(timeout=60)

        def missing():
            ps = parts(c, but=(3,))
            return sorted(p for p, v in ps.items() if 2 not in v["isr"])

        try:
            wait_until("broker 2 back in every ISR", lambda: not missing(),
                       60, step=1)
        except AssertionError:
            m = missing()
            log(f"broker 2 not in the ISR of {len(m)} partitions, e.g. "
                f"{m[:10]}")
            raise
        log(f"broker 2 back in the ISR of all {PARTS} partitions "
            f"{time.time() - t1:.1f} s after its start")


if __name__ == "__main__":
    run_main([test_follower_of_1100_partitions_rejoins_every_isr])
