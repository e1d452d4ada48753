#!/usr/bin/env python3
"""fdatasync fails with EIO (tests/lib/faultfs.c, an LD_PRELOAD shim) for
one partition's directory on one broker, while `weir produce --acks all`
writes to that partition. A controller and three brokers on loopback;
topic `e` (1 partition, replication factor 3, min.insync.replicas 2) and
topic `o` (3 partitions) that the fault does not touch.

Follower: its log of e-0 goes offline (never retried in place), the
broker lists it in its heartbeats, it leaves the ISR, acknowledgements go
on with the other two, its other partitions stay in sync; once fsync
works again the log comes back (cut to what was fsynced), catches up and
rejoins the ISR. Leader: the same, and the leadership moves to an in-sync
replica within a few seconds, writes are acknowledged by the new leader,
and the old leader rejoins the ISR as a follower without leading first.
At the end every acknowledged record is read once at its offset, and
every broker's segment files of e-0 hold the same records with valid
CRCs."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import diskfault  # noqa: E402
from diskfault import (FaultCtl, LogWatch, Producer, end_to_end,  # noqa
                       partition_state, read_log_dir, read_partition,
                       wait_isr)
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC, OTHER = "e", "o"


class EioCluster(weirtest.Cluster):
    def __init__(self):
        super().__init__(args=diskfault.broker_args(
            "--replica-lag-time-max-ms", "2000",
            "--log-offline-retry-ms", "500"), prefix="weir-eio-")
        self.fctl = {}
        for i, b in self.brokers.items():
            self.fctl[i] = FaultCtl(os.path.join(self.tmp, f"faultfs-{i}"))
            b.env = self.fctl[i].env()

    def setup(self):
        for t, n in ((TOPIC, 1), (OTHER, 3)):
            weir(self.brokers[1], "topic", "create", t, "--partitions",
                 str(n), "--replication-factor", "3")
        return wait_until("every partition led with a full ISR",
                          self.settled, 20)

    def settled(self):
        st = self.state()
        for (t, _), p in st["partitions"].items():
            if t in (TOPIC, OTHER) and (p["leader"] < 0 or
                                        len(p["isr"]) != 3):
                return None
        return st if (TOPIC, 0) in st["partitions"] else None

    def bootstrap(self):
        return ",".join(b.addr for b in self.brokers.values())

    def part_dir(self, i, topic=TOPIC, part=0):
        return os.path.join(self.brokers[i].data_dir, f"{topic}-{part}")


def check_other_topic(c, broker):
    """The broker's other partitions were never taken offline: it stays in
    their ISRs and they take writes."""
    st = c.state()
    for p in range(3):
        isr = st["partitions"][(OTHER, p)]["isr"]
        assert broker in isr, f"{OTHER}-{p} lost broker {broker}: {isr}"
    weir(c.brokers[1], "produce", OTHER, "--acks", "all",
         input=b"x1\nx2\nx3\n")


def check_final(c, prod):
    """Every acknowledged record once at its offset; every broker holds the
    same records with valid CRCs."""
    acked = prod.acked()
    got, _ = read_partition(c, TOPIC, 0, prod.sent + 10)
    for val, off in acked.items():
        assert got.get(off) == val, f"{val} acknowledged at {off}, read " \
                                    f"{got.get(off)!r}"
    seen = {}
    for off, val in got.items():
        assert val not in seen, f"{val} at {seen[val]} and {off}"
        seen[val] = off
    assert sorted(got) == list(range(len(got))), "gaps in the log"
    for b in c.brokers.values():
        b.stop()
    files = {i: read_log_dir(c.part_dir(i)) for i in c.brokers}
    for i, (vals, bad) in files.items():
        assert not bad, f"broker {i}: batches failing their CRC: {bad}"
        assert vals == got, f"broker {i} holds {len(vals)} records, the " \
                            f"leader served {len(got)}"
    log(f"history: {prod.sent} written, {len(acked)} acknowledged "
        f"(errors: {prod.error_names()}), {len(got)} in the log on every "
        f"broker, CRCs valid")


def test_follower_fsync_eio():
    with EioCluster() as c:
        c.setup()
        st = partition_state(c, TOPIC, 0)
        leader = st["leader"]
        f = [r for r in st["replicas"] if r != leader][0]
        prod = Producer(c.bootstrap(), TOPIC, 0)
        prod.wait_acks(300)
        watch = LogWatch(c.brokers[f])
        c.fctl[f].set([("fsync", "EIO", c.part_dir(f) + "/")])
        t0 = time.time()
        line = watch.wait("follower log offline", r"event=log_offline dir=\S*"
                          rf"/{TOPIC}-0 ", 10)
        log(f"broker {f}: {line[line.find('event='):][:200]}")
        wait_isr(c, TOPIC, 0, f, False, 15)
        log(f"broker {f} left the ISR {time.time() - t0:.1f}s after the "
            f"fault")
        prod.wait_acks(200, timeout=20)  # the other two acknowledge
        check_other_topic(c, f)
        assert c.fctl[f].hits(), "the shim never failed an fsync"
        time.sleep(3)
        c.fctl[f].set([])
        t1 = time.time()
        wait_isr(c, TOPIC, 0, f, True, 30)
        log(f"broker {f} back in the ISR {time.time() - t1:.1f}s after "
            f"the fault ended")
        line = watch.wait("follower log back online",
                          rf"event=log_online dir=\S*/{TOPIC}-0 ", 1)
        log(f"broker {f}: {line[line.find('event='):][:200]}")
        # what the controller was told meanwhile: listed, then not
        line = watch.wait("offline replica in heartbeats",
                          rf"event=offline_replicas_reported .*count=1 "
                          rf"replicas={TOPIC}-0", 1)
        log(f"broker {f}: {line[line.find('event='):]}")
        watch.wait("offline replicas cleared",
                   r"event=offline_replicas_reported .*count=0", 5)
        prod.wait_acks(200, timeout=20)
        prod.stop()
        check_final(c, prod)


def test_leader_fsync_eio():
    with EioCluster() as c:
        c.setup()
        leader = partition_state(c, TOPIC, 0)["leader"]
        prod = Producer(c.bootstrap(), TOPIC, 0, timeout_ms=20000)
        prod.wait_acks(300)
        watch = LogWatch(c.brokers[leader])
        c.fctl[leader].set([("fsync", "EIO", c.part_dir(leader) + "/")])
        t0 = time.time()
        line = watch.wait("leader log offline", r"event=log_offline dir=\S*"
                          rf"/{TOPIC}-0 ", 10)
        log(f"broker {leader}: {line[line.find('event='):][:200]}")
        watch.wait("offline replica in heartbeats",
                   rf"event=offline_replicas_reported .*replicas={TOPIC}-0",
                   5)
        check_other_topic(c, leader)
        acked_before = len(prod.acks())
        time.sleep(1)
        # nothing is acknowledged from the offline log itself
        assert not watch.lines(r"event=log_offline_again"), "written again"
        if not end_to_end("leadership moves off the offline log"):
            c.fctl[leader].set([])
            line = watch.wait("the offline leader waits for the controller",
                              r"event=log_offline_wait .*leads it", 10)
            log(f"broker {leader}: {line[line.find('event='):]}")
            prod.stop()
            log(f"{acked_before} acknowledged before the fault; errors "
                f"seen: {prod.error_names()}")
            return
        st = wait_until("a new leader", lambda: (
            lambda s: s if s["leader"] not in (-1, leader) else None)(
                partition_state(c, TOPIC, 0)), 60)
        log(f"broker {st['leader']} leads {time.time() - t0:.1f}s after the "
            f"fault; isr={st['isr']}")
        assert leader not in st["isr"], st
        prod.wait_acks(200, timeout=20)
        c.fctl[leader].set([])
        watch.wait("old leader's log back online",
                   rf"event=log_online dir=\S*/{TOPIC}-0 ", 15)

        def rejoined():
            s = partition_state(c, TOPIC, 0)
            assert s["leader"] != leader, f"led again before in sync: {s}"
            return s if leader in s["isr"] else None
        wait_until("old leader back in the ISR", rejoined, 30, step=0.2)
        prod.wait_acks(200, timeout=20)
        prod.stop()
        check_final(c, prod)


if __name__ == "__main__":
    if not os.path.exists(diskfault.FAULTFS):
        log(f"SKIPPED: {diskfault.FAULTFS} is not built (set "
            f"WEIR_FAULTFS_LIB)")
        sys.exit(diskfault.SKIP)
    run_main([test_follower_fsync_eio, test_leader_fsync_eio])
