#!/usr/bin/env python3
"""Replication data plane with real processes: a weir-controller and three
weir-brokers on loopback. Followers fetch from their leader and hold
byte-identical logs (same offsets, same leader epochs); a leader stamps
its epoch into what it appends and checkpoints leader-epoch-checkpoint; a
restarted broker catches up, truncating what the new leader does not hold.
The leader runs the repl_leader core: acks=all waits for the replicated
high watermark and is refused below min.insync.replicas; a restarted
follower rejoins the ISR. Every wait is bounded in time."""
import glob
import os
import signal
import struct
import time

import weirtest
from weirtest import log, run_main, wait_until, weir

TOPIC = "r"


class Cluster(weirtest.Cluster):
    def __init__(self, args=()):
        super().__init__(args=args, prefix="weir-repl-")

    def part(self, but=()):
        return self.state(but)["partitions"][(TOPIC, 0)]

    def pdir(self, i):
        return os.path.join(self.brokers[i].data_dir, f"{TOPIC}-0")


def log_bytes(pdir):
    """All segment bytes of a partition, in offset order."""
    out = b""
    for f in sorted(glob.glob(os.path.join(pdir, "*.log"))):
        with open(f, "rb") as fh:
            out += fh.read()
    return out


def batches(data):
    """(base_offset, last_offset, leader_epoch) of each batch."""
    out, pos = [], 0
    while pos + 17 <= len(data):
        base, length, epoch = struct.unpack(">qii", data[pos:pos + 16])
        if length <= 0 or pos + 12 + length > len(data):
            break
        delta = struct.unpack(">i", data[pos + 23:pos + 27])[0]
        out.append((base, base + delta, epoch))
        pos += 12 + length
    return out


def wait_identical(c, ids, end, timeout=20):
    """Every broker in ids holds the same log bytes, ending at `end`."""
    def ok():
        logs = {i: log_bytes(c.pdir(i)) for i in ids}
        first = logs[min(ids)]
        bs = batches(first)
        if not bs or bs[-1][1] + 1 != end:
            return None
        return logs if all(v == first for v in logs.values()) else None
    return wait_until(f"brokers {sorted(ids)} hold identical logs to {end}",
                      ok, timeout)


def produce(c, n, tag, but=()):
    data = b"".join(b"%s-%d\n" % (tag, i) for i in range(n))
    weir(c.live(but), "produce", TOPIC, input=data)


def checkpoint(c, i):
    with open(os.path.join(c.pdir(i), "leader-epoch-checkpoint")) as fh:
        lines = fh.read().split("\n")
    assert lines[0] == "0", lines
    return [tuple(int(x) for x in ln.split()) for ln in
            lines[2:2 + int(lines[1])]]


def create(c):
    weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
         "--replication-factor", "3")
    return wait_until("partition led",
                      lambda: (lambda p: p if p["leader"] > 0 else None)(
                          c.part()), 60)


def test_followers_hold_identical_logs():
    with Cluster() as c:
        p = create(c)
        produce(c, 5000, b"a")
        logs = wait_identical(c, {1, 2, 3}, 5000)
        bs = batches(logs[1])
        offs = [b for b in bs]
        # dense offsets from 0, stamped with the leader's epoch
        assert offs[0][0] == 0
        for prev, cur in zip(offs, offs[1:]):
            assert cur[0] == prev[1] + 1, (prev, cur)
        assert {b[2] for b in bs} == {p["epoch"]}, (p, set(b[2] for b in bs))
        want = [(p["epoch"], 0)]
        for i in (1, 2, 3):
            # a follower writes it after the fsync that follows the append
            wait_until(f"broker {i} epoch checkpoint",
                       lambda: os.path.exists(os.path.join(
                           c.pdir(i), "leader-epoch-checkpoint")) and
                       checkpoint(c, i) == want, 60)


def test_failover_new_epoch_and_catch_up():
    with Cluster() as c:
        p = create(c)
        produce(c, 1000, b"a")
        wait_identical(c, {1, 2, 3}, 1000)
        # followers learn the high watermark from the answer to their next
        # fetch, parked for at most 500 ms when there is nothing new
        time.sleep(0.8)
        old = p["leader"]
        c.brokers[old].kill9()
        p2 = wait_until("new leader", lambda: (
            lambda q: q if q["leader"] not in (-1, old) else None)(
                c.part(but=(old,))), 15)
        assert p2["epoch"] > p["epoch"], (p, p2)
        # the new leader starts from the high watermark it had as a
        # follower: the 1000 records consumers could read stay readable
        start = [ln for ln in c.brokers[p2["leader"]].log_text().splitlines()
                 if "event=leader_core_start" in ln and
                 f"epoch={p2['epoch']} " in ln]
        assert start and "hw=1000 leo=1000" in start[-1], start
        produce(c, 500, b"b", but=(old,))
        rest = {1, 2, 3} - {old}
        logs = wait_identical(c, rest, 1500)
        epochs = [b[2] for b in batches(logs[p2["leader"]])]
        assert epochs[0] == p["epoch"] and epochs[-1] == p2["epoch"], epochs
        assert checkpoint(c, p2["leader"]) == [(p["epoch"], 0),
                                               (p2["epoch"], 1000)]
        for i in rest:
            wait_until(f"broker {i} epoch checkpoint",
                       lambda: checkpoint(c, i) == [(p["epoch"], 0),
                                                    (p2["epoch"], 1000)], 60)
        # the old leader comes back as a follower and catches up
        c.brokers[old].start()
        c.wait_alive({1, 2, 3})
        produce(c, 100, b"c")
        wait_identical(c, {1, 2, 3}, 1600, timeout=30)
        log("restarted broker caught up to 1600")


def test_follower_restart_catches_up():
    with Cluster() as c:
        p = create(c)
        produce(c, 500, b"a")
        wait_identical(c, {1, 2, 3}, 500)
        victim = [i for i in (1, 2, 3) if i != p["leader"]][0]
        c.brokers[victim].kill9()
        produce(c, 2000, b"b", but=(victim,))
        c.brokers[victim].start()
        c.wait_alive({1, 2, 3})
        wait_identical(c, {1, 2, 3}, 2500, timeout=30)


def test_diverging_follower_is_truncated():
    """A replica holding records its new leader lacks cuts them off."""
    with Cluster() as c:
        p = create(c)
        produce(c, 300, b"a")
        wait_identical(c, {1, 2, 3}, 300)
        old = p["leader"]
        others = sorted({1, 2, 3} - {old})
        # freeze both followers (well inside their 3 s session), write to
        # the leader alone, kill it, let the followers go on
        for i in others:
            c.brokers[i].proc.send_signal(signal.SIGSTOP)
        try:
            # their parked long polls (500 ms) are answered, empty, before
            # the write, so no record reaches a frozen follower's socket
            time.sleep(0.7)
            weir(c.brokers[old], "produce", TOPIC, "--acks", "1",
                 input=b"".join(b"x-%d\n" % i for i in range(50)))
            assert batches(log_bytes(c.pdir(old)))[-1][1] == 349
            c.brokers[old].kill9()
        finally:
            for i in others:
                c.brokers[i].proc.send_signal(signal.SIGCONT)
        p2 = wait_until("a follower leads", lambda: (
            lambda q: q if q["leader"] in others else None)(
                c.part(but=(old,))), 20)
        assert p2["epoch"] > p["epoch"], (p, p2)
        produce(c, 20, b"y", but=(old,))
        c.brokers[old].start()
        c.wait_alive({1, 2, 3})
        logs = wait_identical(c, {1, 2, 3}, 320, timeout=30)
        assert batches(logs[old])[-1][2] == p2["epoch"]
        assert "event=truncated" in c.brokers[old].log_text()


def report_lines(p):
    return [ln.split() for ln in p.stdout.decode().splitlines() if ln]


def test_acks_all_needs_min_isr():
    """RF 3, min ISR 2: acks=all is acknowledged with the ISR full; with
    two of three brokers killed nothing more is acknowledged."""
    with Cluster(args=["--replica-lag-time-max-ms", "2000"]) as c:
        p = create(c)
        leader = c.brokers[p["leader"]]
        out = weir(leader, "produce", TOPIC, "--acks", "all", "--report",
                   input=b"".join(b"a-%d\n" % i for i in range(200)))
        rows = report_lines(out)
        assert len(rows) == 200 and all(r[0] != "ERROR" for r in rows), rows
        assert sorted(int(r[1]) for r in rows) == list(range(200)), rows
        # consumers see everything acknowledged (below the HW)
        got = weir(leader, "consume", TOPIC, "--from-beginning",
                   "--max-messages", "200", "--timeout-ms", "30000")
        assert len(got.stdout.splitlines()) == 200, got.stdout[-200:]
        followers = [i for i in (1, 2, 3) if i != p["leader"]]
        for i in followers:
            c.brokers[i].kill9()
        time.sleep(0.5)
        out = weir(leader, "produce", TOPIC, "--acks", "all", "--report",
                   "--delivery-timeout-ms", "5000",
                   input=b"".join(b"z-%d\n" % i for i in range(5)),
                   check=False, timeout=60)
        rows = report_lines(out)
        log(f"acks=all with one broker left: exit {out.returncode} {rows}")
        assert out.returncode != 0 or any(r[0] == "ERROR" for r in rows), rows
        assert not any(r[0] != "ERROR" for r in rows), rows
        # appended on the leader but not replicated: not visible to
        # consumers (they read below the high watermark)
        got = weir(leader, "consume", TOPIC, "--from-beginning",
                   "--timeout-ms", "5000")
        assert got.stdout.splitlines() == [b"a-%d" % i for i in range(200)], \
            got.stdout[-200:]
        # once the ISR has shrunk below min ISR, refused up front
        wait_until("ISR shrunk to the leader", lambda: c.part(
            but=followers)["isr"] == [p["leader"]], 15)
        out = weir(leader, "produce", TOPIC, "--acks", "all", "--report",
                   "--delivery-timeout-ms", "3000", input=b"w\n",
                   check=False, timeout=60)
        rows = report_lines(out)
        assert rows and all(r[0] == "ERROR" for r in rows), rows
        assert "NOT_ENOUGH_REPLICAS" in out.stdout.decode() + \
            out.stderr.decode(), (out.stdout, out.stderr)


def test_follower_rejoins_isr():
    """kill -9 a follower, produce, restart it: it rejoins the ISR."""
    with Cluster(args=["--replica-lag-time-max-ms", "2000"]) as c:
        p = create(c)
        produce(c, 300, b"a")
        victim = [i for i in (1, 2, 3) if i != p["leader"]][0]
        c.brokers[victim].kill9()
        wait_until("victim out of the ISR", lambda: victim not in c.part(
            but=(victim,))["isr"], 15)
        out = weir(c.brokers[p["leader"]], "produce", TOPIC, "--acks",
                   "all", "--report",
                   input=b"".join(b"b-%d\n" % i for i in range(1000)))
        assert all(r[0] != "ERROR" for r in report_lines(out))
        c.brokers[victim].start()
        c.wait_alive({1, 2, 3})
        wait_until("victim back in the ISR", lambda: victim in c.part()[
            "isr"], 20)
        wait_identical(c, {1, 2, 3}, 1300, timeout=30)


def test_deleted_and_recreated_topic_starts_empty():
    """A topic deleted and created again under the same name (new topic
    id) starts empty on every replica: no record of the old one comes
    back through a follower, and offsets start at 0."""
    with Cluster() as c:
        for rnd in range(3):
            create(c)
            produce(c, 2000, b"old%d" % rnd)
            # delete and create while a follower is down: it learns both
            # from one metadata batch when it comes back and must still
            # drop the old logs
            gone = [i for i in (1, 2, 3) if i != c.part()["leader"]][0]
            c.brokers[gone].kill9()
            weir(c.live(but=(gone,)), "topic", "delete", TOPIC)
            weir(c.live(but=(gone,)), "topic", "create", TOPIC,
                 "--partitions", "1", "--replication-factor", "3")
            c.brokers[gone].start()
            c.wait_alive({1, 2, 3}, timeout=20)
            # (if it was fenced before the create, the topic has 2 replicas)
            part = wait_until("partition led with a full ISR", lambda: (
                lambda p: p if p["leader"] > 0 and
                sorted(p["isr"]) == sorted(p["replicas"]) else None)(
                    c.part()), 30)
            produce(c, 10, b"new%d" % rnd)
            logs = wait_identical(c, set(part["replicas"]), 10, timeout=30)
            got = weir(c.brokers[2], "consume", TOPIC, "--from-beginning",
                       "--max-messages", "20", "--timeout-ms", "5000",
                       "--format", r"%o %v\n").stdout.decode().split("\n")
            got = [ln for ln in got if ln]
            assert got == ["%d new%d-%d" % (i, rnd, i) for i in range(10)], \
                got
            assert all(len(batches(v)) >= 1 for v in logs.values())
            weir(c.brokers[1], "topic", "delete", TOPIC)
            wait_until("topic gone", lambda: (TOPIC, 0) not in
                       c.state()["partitions"], 60)


if __name__ == "__main__":
    run_main([
        test_acks_all_needs_min_isr,
        test_follower_rejoins_isr,
        test_followers_hold_identical_logs,
        test_failover_new_epoch_and_catch_up,
        test_follower_restart_catches_up,
        test_diverging_follower_is_truncated,
        test_deleted_and_recreated_topic_starts_empty,
    ])
