#!/usr/bin/env python3
"""Eligible leader replicas with real processes (issue 12, item 3): a
replica that lacks committed records is never elected, and the replicas
that hold them are.

Setup: a weir-controller and three weir-brokers on loopback, topic "e"
with one partition, replication factor 3, min.insync.replicas 2, and
10,000 records written with acks=all (all acknowledged). Let A be the
leader and B, C the followers.

- test_isr_leader_dies_elr_member_leads ("A simply dies"): kill -STOP B
  and C past the session timeout (the controller fences them: the ISR
  shrinks to {A} and B, C stay eligible), kill -9 A, kill -CONT B and C.
  B or C must lead, and every acknowledged record must be read back at
  its offset. Before the ELR the ISR kept its last member A, and the
  partition stayed without a leader until A came back.
- test_wiped_broker_not_elected (the issue's scenario): the same, but A
  is restarted with an empty data dir before B and C resume. A must not
  lead with its empty log (which would make B and C truncate to 0).
- test_power_loss_all_three (review of issue 12, item 3): the same start
  (ISR {A}, B and C eligible), then kill -9 of A, B and C (every replica
  stops uncleanly, as in a power loss); B and C are started again first,
  then A on an empty data dir. Under the default flush policy (ack) an
  unclean stop loses nothing acknowledged, so B and C stay eligible: one
  of them must lead and every acknowledged record must be read. Before,
  each of B and C left the ELR on its unclean registration while another
  member remained, A's new disk took the last one out, and the partition
  had no leader for ever.
- test_unclean_election_at_restart: the same power loss with brokers
  running flush policy interval (an unclean stop may lose unflushed
  records), so B and C leave the ELR and with A on a new disk nobody is
  eligible: no leader. The controller is restarted with
  unclean-leader-election on: a leader must come at its first tick (not
  at the 300 s rebalance check), and never A, whose data is gone,
  wherever it is in replica order. Before, nothing was elected until the
  rebalance check, and that one took the first live replica, empty or
  not.

Every wait is bounded; only processes started here are signalled, by
PID."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import weirtest  # noqa: E402
from weirtest import CLI_BIN, log, run_main, wait_until, weir  # noqa: E402

TOPIC = "e"
RECORDS = 10000


class Cluster(weirtest.Cluster):
    def __init__(self, flush="ack"):
        super().__init__(args=["--replica-lag-time-max-ms", "2000",
                               "--flush-policy", flush],
                         prefix="weir-faults-elr-")

    def part(self, but=()):
        return self.state(but)["partitions"][(TOPIC, 0)]

    def bootstrap(self, but=()):
        return ",".join(b.addr for i, b in self.brokers.items()
                        if i not in but)


def produce_all(c):
    """RECORDS records v0..v9999 with acks=all; {offset: value} of the
    acknowledged ones (all of them, or the test fails)."""
    data = "".join(f"v{i}\n" for i in range(RECORDS)).encode()
    p = subprocess.run([CLI_BIN, "--bootstrap", c.bootstrap(), "produce",
                        TOPIC, "--acks", "all", "--report"], input=data,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    acked = {}
    for i, line in enumerate(p.stdout.decode().splitlines()):
        assert not line.startswith("ERROR"), f"v{i}: {line}"
        part, off = map(int, line.split())
        acked[off] = f"v{i}"
    assert len(acked) == RECORDS, f"{len(acked)} acknowledged"
    return acked


def read_all(broker):
    """{offset: value} read from offset 0 below the high watermark."""
    p = weir(broker, "consume", TOPIC, "--from-beginning", "--max-messages",
             str(RECORDS), "--timeout-ms", "5000", "--format", r"%o %v\n",
             timeout=120)
    got = {}
    for line in p.stdout.decode().splitlines():
        if line:
            off, val = line.split(" ", 1)
            got[int(off)] = val
    return got


def check_every_ack_read(c, acked, but):
    def ok():
        got = read_all(c.live(but))
        missing = [o for o in acked if got.get(o) != acked[o]]
        return got if not missing else None
    got = wait_until("every acknowledged record read back", ok, 60, step=1)
    log(f"read {len(got)} records; all {len(acked)} acknowledged ones at "
        f"their offsets")


def start_and_fill(c):
    weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
         "--replication-factor", "3", "--config", "min.insync.replicas=2")
    wait_until("the partition led with a full ISR", lambda: (
        lambda p: p if p["leader"] > 0 and len(p["isr"]) == 3 else None)(
            c.part()), 20)
    acked = produce_all(c)
    a = c.part()["leader"]
    b, cc = [i for i in (1, 2, 3) if i != a]
    log(f"{len(acked)} records acknowledged; A={a} leads, B={b}, C={cc}")
    return acked, a, b, cc


def stop_followers_past_session(c, a, b, cc):
    """SIGSTOP B and C until the controller has fenced them (ISR {A})."""
    for i in (b, cc):
        c.brokers[i].proc.send_signal(signal.SIGSTOP)

    def fenced():
        st = c.state(but=(b, cc))
        alive = {i for i, x in st["brokers"].items() if x[2]}
        p = st["partitions"][(TOPIC, 0)]
        return st if alive == {a} and p["isr"] == [a] else None
    st = wait_until("B and C fenced, ISR {A}", fenced, 20)
    log(f"B and C stopped and fenced: {st['partitions'][(TOPIC, 0)]}")


def controller_part(c):
    """The partition as the controller has it (no broker may be up)."""
    return weirtest.cluster_state(c.ctl)["partitions"][(TOPIC, 0)]


def wait_a_fenced(c, a):
    """After A's kill: the controller fenced it and nobody leads."""
    def ok():
        st = weirtest.cluster_state(c.ctl)
        p = st["partitions"][(TOPIC, 0)]
        return p if not st["brokers"][a][2] and p["leader"] == -1 else None
    p = wait_until("A fenced and the partition leaderless", ok, 20)
    log(f"A killed and fenced: {p}")


def resume(c, ids):
    for i in ids:
        c.brokers[i].proc.send_signal(signal.SIGCONT)


def wait_led_by(c, allowed, but, timeout=20):
    def ok():
        p = c.part(but)
        return p if p["leader"] in allowed else None
    try:
        return wait_until(f"a leader among {sorted(allowed)}", ok, timeout)
    except AssertionError:
        log(f"partition now: {c.part(but)}")
        raise


def test_isr_leader_dies_elr_member_leads():
    with Cluster() as c:
        acked, a, b, cc = start_and_fill(c)
        try:
            stop_followers_past_session(c, a, b, cc)
            c.brokers[a].kill9()
            t0 = time.time()
            wait_a_fenced(c, a)
        finally:
            resume(c, (b, cc))
        p = wait_led_by(c, {b, cc}, but=(a,))
        log(f"A killed, B and C resumed: broker {p['leader']} leads "
            f"{time.time() - t0:.1f}s after the kill: {p}")
        check_every_ack_read(c, acked, but=(a,))
        # the other of B, C catches up and rejoins: the ISR is back at
        # min ISR and nobody is left only eligible but A (dead)
        p = wait_until("B and C both in the ISR", lambda: (
            lambda q: q if sorted(q["isr"]) == sorted([b, cc]) else None)(
                c.part(but=(a,))), 30)
        assert p["elr"] == [], p


def directory_ids_sent(c):
    """Do these brokers send a directory id when they register?"""
    text = c.ctl.log_text()
    ids = re.findall(r"event=broker_registered broker=\d+ .*directory_id=(\S*)",
                     text)
    return bool(ids) and all(ids)


def test_wiped_broker_not_elected():
    with Cluster() as c:
        # a wiped data dir is told from a kept one by its directory id
        assert directory_ids_sent(c), "brokers registered without a " \
            "directory id:\n" + c.ctl.log_text()[-2000:]
        acked, a, b, cc = start_and_fill(c)
        try:
            stop_followers_past_session(c, a, b, cc)
            c.brokers[a].kill9()
            shutil.rmtree(c.brokers[a].data_dir)
            c.brokers[a].start()
            wait_until("A registered again with a new data dir", lambda:
                       "event=broker_data_dir_new broker=%d" % a
                       in c.ctl.log_text(), 20)
            time.sleep(3)  # A is unfenced and could be elected now
            p = c.part(but=(b, cc))
            log(f"A back with an empty log, B and C still stopped: {p}")
            assert p["leader"] != a, f"A leads with an empty log: {p}"
        finally:
            resume(c, (b, cc))
        p = wait_led_by(c, {b, cc}, but=())
        log(f"B and C resumed: broker {p['leader']} leads: {p}")
        check_every_ack_read(c, acked, but=())
        # A catches up from the new leader and rejoins the ISR
        wait_until("A back in the ISR", lambda: a in c.part()["isr"], 60)


def power_loss(c, acked, a, b, cc):
    """ISR {A}, B and C eligible; then kill -9 of all three (B and C while
    stopped): every replica stops uncleanly. B and C start again, then A
    on an empty data dir."""
    stop_followers_past_session(c, a, b, cc)
    for i in (a, b, cc):
        c.brokers[i].kill9()
    wait_until("every broker fenced", lambda: not any(
        x[2] for x in weirtest.cluster_state(c.ctl)["brokers"].values()), 20)
    log(f"all three killed: {controller_part(c)}")
    c.brokers[b].start()
    c.brokers[cc].start()
    wait_until("B and C registered again", lambda: all(
        "event=broker_registered broker=%d" % i in c.ctl.log_text()
        .split("event=broker_fenced broker=%d" % a)[-1] for i in (b, cc)), 20)
    shutil.rmtree(c.brokers[a].data_dir)
    c.brokers[a].start()
    wait_until("A registered again with a new data dir", lambda:
               "event=broker_data_dir_new broker=%d" % a
               in c.ctl.log_text(), 20)


def test_power_loss_all_three():
    with Cluster() as c:
        acked, a, b, cc = start_and_fill(c)
        power_loss(c, acked, a, b, cc)
        p = wait_led_by(c, {b, cc}, but=())
        log(f"B and C back uncleanly, A on a new disk: broker {p['leader']} "
            f"leads: {p}")
        check_every_ack_read(c, acked, but=())


def test_unclean_election_at_restart():
    with Cluster(flush="interval") as c:
        acked, a, b, cc = start_and_fill(c)
        power_loss(c, acked, a, b, cc)
        time.sleep(3)  # let any election that is coming happen
        p = controller_part(c)
        log(f"flush policy interval, after the power loss: {p}")
        assert p["leader"] == -1 and p["isr"] == [] and p["elr"] == [], p
        c.ctl.stop()
        c.ctl.args = ["--unclean-leader-election", "true"]
        t0 = time.time()
        c.ctl.start()
        p = wait_until("an unclean leader after the restart", lambda: (
            lambda q: q if q["leader"] != -1 else None)(controller_part(c)),
            15)
        log(f"controller restarted with unclean election on: broker "
            f"{p['leader']} leads {time.time() - t0:.1f}s later: {p}")
        assert p["leader"] in (b, cc), f"A (empty) was elected: {p}"


if __name__ == "__main__":
    run_main([test_isr_leader_dies_elr_member_leads,
              test_wiped_broker_not_elected,
              test_power_loss_all_three,
              test_unclean_election_at_restart])
