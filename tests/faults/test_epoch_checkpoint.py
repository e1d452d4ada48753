#!/usr/bin/env python3
"""Issue 12 items 14 and 2: the leader-epoch checkpoint and the epochs a
broker may lead.

- A follower killed between flushing records and writing its epoch
  checkpoint (here: the file removed while it is down) with a diverging
  tail still gets its divergence check: its epoch cache is rebuilt from
  the batch headers on load, and it truncates the tail the new leader does
  not hold instead of appending after it.
- A broker that cannot write the checkpoint of its new leader epoch does
  not lead that partition: LEADER_NOT_AVAILABLE, no acks=all ack.
- A broker made leader of an epoch already in its checkpoint (the restart
  race with registration, made deterministic by editing the checkpoint
  while it is down) does not lead without the replication core: produce,
  fetch and ListOffsets answer LEADER_NOT_AVAILABLE and nothing is
  acknowledged.
Real processes on loopback; every wait bounded."""
import glob
import os
import shutil
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (FETCH, LIST_OFFSETS, connect, log, pb_int,  # noqa
                      pb_msg, pb_parse, read_frame, request, run_main,
                      wait_until, weir)

TOPIC = "ep"
CHECKPOINT = "leader-epoch-checkpoint"


class Cluster(weirtest.Cluster):
    def __init__(self, ctl_args=()):
        super().__init__(prefix="weir-epochs-")
        self.ctl.args = list(ctl_args)

    def part(self, but=()):
        return self.state(but)["partitions"][(TOPIC, 0)]

    def pdir(self, i):
        return os.path.join(self.brokers[i].data_dir, f"{TOPIC}-0")


def log_bytes(pdir):
    out = b""
    for f in sorted(glob.glob(os.path.join(pdir, "*.log"))):
        with open(f, "rb") as fh:
            out += fh.read()
    return out


def batches(data):
    """(base_offset, last_offset, leader_epoch) of each batch."""
    out, pos = [], 0
    while pos + 27 <= len(data):
        base, length, epoch = struct.unpack(">qii", data[pos:pos + 16])
        if length <= 0 or pos + 12 + length > len(data):
            break
        delta = struct.unpack(">i", data[pos + 23:pos + 27])[0]
        out.append((base, base + delta, epoch))
        pos += 12 + length
    return out


def wait_identical(c, ids, end, timeout):
    def ok():
        logs = {i: log_bytes(c.pdir(i)) for i in ids}
        first = logs[min(ids)]
        bs = batches(first)
        if not bs or bs[-1][1] + 1 != end:
            return None
        return logs if all(v == first for v in logs.values()) else None
    try:
        return wait_until(f"brokers {sorted(ids)} hold identical logs to "
                          f"{end}", ok, timeout)
    except AssertionError:
        for i in sorted(ids):
            bs = batches(log_bytes(c.pdir(i)))
            log(f"broker {i}: {len(bs)} batches, last {bs[-1:]}, epochs "
                f"{sorted(set(b[2] for b in bs))}")
        raise


def produce(broker, lines, *args, check=True):
    return weir(broker, "produce", TOPIC, "--report", *args,
                input=b"".join(x + b"\n" for x in lines), check=check,
                timeout=90)


def report_rows(p):
    return [ln.split() for ln in p.stdout.decode().splitlines() if ln]


def create(c, *config):
    args = ["topic", "create", TOPIC, "--partitions", "1",
            "--replication-factor", "3"]
    for kv in config:
        args += ["--config", kv]
    weir(c.brokers[1], *args)
    return wait_until("partition led", lambda: (
        lambda p: p if p["leader"] > 0 else None)(c.part()), 15)


def test_lost_checkpoint_diverging_tail_is_truncated():
    """Unclean election makes the diverging tail; the old leader comes back
    without its checkpoint."""
    with Cluster(ctl_args=["--unclean-leader-election", "true"]) as c:
        p = create(c)
        a = p["leader"]
        others = sorted({1, 2, 3} - {a})
        produce(c.brokers[a], [b"a-%d" % i for i in range(200)])
        wait_identical(c, {1, 2, 3}, 200, 20)
        for i in others:
            c.brokers[i].stop()  # controlled: they leave the ISR
        wait_until("ISR is the leader alone", lambda: c.part(
            but=others)["isr"] == [a], 60)
        out = produce(c.brokers[a], [b"x-%d" % i for i in range(50)],
                      "--acks", "1")
        assert all(r[0] != "ERROR" for r in report_rows(out)), out.stdout
        assert batches(log_bytes(c.pdir(a)))[-1][1] == 249
        c.brokers[a].kill9()
        for i in others:
            c.brokers[i].start()
        p2 = wait_until("an unclean leader", lambda: (
            lambda q: q if q["leader"] in others else None)(
                c.part(but=(a,))), 20)
        assert p2["epoch"] > p["epoch"], (p, p2)
        b = p2["leader"]
        produce(c.brokers[b], [b"y-%d" % i for i in range(80)])
        wait_identical(c, set(others), 280, 20)
        # the tail [200, 250) of epoch p on a differs from b's [200, 280)
        os.remove(os.path.join(c.pdir(a), CHECKPOINT))
        c.brokers[a].start()
        c.wait_alive({1, 2, 3}, timeout=60)
        logs = wait_identical(c, {1, 2, 3}, 280, 30)
        epochs = [x[2] for x in batches(logs[a])]
        assert epochs[-1] == p2["epoch"], epochs
        text = c.brokers[a].log_text()
        assert "event=epoch_cache_rebuilt" in text
        assert "event=truncated" in text and "to=200" in text


def isolate_leader(c):
    """Topic led by one broker X with ISR {X}, X stopped, the two others
    running (neither in the ISR nor the ELR: X is elected again when it
    returns). min.insync.replicas is 1, so the others leave the ISR without
    joining the ELR (with 2, the second one stopped would stay eligible and
    lead). Returns (X, the epoch X will get, X's log end)."""
    p = create(c, "min.insync.replicas=1")
    x = p["leader"]
    others = sorted({1, 2, 3} - {x})
    produce(c.brokers[x], [b"a-%d" % i for i in range(50)])
    wait_identical(c, {1, 2, 3}, 50, 20)
    for i in others:
        c.brokers[i].stop()
    wait_until("ISR is the leader alone", lambda: c.part(
        but=others)["isr"] == [x], 60)
    c.brokers[x].stop()
    for i in others:
        c.brokers[i].start()
    # x is the only replica holding every committed record: it stays the
    # last ISR member or, with eligible leader replicas, the ELR's only one
    q = wait_until("leaderless, only the old leader eligible", lambda: (
        lambda q: q if q["leader"] == -1 and
        q["isr"] + q.get("elr", []) == [x] else None)(
            c.part(but=(x,))), 15)
    end = batches(log_bytes(c.pdir(x)))[-1][1] + 1
    return x, q["epoch"] + 1, end


LEADER_NOT_AVAILABLE = 19


def raw_answers(broker, follower, epoch, end):
    """One consumer fetch from 0, one follower fetch (as broker `follower`
    at `end` in `epoch`) and one ListOffsets latest, straight on the wire:
    {kind: (error_code, high_watermark or offset, payload bytes)}."""
    s = connect(broker)
    out = {}
    try:
        part = pb_msg((1, TOPIC), (2, 0), (3, 0), (4, 1 << 20), (5, -1))
        body = pb_msg((1, 0), (2, 0), (4, [part]), (5, -1))
        s.sendall(request(1, FETCH, body))
        env, data = read_frame(s)
        res = pb_parse(pb_parse(env[FETCH][0])[1][0])
        out["fetch"] = (pb_int(res, 3), pb_int(res, 5), len(data))
        part = pb_msg((1, TOPIC), (2, 0), (3, end), (4, 1 << 20),
                      (5, epoch), (6, epoch - 1))
        body = pb_msg((1, 0), (2, 0), (4, [part]), (5, follower))
        s.sendall(request(2, FETCH, body))
        env, data = read_frame(s)
        res = pb_parse(pb_parse(env[FETCH][0])[1][0])
        out["follower_fetch"] = (pb_int(res, 3), pb_int(res, 5), len(data))
        body = pb_msg((1, [pb_msg((1, TOPIC), (2, 0), (3, -1))]))
        s.sendall(request(3, LIST_OFFSETS, body))
        env, _ = read_frame(s)
        res = pb_parse(pb_parse(env[LIST_OFFSETS][0])[1][0])
        out["list_offsets"] = (pb_int(res, 3), pb_int(res, 4, -1), 0)
    finally:
        s.close()
    return out


def expect_refused(c, x, epoch, end):
    """x leads `epoch` but must not serve: nothing acknowledged, no read,
    no latest offset."""
    p = wait_until("x leads again", lambda: (
        lambda q: q if q["leader"] == x else None)(c.part()), 20)
    assert p["epoch"] == epoch, (p, epoch)
    out = produce(c.brokers[x], [b"z-%d" % i for i in range(5)], "--acks",
                  "all", "--delivery-timeout-ms", "3000", check=False)
    rows = report_rows(out)
    log(f"acks=all produce to broker {x}: exit {out.returncode} {rows}")
    assert rows and all(r[0] == "ERROR" for r in rows), rows
    text = out.stdout.decode() + out.stderr.decode()
    assert "LEADER_NOT_AVAILABLE" in text, text
    follower = min({1, 2, 3} - {x})
    got = raw_answers(c.brokers[x], follower, epoch, end)
    log(f"broker {x} answers: {got}")
    assert got["fetch"][0] == LEADER_NOT_AVAILABLE, got
    assert got["fetch"][2] == 0, got  # no record read
    assert got["follower_fetch"][0] == LEADER_NOT_AVAILABLE, got
    assert got["list_offsets"][0] == LEADER_NOT_AVAILABLE, got
    # nothing was appended
    assert batches(log_bytes(c.pdir(x)))[-1][1] + 1 == end
    assert "event=partition_failed" in c.brokers[x].log_text()


def test_failed_checkpoint_write_means_no_leadership():
    with Cluster() as c:
        x, epoch, end = isolate_leader(c)
        # the atomic writer opens leader-epoch-checkpoint.tmp: make that a
        # directory, so the write fails (root ignores permission bits)
        os.mkdir(os.path.join(c.pdir(x), CHECKPOINT + ".tmp"))
        c.brokers[x].start()
        expect_refused(c, x, epoch, end)
        assert "writing the leader-epoch checkpoint" in \
            c.brokers[x].log_text()


def test_epoch_already_in_cache_is_not_led():
    with Cluster() as c:
        x, epoch, end = isolate_leader(c)
        path = os.path.join(c.pdir(x), CHECKPOINT)
        with open(path) as f:
            lines = f.read().split("\n")
        entries = [ln for ln in lines[2:2 + int(lines[1])]]
        # the epoch the controller will give x next, as if x had already
        # been given it (and written records of it it may have lost)
        entries.append(f"{epoch} {end}")
        with open(path, "w") as f:
            f.write("0\n%d\n%s\n" % (len(entries), "\n".join(entries)))
        c.brokers[x].start()
        expect_refused(c, x, epoch, end)
        assert "is not newer than" in c.brokers[x].log_text()


if __name__ == "__main__":
    run_main([
        test_lost_checkpoint_diverging_tail_is_truncated,
        test_failed_checkpoint_write_means_no_leadership,
        test_epoch_already_in_cache_is_not_led,
    ])
