#!/usr/bin/env python3
"""A leader's data directory fills up (a 32 MiB tmpfs the test mounts, and
a file written until ENOSPC) for 25 s while `weir produce --acks all`
writes to a partition it leads. A controller and three brokers on
loopback; topic `d` (3 partitions, replication factor 3,
min.insync.replicas 2) and topic `r` (3 partitions), whose partition led
by the same broker is read during the fault.

The broker's log of the partition goes offline at the first failed write
(ENOSPC) and its heartbeats list it; the broker stays alive and unfenced
and keeps serving its other partitions (reads need no space). Leadership
moves to an in-sync replica within a few seconds and writes are
acknowledged throughout (no gap longer than 10 s). Once space is free
again the log comes back, catches up as a follower and rejoins the ISR,
never leading before it has. Every acknowledged record is read back at its
offset, and every broker's files hold the same records with valid CRCs.

Needs root (mount); without it the test says SKIPPED and exits 77."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import diskfault  # noqa: E402
from diskfault import (LogWatch, Producer, end_to_end, partition_state,  # noqa
                       read_log_dir, read_partition)
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC, READ = "d", "r"
VICTIM = 1
FULL_S = 25


class FullCluster(weirtest.Cluster):
    def __init__(self):
        super().__init__(args=diskfault.broker_args(
            "--replica-lag-time-max-ms", "2000",
            "--log-offline-retry-ms", "500",
            "--log-min-free-bytes", "4194304"), prefix="weir-full-")
        self.mnt = self.brokers[VICTIM].data_dir
        diskfault.mount_tmpfs(self.mnt, "32m")

    def __exit__(self, *exc):
        for b in self.brokers.values():
            if b.proc and b.proc.poll() is None:
                b.kill9()
        diskfault.umount(self.mnt)
        super().__exit__(*exc)

    def setup(self):
        for t in (TOPIC, READ):
            weir(self.brokers[1], "topic", "create", t, "--partitions", "3",
                 "--replication-factor", "3")
        return wait_until("every partition led with a full ISR",
                          self.settled, 20)

    def settled(self):
        st = self.state()
        parts = {k: p for k, p in st["partitions"].items()
                 if k[0] in (TOPIC, READ)}
        if len(parts) != 6:
            return None
        for p in parts.values():
            if p["leader"] < 0 or len(p["isr"]) != 3:
                return None
        return st

    def led_by(self, topic, broker):
        st = self.state()
        for p in range(3):
            if st["partitions"][(topic, p)]["leader"] == broker:
                return p
        return None

    def bootstrap(self):
        return ",".join(b.addr for b in self.brokers.values())


def victim_partitions(c):
    """Placement spreads leaders, so the victim leads one partition of `d`
    and one of `r`."""
    return wait_until("the victim leading a partition of each topic", lambda: (
        lambda a, b: (a, b) if a is not None and b is not None else None)(
            c.led_by(TOPIC, VICTIM), c.led_by(READ, VICTIM)), 20)


def check_reads_from_victim(c, part, expect):
    """The victim still serves a partition it leads, whose log took no
    write during the fault."""
    got, _ = read_partition(c, READ, part, len(expect), timeout_ms=3000)
    assert got == expect, f"read {len(got)} of {len(expect)} from {READ}-" \
                          f"{part} on the full broker"


def check_final(c, part, prod):
    acked = prod.acked()
    got, _ = read_partition(c, TOPIC, part, prod.sent + 10)
    for val, off in acked.items():
        assert got.get(off) == val, f"{val} acknowledged at {off}, read " \
                                    f"{got.get(off)!r}"
    assert len(set(got.values())) == len(got), "a value twice in the log"
    assert sorted(got) == list(range(len(got))), "gaps in the log"
    for b in c.brokers.values():
        b.stop()
    for i, b in c.brokers.items():
        vals, bad = read_log_dir(os.path.join(b.data_dir, f"{TOPIC}-{part}"))
        assert not bad, f"broker {i}: batches failing their CRC: {bad}"
        assert vals == got, f"broker {i} holds {len(vals)} records, the " \
                            f"leader served {len(got)}"
    log(f"history: {prod.sent} written, {len(acked)} acknowledged "
        f"(errors: {prod.error_names()}), {len(got)} in the log on every "
        f"broker, CRCs valid")


def test_leader_disk_full():
    with FullCluster() as c:
        c.setup()
        part, rpart = victim_partitions(c)
        weir(c.brokers[1], "produce", READ, "--partition", str(rpart),
             input="".join(f"r{i}\n" for i in range(100)).encode())
        expect_r = {i: f"r{i}" for i in range(100)}
        prod = Producer(c.bootstrap(), TOPIC, part, rate=200,
                        timeout_ms=30000)
        prod.wait_acks(300)
        watch = LogWatch(c.brokers[VICTIM])
        filler = diskfault.fill(c.mnt)
        t0 = time.time()
        log(f"{c.mnt} full; broker {VICTIM} leads {TOPIC}-{part}")
        line = watch.wait("the full leader's log offline",
                          rf"event=log_offline dir=\S*/{TOPIC}-{part} ", 10)
        log(f"broker {VICTIM}: {line[line.find('event='):][:220]}")
        line = watch.wait("offline replica in heartbeats",
                          rf"event=offline_replicas_reported .*{TOPIC}-{part}",
                          5)
        log(f"broker {VICTIM}: {line[line.find('event='):]}")
        check_reads_from_victim(c, rpart, expect_r)
        st = c.state()
        assert st["brokers"][VICTIM][2], f"broker {VICTIM} not alive: {st}"
        if not end_to_end("leadership moves off the full broker"):
            time.sleep(max(0.0, FULL_S - (time.time() - t0)))
            os.unlink(filler)
            line = watch.wait("the offline leader waits for the controller",
                              r"event=log_offline_wait .*leads it", 10)
            log(f"broker {VICTIM}: {line[line.find('event='):]}")
            prod.stop(timeout=40)
            return
        st = wait_until("a new leader", lambda: (
            lambda s: s if s["leader"] not in (-1, VICTIM) else None)(
                partition_state(c, TOPIC, part)), 60)
        log(f"broker {st['leader']} leads {TOPIC}-{part} "
            f"{time.time() - t0:.1f}s after the disk filled")
        while time.time() - t0 < FULL_S:
            s = partition_state(c, TOPIC, part)
            assert s["leader"] != VICTIM and VICTIM not in s["isr"], s
            time.sleep(0.5)
        check_reads_from_victim(c, rpart, expect_r)
        acks = prod.acks(since=t0)
        gaps = [b - a for a, b in zip([t0] + acks, acks + [time.time()])]
        log(f"{len(acks)} acknowledgements while full; longest gap "
            f"{max(gaps):.1f}s")
        assert len(acks) > 100 and max(gaps) < 10, max(gaps)
        os.unlink(filler)
        t1 = time.time()
        watch.wait("log back online",
                   rf"event=log_online dir=\S*/{TOPIC}-{part} ", 10)

        def rejoined():
            s = partition_state(c, TOPIC, part)
            assert s["leader"] != VICTIM, f"led before it was in sync: {s}"
            return s if VICTIM in s["isr"] else None
        wait_until("the victim back in the ISR", rejoined, 30, step=0.2)
        log(f"broker {VICTIM} back in the ISR {time.time() - t1:.1f}s after "
            f"space returned")
        prod.wait_acks(100, timeout=20)
        prod.stop()
        check_final(c, part, prod)


if __name__ == "__main__":
    if not diskfault.is_root():
        log("SKIPPED: mounting the tmpfs needs root")
        sys.exit(diskfault.SKIP)
    run_main([test_leader_disk_full])
