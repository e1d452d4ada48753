#!/usr/bin/env python3
"""A follower never takes its log offline for a reason that is not the
disk's. A controller and three brokers on loopback; broker 3 runs with
--max-message-bytes 4096, the others with the default. Topic `big` (1
partition, replication factor 3) is led by broker 1 or 2, which accepts
one batch of 20 records of 1,500 bytes (about 30 KB).

Broker 3 must copy the batch (max.message.bytes applies to producers, not
to replica appends: the leader accepted it), stay or come back in the ISR
within seconds, and trace no partition_failed and no log_offline.

Before the fix broker 3 refused the batch with MESSAGE_TOO_LARGE, failed
the partition and took the log offline as if its disk had failed; every
5 s the log came back (a full recovery), the same batch was refused
again, and broker 3 stayed out of the ISR for good."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import cluster_broker, log, run_main, wait_until, weir  # noqa

TOPIC = "big"


def part(c):
    return c.state()["partitions"][(TOPIC, 0)]


def test_oversized_batch_is_replicated_not_failed():
    c = weirtest.Cluster(prefix="weir-rrefuse-")
    c.brokers[3] = cluster_broker(c.ctl, 3, c.tmp,
                                  args=["--max-message-bytes", "4096"])
    with c:
        # broker 3 must follow: the topic's replicas start with 1 or 2
        for attempt in range(5):
            name = f"{TOPIC}{attempt}" if attempt else TOPIC
            weir(c.brokers[1], "topic", "create", name, "--partitions", "1",
                 "--replication-factor", "3")
            st = wait_until("a leader", lambda: (
                lambda q: q if q["leader"] > 0 else None)(
                    c.state()["partitions"][(name, 0)]), 15)
            if st["leader"] != 3:
                break
        assert st["leader"] != 3, "broker 3 led every topic created"
        topic, leader = name, st["leader"]
        log(f"topic {topic}: leader {leader}, follower 3 with "
            f"--max-message-bytes 4096")
        t0 = time.time()
        weir(c.brokers[leader], "produce", topic, "--batch-size", "65536",
             "--linger-ms", "50", "--acks", "1",
             input=b"".join(b"x" * 1500 + b"\n" for _ in range(20)))
        log("the leader took 20 records of 1,500 bytes in one batch")

        def copied():
            p = c.state()["partitions"][(topic, 0)]
            return 3 in p["isr"] and any(
                os.path.getsize(os.path.join(d, f)) > 30000
                for d in [os.path.join(c.brokers[3].data_dir, f"{topic}-0")]
                for f in os.listdir(d) if f.endswith(".log"))

        try:
            wait_until("broker 3 holding the batch, in the ISR", copied, 20)
        except AssertionError:
            t = c.brokers[3].log_text()
            log("broker 3: " + ", ".join(
                f"{t.count(p)} x {p}" for p in (
                    "event=partition_failed", "event=log_offline ",
                    "event=log_online")))
            raise
        log(f"broker 3 copied it and is in the ISR "
            f"{time.time() - t0:.1f} s after the produce")
        time.sleep(6)  # one log-offline-retry period: nothing may flap
        st = c.state()["partitions"][(topic, 0)]
        assert 3 in st["isr"], st
        t = c.brokers[3].log_text()
        for pat in ("event=partition_failed", "event=log_offline ",
                    "event=log_online", "event=follower_retry"):
            n = t.count(pat)
            assert n == 0, f"broker 3: {n} x {pat}"
        log(f"after 6 s more: isr={st['isr']}, no partition_failed, "
            f"log_offline, log_online or follower_retry on broker 3")


if __name__ == "__main__":
    run_main([test_oversized_batch_is_replicated_not_failed])
