#!/usr/bin/env python3
"""One byte flipped in a closed segment of a follower, then a clean
restart of that follower (which skips the recovery scan). A controller and
three brokers on loopback; topic `c` (1 partition, replication factor 3,
min.insync.replicas 2, 16 KiB segments), 3,000 records written with
acks=all before the fault.

Scrub: the background scrub finds the bad batch (the trace names the
file, byte position and offset), the replica's log goes offline as
corrupt and is listed in heartbeats, it leaves the ISR, cuts its log at
the first bad offset, re-fetches from the leader and rejoins the ISR,
while writes go on. Afterwards every record is read back, and every
broker's segment files hold all of them with valid CRCs.

Lazy: with the scrub off, the corrupt replica rejoins the ISR unnoticed;
the leader stops (controlled shutdown), the corrupt replica is elected,
and a consumer reads from the beginning. The read that would serve the
bad batch serves nothing from it and takes the log offline as corrupt:
the consumer never receives the bad batch (its own CRC check never
fires, and what it read is a gap-free prefix). Then leadership moves to
the healthy replica, the consumer reads everything, and the corrupt one
repairs itself as in the scrub case."""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import diskfault  # noqa: E402
from diskfault import (LogWatch, Producer, end_to_end, partition_state,  # noqa
                       read_log_dir, read_partition, wait_isr)
import weirtest  # noqa: E402
from weirtest import CLI_BIN, log, run_main, wait_until, weir  # noqa: E402

TOPIC = "c"
N = 3000


class CorruptCluster(weirtest.Cluster):
    def __init__(self, scrub):
        super().__init__(args=diskfault.broker_args(
            "--replica-lag-time-max-ms", "2000",
            "--log-offline-retry-ms", "500",
            "--scrub-bytes-per-sec", str(scrub)), prefix="weir-corrupt-")

    def setup(self):
        weir(self.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
             "--replication-factor", "3", "--config", "segment.bytes=16384")
        return wait_until("the partition led with a full ISR", lambda: (
            lambda p: p if p["leader"] > 0 and len(p["isr"]) == 3 else None)(
                partition_state(self, TOPIC, 0)), 20)

    def bootstrap(self):
        return ",".join(b.addr for b in self.brokers.values())

    def part_dir(self, i):
        return os.path.join(self.brokers[i].data_dir, f"{TOPIC}-0")


def write_all(c):
    prod = Producer(c.bootstrap(), TOPIC, 0, rate=1000, chunk=20)
    wait_until(f"{N} records acknowledged",
               lambda: len(prod.acks()) >= N, 60)
    prod.stop()
    acked = prod.acked()
    assert len(acked) >= N, f"only {len(acked)} acknowledged"
    return {off: val for val, off in acked.items()}


def corrupt_follower(c, f):
    """Stop f cleanly, flip a byte in its second segment, start it."""
    c.brokers[f].stop()
    path, pos, base = diskfault.flip_byte_in_closed_segment(c.part_dir(f),
                                                            which=1)
    log(f"flipped a byte in {path} in the batch at {pos} (offset {base})")
    watch = LogWatch(c.brokers[f])
    c.brokers[f].start()
    return watch, base


def check_everywhere(c, expect):
    got, _ = read_partition(c, TOPIC, 0, len(expect) + 10)
    missing = [o for o in expect if got.get(o) != expect[o]]
    assert not missing, f"{len(missing)} records not read back, first " \
                        f"{missing[:3]}"
    for b in c.brokers.values():
        if b.proc and b.proc.poll() is None:
            b.stop()
    for i in c.brokers:
        vals, bad = read_log_dir(c.part_dir(i))
        assert not bad, f"broker {i}: batches failing their CRC: {bad}"
        assert all(vals.get(o) == v for o, v in expect.items()), \
            f"broker {i} lacks records ({len(vals)} of {len(expect)})"
    log(f"all {len(expect)} records read back; every broker's files hold "
        f"them with valid CRCs")


def wait_repaired(c, f, watch, base):
    line = watch.wait("the corrupt log cut", r"event=corrupt_cut ", 20)
    log(f"broker {f}: {line[line.find('event='):]}")
    m = re.search(r"offset=(\d+)", line)
    assert m and int(m.group(1)) <= base, line
    watch.wait("the corrupt log back online",
               rf"event=log_online dir=\S*/{TOPIC}-0 cause=corrupt", 10)
    wait_isr(c, TOPIC, 0, f, True, 30)
    log(f"broker {f} re-fetched the cut records and rejoined the ISR")


def test_scrub_finds_corrupt_follower():
    with CorruptCluster(scrub=16 << 20) as c:
        leader = c.setup()["leader"]
        expect = write_all(c)
        f = [b for b in (1, 2, 3) if b != leader][0]
        watch, base = corrupt_follower(c, f)
        t0 = time.time()
        # writes go on meanwhile (acknowledged by the two others)
        prod = Producer(c.bootstrap(), TOPIC, 0, rate=100, prefix="w")
        line = watch.wait("the corruption found",
                          rf"event=log_corrupt file=\S*/{TOPIC}-0/", 15)
        log(f"broker {f} ({time.time() - t0:.1f}s after its start): "
            f"{line[line.find('event='):]}")
        assert f"offset={base} " in line, (base, line)
        watch.wait("the corrupt log offline",
                   rf"event=log_offline dir=\S*/{TOPIC}-0 cause=corrupt", 5)
        watch.wait("offline replica in heartbeats",
                   rf"event=offline_replicas_reported .*replicas={TOPIC}-0",
                   5)
        wait_repaired(c, f, watch, base)
        prod.wait_acks(100)
        prod.stop()
        expect.update({o: v for v, o in prod.acked().items()})
        check_everywhere(c, expect)


def test_lazy_check_never_serves_bad_batch():
    with CorruptCluster(scrub=0) as c:
        st = c.setup()
        expect = write_all(c)
        leader = st["leader"]
        f = [r for r in st["replicas"] if r != leader][0]  # next in order
        watch, base = corrupt_follower(c, f)
        wait_isr(c, TOPIC, 0, f, True, 30)
        assert not watch.lines("event=log_corrupt"), "found without a read"
        log(f"broker {f} rejoined the ISR with the bad batch unnoticed; "
            f"stopping leader {leader}")
        c.brokers[leader].stop()
        wait_until(f"broker {f} leading", lambda: partition_state(
            c, TOPIC, 0, but=(leader,))["leader"] == f, 20)
        cons = subprocess.run(
            [CLI_BIN, "--bootstrap", c.brokers[f].addr, "consume", TOPIC,
             "--partition", "0", "--from-beginning", "--max-messages",
             str(len(expect)), "--timeout-ms", "6000", "--format",
             r"%o %v\n"], capture_output=True, timeout=120)
        out = cons.stdout.decode().splitlines()
        err = cons.stderr.decode()
        got = {int(o): v for o, v in (ln.split(" ", 1) for ln in out if ln)}
        log(f"consumer read {len(got)} records; stderr: {err[-300:]!r}")
        # the client checks every batch's CRC: a bad one it was sent shows
        # as "c/0: batch at offset N: CRC-32C ..., stored ..."
        assert not re.search(rf"{TOPIC}/0: batch at offset \d+: CRC", err), \
            f"the consumer was sent the bad batch: {err}"
        assert sorted(got) == list(range(len(got))), "not a prefix"
        assert all(got[o] == expect[o] for o in got), "wrong values read"
        line = watch.wait("the corruption found by the read",
                          rf"event=log_corrupt file=\S*/{TOPIC}-0/", 10)
        log(f"broker {f}: {line[line.find('event='):]}")
        if not end_to_end("leadership moves off the corrupt replica"):
            return
        got, _ = read_partition(c, TOPIC, 0, len(expect), but=(leader,))
        assert len(got) >= len(expect), f"read {len(got)} of {len(expect)}"
        wait_repaired(c, f, watch, base)
        c.brokers[leader].start()
        wait_isr(c, TOPIC, 0, leader, True, 30)
        check_everywhere(c, expect)


if __name__ == "__main__":
    run_main([test_scrub_finds_corrupt_follower,
              test_lazy_check_never_serves_bad_batch])
