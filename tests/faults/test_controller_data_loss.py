#!/usr/bin/env python3
"""A controller cannot destroy data it does not know about (issue 12, item 1).

Three brokers hold N acknowledged records of an RF 3 topic and a consumer
group's committed offsets in __consumer_offsets. Then the controller comes
back with the wrong metadata:

- test_controller_on_an_empty_data_dir: its data dir is lost and it starts
  on an empty one with auto-format on, so it is a NEW cluster (another
  cluster id) that knows no topic;
- test_controller_restored_from_an_older_copy: its data dir is replaced by a
  copy taken before the topic existed: the same cluster id, an older
  history.

Each broker must refuse that metadata (cluster_id_mismatch /
metadata_history_behind in its log), delete nothing (no
partition_logs_deleted) and keep serving what it has; once the right data
dir is back, every record and the committed offsets are read again. Before
this guarantee, every broker deleted every topic (__consumer_offsets
included) within a second.

- test_older_copy_that_writes_past_the_brokers: the older copy runs long
  enough to write records of its own (it fences the brokers it does not
  hear from), so its log grows past the offset the brokers applied. Its
  history differs (the chain value at the brokers' offset), so every
  broker keeps refusing it (metadata_history_diverged), never registers
  with it and forwards it nothing (a topic created through a broker
  meanwhile is refused, not created in the old history); with the right
  data dir back they accept it again and every record is read. Before,
  the brokers took the old history about 3 s after refusing it,
  registered with it, and then refused the right controller.
Real processes, real kill -9; every wait is bounded; only processes
started here are stopped, by PID."""
import os
import shutil
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (Cluster, Controller, cluster_state,  # noqa: E402
                      log, run_main, wait_until, weir)

N = 5000
TOPIC = "acked"
GROUP = "g-acked"
CONSUMED = 3000  # the group commits after this many records


def produce(c):
    lines = "".join(f"v{i}\n" for i in range(N)).encode()
    out = weir(c.brokers[1], "produce", TOPIC, "--acks", "all", "--report",
               input=lines, timeout=120).stdout.decode().splitlines()
    ok = [ln for ln in out if not ln.startswith("ERROR")]
    assert len(ok) == N, f"{len(ok)} of {N} acknowledged: {out[-3:]}"


def read_all(c, but=()):
    """Every value of the topic, from the beginning, through any broker."""
    p = weir(c.live(but), "consume", TOPIC, "--from-beginning",
             "--timeout-ms", "3000", timeout=60, check=False)
    return set(p.stdout.decode().split())


def committed(c):
    """{partition: committed offset} of GROUP, or None while unknown."""
    p = weir(c.live(), "group", "describe", GROUP, timeout=30, check=False)
    if p.returncode != 0:
        return None
    out = {}
    for line in p.stdout.decode().splitlines():
        w = line.split()
        if len(w) >= 3 and w[0] == TOPIC and w[1].isdigit():
            out[int(w[1])] = w[2]
    return out or None


def setup(c):
    """The topic with N acknowledged records and a committed group."""
    weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "3",
         "--replication-factor", "3")
    wait_until("topic led everywhere", lambda: len(
        [p for k, p in c.state()["partitions"].items()
         if k[0] == TOPIC and p["leader"] > 0 and len(p["isr"]) == 3]) == 3,
        15)
    produce(c)
    got = weir(c.brokers[2], "consume", TOPIC, "--group", GROUP,
               "--from-beginning", "--max-messages", str(CONSUMED),
               "--timeout-ms", "5000", timeout=60).stdout.split()
    assert len(got) == CONSUMED, len(got)
    before = wait_until("group offsets committed", lambda: committed(c), 20)
    log(f"{N} records acknowledged; committed offsets {before}")
    assert sum(int(v) for v in before.values()) == CONSUMED, before
    time.sleep(1.5)  # brokers store their applied metadata offset (1/s)
    return before


def snapshot_dir(ctl, dst):
    """A copy of the live controller's data dir (paused while copied)."""
    os.kill(ctl.proc.pid, signal.SIGSTOP)
    try:
        shutil.copytree(ctl.data_dir, dst)
    finally:
        os.kill(ctl.proc.pid, signal.SIGCONT)
    os.unlink(os.path.join(dst, ".lock"))


def deletions(c):
    return sum(b.log_text().count("event=partition_logs_deleted")
               for b in c.brokers.values())


def poll_best(fn, good, timeout):
    """fn() until good(result) or timeout; the last result either way."""
    deadline = time.time() + timeout
    while True:
        r = fn()
        if good(r) or time.time() > deadline:
            return r
        time.sleep(0.5)


def under_wrong_controller(c, wrong, marker):
    """Run `wrong` (a Controller on the right port) until every broker
    refused it (or, on a build without the guarantee, deleted something);
    returns what was read meanwhile and the brokers that logged marker."""
    marks = {i: b.log_text().count(marker) for i, b in c.brokers.items()}
    wrong.start()
    log(f"wrong controller up ({wrong.data_dir})")

    def refused():
        return {i for i, b in c.brokers.items()
                if b.log_text().count(marker) > marks[i]}
    poll_best(refused, lambda r: len(r) == 3 or deletions(c) > 0, 20)
    time.sleep(2)  # let any deletion that is coming happen
    during = read_all(c)
    who = refused()
    log(f"during the fault: read {len(during)} of {N} records; "
        f"{deletions(c)} partition_logs_deleted lines; brokers logging "
        f"{marker}: {sorted(who)}")
    wrong.kill9()
    return during, who


def restore_and_check(c, real_dir):
    shutil.rmtree(c.ctl.data_dir)
    os.rename(real_dir, c.ctl.data_dir)
    c.ctl.start()
    c.wait_alive({1, 2, 3}, timeout=30)
    values = poll_best(lambda: read_all(c), lambda v: len(v) >= N, 20)
    after = poll_best(lambda: committed(c), lambda v: v is not None, 20)
    log(f"after restoring the controller: read {len(values)} of {N}; "
        f"committed {after}")
    return values, after


def check(c, during, who, values, before, after):
    want = {f"v{i}" for i in range(N)}
    assert deletions(c) == 0, f"{deletions(c)} partition_logs_deleted lines"
    assert during == want, f"read {len(during)} of {N} during the fault"
    assert values == want, f"read {len(values)} of {N} after restoring"
    assert after == before, f"committed offsets {before} -> {after}"
    assert who == {1, 2, 3}, f"only brokers {sorted(who)} refused it"


def test_controller_on_an_empty_data_dir():
    with Cluster(prefix="weir-fault-ctl-empty-") as c:
        before = setup(c)
        real = c.ctl.data_dir + ".real"
        c.ctl.kill9()
        os.rename(c.ctl.data_dir, real)
        # a lost volume: an empty dir, and auto-format makes a new cluster
        wrong = Controller(data_dir=c.ctl.data_dir, port=c.ctl.port,
                           format=False, env={"WEIR_AUTO_FORMAT": "true"})
        wrong.log_path = os.path.join(c.tmp, "controller-empty.log")
        during, who = under_wrong_controller(c, wrong,
                                             "event=cluster_id_mismatch")
        values, after = restore_and_check(c, real)
        check(c, during, who, values, before, after)


def test_controller_restored_from_an_older_copy():
    with Cluster(prefix="weir-fault-ctl-old-") as c:
        old = os.path.join(c.tmp, "controller.old")
        snapshot_dir(c.ctl, old)  # the same cluster, before the topic
        before = setup(c)
        real = c.ctl.data_dir + ".real"
        c.ctl.kill9()
        os.rename(c.ctl.data_dir, real)
        os.rename(old, c.ctl.data_dir)
        wrong = Controller(data_dir=c.ctl.data_dir, port=c.ctl.port)
        wrong.log_path = os.path.join(c.tmp, "controller-old.log")
        during, who = under_wrong_controller(c, wrong,
                                             "event=metadata_history_behind")
        values, after = restore_and_check(c, real)
        check(c, during, who, values, before, after)


def count(c, marker):
    return {i: b.log_text().count(marker) for i, b in c.brokers.items()}


def took_old_history(c, accepted):
    """Brokers whose metadata is the older copy's now: topic B (made after
    the copy) is gone from it, or the broker says it accepted the
    controller after refusing it."""
    out = set()
    for i, b in c.brokers.items():
        st = cluster_state(b)
        if ("B", 0) not in st["partitions"] or \
                b.log_text().count("event=controller_accepted") > accepted[i]:
            out.add(i)
    return out


def test_older_copy_that_writes_past_the_brokers():
    with Cluster(prefix="weir-fault-ctl-diverged-") as c:
        # an older copy that knows topic A, before topic B existed
        weir(c.brokers[1], "topic", "create", "A", "--partitions", "3")
        weir(c.brokers[1], "produce", "A", "--acks", "all",
             input=b"".join(b"a%d\n" % i for i in range(100)))
        time.sleep(1.5)
        old = os.path.join(c.tmp, "controller.old")
        snapshot_dir(c.ctl, old)
        weir(c.brokers[1], "topic", "create", "B", "--partitions", "1")
        want = {"b%d" % i for i in range(100)}
        weir(c.brokers[1], "produce", "B", "--acks", "all",
             input="".join(f"{v}\n" for v in sorted(want)).encode())
        time.sleep(2)  # brokers store their applied offset (1/s)
        accepted = count(c, "event=controller_accepted")
        registered = count(c, "event=registered ")
        c.ctl.kill9()
        real = c.ctl.data_dir + ".real"
        os.rename(c.ctl.data_dir, real)
        os.rename(old, c.ctl.data_dir)
        wrong = Controller(data_dir=c.ctl.data_dir, port=c.ctl.port)
        wrong.log_path = os.path.join(c.tmp, "controller-old.log")
        wrong.start()
        t0 = time.time()

        def settled():
            div = {i for i, n in count(
                c, "event=metadata_history_diverged").items() if n > 0}
            return took_old_history(c, accepted) or (
                div == {1, 2, 3} and time.time() - t0 > 8)
        poll_best(settled, bool, 25)
        # a topic created through a broker meanwhile: refused, not created
        # in the old history
        p = weir(c.brokers[2], "topic", "create", "C", "--partitions", "1",
                 timeout=30, check=False)
        time.sleep(1)
        wrong_log = open(wrong.log_path).read()
        took = took_old_history(c, accepted)
        again = {i for i, n in count(c, "event=registered ").items()
                 if n > registered[i]}
        div = count(c, "event=metadata_history_diverged")
        log(f"under the older copy for {time.time() - t0:.1f}s: brokers "
            f"that took it {sorted(took)}, registered with it "
            f"{sorted(again)}; diverged lines {div}; the old controller "
            f"registered {wrong_log.count('event=broker_registered')} "
            f"brokers; topic create through broker 2: rc={p.returncode} "
            f"{p.stderr.decode().strip()[-160:]!r}")
        assert not took, f"brokers {sorted(took)} took the older history"
        assert not again, f"brokers {sorted(again)} registered with it"
        assert all(div[i] > 0 for i in (1, 2, 3)), div
        assert p.returncode != 0, "the topic creation was forwarded"
        assert "topic=C" not in wrong_log, "topic C made in the old history"
        # a broker restarted meanwhile starts from its stored offset and
        # chain value (metadata-offset): it refuses the older copy too
        mark = c.brokers[3].log_text().count(
            "event=metadata_history_diverged")
        c.brokers[3].stop()
        c.brokers[3].start()
        poll_best(lambda: c.brokers[3].log_text().count(
            "event=metadata_history_diverged") > mark or "event=registered "
            in c.brokers[3].log_text()[-3000:], bool, 15)
        tail = c.brokers[3].log_text()
        log("broker 3 restarted under the older copy: "
            f"{tail.count('event=metadata_history_diverged') - mark} new "
            "diverged lines")
        assert tail.count("event=metadata_history_diverged") > mark
        assert ("B", 0) in cluster_state(c.brokers[1])["partitions"]
        wrong.kill9()
        shutil.rmtree(c.ctl.data_dir)
        os.rename(real, c.ctl.data_dir)
        c.ctl.start()
        c.wait_alive({1, 2, 3}, timeout=30)
        got = poll_best(lambda: set(weir(
            c.live(), "consume", "B", "--from-beginning", "--timeout-ms",
            "3000", timeout=60, check=False).stdout.decode().split()),
            lambda v: v >= want, 20)
        log(f"after restoring the controller: read {len(got & want)} of "
            f"{len(want)} records of B")
        assert got >= want, f"read {len(got & want)} of {len(want)}"
        assert deletions(c) == 0, f"{deletions(c)} partition_logs_deleted"


if __name__ == "__main__":
    run_main([test_controller_on_an_empty_data_dir,
              test_controller_restored_from_an_older_copy,
              test_older_copy_that_writes_past_the_brokers])
