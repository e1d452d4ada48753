#!/usr/bin/env python3
"""The controller quorum with real processes on loopback: three
weir-controller members (--id, --voters) and three brokers given every
member (--controller A,B,C). Checks that one member is the active
controller, that kill -9 of it moves the role within a bound and brokers
follow without being fenced, that failover of partitions goes on across
it (also with the partition's leader killed at the same moment), that a
member whose data dir was wiped rejoins, catches up and votes again, and
that a paused active controller comes back as a follower, and that
`weir cluster` shows the quorum (each voter's state, log end and lag)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from weirtest import (CONTROLLER_BIN, Broker, Controller, cluster_state,
                      free_port, log, run_main, wait_until, weir)


class Quorum:
    """Controllers 1..3 (one quorum) and brokers 1..3 in a temp dir."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="weir-quorum-")
        self.cluster_id = "q" + uuid.uuid4().hex[:20]
        ports = {i: free_port() for i in (1, 2, 3)}
        self.voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
        self.ctls = {}
        for i, p in ports.items():
            self.ctls[i] = Controller(
                data_dir=os.path.join(self.tmp, f"controller-{i}"), port=p,
                format=False, args=self.ctl_args(i))
        listed = ",".join(c.addr for c in self.ctls.values())
        self.brokers = {
            i: Broker(data_dir=os.path.join(self.tmp, f"broker-{i}"),
                      args=["--id", str(i), "--controller", listed])
            for i in (1, 2, 3)}

    def ctl_args(self, i):
        return ["--id", str(i), "--voters", self.voters,
                "--cluster-id", self.cluster_id]

    def format(self, i):
        subprocess.run([CONTROLLER_BIN, "--format", "--data-dir",
                        self.ctls[i].data_dir, "--cluster-id",
                        self.cluster_id], check=True, capture_output=True)

    def __enter__(self):
        for i, c in self.ctls.items():
            self.format(i)
            c.start()
        self.wait_active()
        for b in self.brokers.values():
            b.start()
        self.wait_alive({1, 2, 3})
        return self

    def __exit__(self, *exc):
        for p in list(self.brokers.values()) + list(self.ctls.values()):
            if p.proc and p.proc.poll() is None:
                p.kill9()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def running(self, procs):
        return {i: p for i, p in procs.items()
                if p.proc and p.proc.poll() is None}

    def live_broker(self):
        return next(iter(self.running(self.brokers).values()))

    def active(self):
        """The ids of running members whose last member_state line since
        their last start says active (at most one may)."""
        ids = []
        for i, c in self.running(self.ctls).items():
            states = re.findall(r"event=member_state active=(\w+)",
                                c.log_since_start())
            if states and states[-1] == "true":
                ids.append(i)
        return ids

    def wait_active(self, but=(), timeout=30):
        def one():
            ids = [i for i in self.active() if i not in but]
            return ids[0] if len(ids) == 1 else None
        return wait_until("one active controller", one, timeout, step=0.02)

    def state(self):
        return cluster_state(self.live_broker())

    def wait_alive(self, ids, timeout=60):
        def ok():
            st = self.state()
            alive = {i for i, b in st["brokers"].items() if b[2]}
            return st if ids <= alive else None
        return wait_until(f"brokers {sorted(ids)} alive", ok, timeout)


def produce(q, topic, values, acks="all"):
    weir(q.live_broker(), "produce", topic, "--acks", acks,
         input=("\n".join(values) + "\n").encode(), timeout=120)


def consume_all(q, topic, n):
    out = weir(q.live_broker(), "consume", topic, "--from-beginning",
               "--max-messages", str(n), "--timeout-ms", "30000",
               timeout=120).stdout.decode().split()
    return out


def create(q, topic, partitions=3):
    """Create topic, retrying answers of unknown outcome (a timeout while
    brokers move to a new active controller): TOPIC_EXISTS then means an
    earlier try took effect."""
    def once():
        r = weir(q.live_broker(), "topic", "create", topic, "--partitions",
                 str(partitions), "--replication-factor", "3", check=False)
        if r.returncode != 0:
            log(f"create {topic}: {r.stderr.decode().strip()}")
        return r.returncode == 0 or b"exists" in r.stderr
    wait_until(f"{topic} created", once, 60, step=0.5)
    wait_until(f"{topic} has leaders",
               lambda: all(v["leader"] > 0 for (t, _), v in
                           q.state()["partitions"].items() if t == topic)
               and any(t == topic for t, _ in q.state()["partitions"]), 60)


def test_quorum_serves():
    with Quorum() as q:
        first = q.wait_active()
        log(f"active controller: {first}")
        st = q.state()
        assert st["controller"] == q.ctls[first].addr, st["text"]
        create(q, "qa")
        produce(q, "qa", [f"v{i}" for i in range(300)])
        assert sorted(consume_all(q, "qa", 300)) == sorted(
            f"v{i}" for i in range(300))
        # followers tell callers where the active one is
        other = next(i for i in q.ctls if i != first)
        out = weir(q.ctls[other], "cluster", check=False)
        assert out.returncode == 0, out.stderr
        assert f"controller: {q.ctls[first].addr}" in out.stdout.decode()


def test_kill9_active_moves_and_brokers_follow():
    with Quorum() as q:
        create(q, "qk")
        produce(q, "qk", [f"a{i}" for i in range(200)])
        old = q.wait_active()
        t0 = time.time()
        q.ctls[old].kill9()
        new = q.wait_active(but=(old,))
        took = time.time() - t0
        log(f"controller {old} killed; {new} active after {took:.2f}s")
        assert new != old
        assert took < 10, took
        # brokers follow, and none is fenced because the controller moved:
        # watch for longer than a session timeout (3 s)
        wait_until("brokers reach the new controller",
                   lambda: q.state()["controller"] == q.ctls[new].addr, 30)
        deadline = time.time() + 5
        while time.time() < deadline:
            st = q.state()
            assert all(b[2] for b in st["brokers"].values()), st["text"]
            time.sleep(0.5)
        for b in q.brokers.values():
            assert "event=controller_moved" in b.log_text()
        # decisions go on: a new topic, and a broker failover
        create(q, "qk2")
        victim = q.state()["partitions"][("qk", 0)]["leader"]
        q.brokers[victim].kill9()
        wait_until("qk-0 gets another leader",
                   lambda: q.state()["partitions"][("qk", 0)]["leader"]
                   not in (victim, -1), 30)
        produce(q, "qk", [f"b{i}" for i in range(200)])
        got = consume_all(q, "qk", 400)
        assert sorted(got) == sorted([f"a{i}" for i in range(200)] +
                                     [f"b{i}" for i in range(200)])


def test_active_and_leader_killed_together():
    with Quorum() as q:
        create(q, "qt")
        produce(q, "qt", [f"a{i}" for i in range(100)])
        old = q.wait_active()
        victim = q.state()["partitions"][("qt", 1)]["leader"]
        t0 = time.time()
        q.ctls[old].kill9()
        q.brokers[victim].kill9()
        wait_until("qt-1 gets another leader",
                   lambda: q.state()["partitions"][("qt", 1)]["leader"]
                   not in (victim, -1), 60, step=0.05)
        log(f"qt-1 led again {time.time() - t0:.2f}s after both kills")
        produce(q, "qt", [f"b{i}" for i in range(100)])
        assert len(consume_all(q, "qt", 200)) == 200


def test_wiped_member_rejoins_and_votes():
    with Quorum() as q:
        create(q, "qw")
        produce(q, "qw", [f"a{i}" for i in range(100)])
        active = q.wait_active()
        wiped = next(i for i in q.ctls if i != active)
        q.ctls[wiped].kill9()
        shutil.rmtree(q.ctls[wiped].data_dir)
        os.makedirs(q.ctls[wiped].data_dir)
        # without the cluster id an empty member cannot rejoin
        bad = subprocess.run(
            [CONTROLLER_BIN, "--listen", q.ctls[wiped].addr, "--data-dir",
             q.ctls[wiped].data_dir, "--id", str(wiped), "--voters",
             q.voters], capture_output=True, timeout=30)
        assert bad.returncode == 2, bad
        assert b"cluster-id" in bad.stderr + bad.stdout
        q.ctls[wiped].start()
        assert "event=quorum_rejoin" in q.ctls[wiped].log_text()
        create(q, "qw2")
        # it caught up: it holds the metadata (its log or a snapshot)
        wait_until("the wiped member caught up", lambda: os.path.getsize(
            os.path.join(q.ctls[wiped].data_dir, "metadata.log")) > 0, 30)
        # and votes again: with the active one gone, the two left must
        # elect one of themselves
        time.sleep(1)
        q.ctls[active].kill9()
        new = q.wait_active(but=(active,), timeout=30)
        log(f"after the wipe of {wiped}, {new} became active (two members left: both voted)")
        wait_until("both topics known, from the new controller",
                   lambda: (lambda s: s["controller"] == q.ctls[new].addr
                            and {"qw", "qw2"} <= {
                                t for t, _ in s["partitions"]})(q.state()),
                   30)
        got = consume_all(q, "qw", 100)
        assert sorted(got) == sorted(f"a{i}" for i in range(100))


def test_paused_active_steps_down():
    with Quorum() as q:
        create(q, "qp")
        old = q.wait_active()
        q.ctls[old].proc.send_signal(signal.SIGSTOP)
        try:
            new = wait_until(
                "another active controller",
                lambda: next((i for i in q.active() if i != old), None), 30,
                step=0.05)
            create(q, "qp2")
        finally:
            q.ctls[old].proc.send_signal(signal.SIGCONT)
        wait_until("the old one steps down",
                   lambda: q.active() == [new], 30, step=0.05)
        assert "event=no_longer_active" in q.ctls[old].log_text()
        # it follows: its log catches up with qp2's creation
        produce(q, "qp2", ["x"] * 10)
        assert len(consume_all(q, "qp2", 10)) == 10


def quorum_shows(q, node, states, lag0=True):
    """`weir cluster` through node (a broker or a controller): its quorum
    section when it lists every member at its address in the state wanted
    (states: {id: state}) and, with lag0, every reachable member with lag
    0; else None. The section's text is kept in qv["text"]."""
    st = cluster_state(node)
    qv = st["quorum"]
    if qv is None or set(qv["voters"]) != set(q.ctls):
        return None
    qv["text"] = "\n".join(
        line for line in st["text"].splitlines()
        if line.startswith(("controller:", "quorum:", "  voter")))
    for i, v in qv["voters"].items():
        assert v["addr"] == q.ctls[i].addr, qv
        if v["state"] != states[i]:
            return None
        if lag0 and v["state"] != "unreachable" and v["lag"] != 0:
            return None
    return qv


def test_cluster_shows_quorum():
    with Quorum() as q:
        create(q, "qv")
        leader = q.wait_active()
        want = {i: "leader" if i == leader else "follower" for i in q.ctls}
        # the same view from every bootstrap broker and from the active
        # controller itself
        for node in list(q.brokers.values()) + [q.ctls[leader]]:
            qv = wait_until(f"the quorum through {node.addr}",
                            lambda: quorum_shows(q, node, want), 30)
            log(f"weir cluster via {node.addr}:\n{qv['text']}")
            assert qv["leader"] == leader and qv["term"] >= 1, qv
            ends = {v["log_end"] for v in qv["voters"].values()}
            assert len(ends) == 1 and ends.pop() > 0, qv
        st = q.state()  # the other sections still parse
        assert st["controller"] == q.ctls[leader].addr, st["text"]
        assert all(b[2] for b in st["brokers"].values()), st["text"]
        assert "quorum: 3 voters (3 reachable, 0 unreachable)" in st["text"]
        # a follower killed: unreachable, and it falls behind
        gone = next(i for i in q.ctls if i != leader)
        q.ctls[gone].kill9()
        want[gone] = "unreachable"
        qv = wait_until("the killed member shows unreachable",
                        lambda: quorum_shows(q, q.live_broker(), want), 30)
        log(f"member {gone} killed:\n{qv['text']}")
        create(q, "qv2")
        qv = wait_until(
            "the killed member lags",
            lambda: (lambda v: v if v and v["voters"][gone]["lag"] > 0
                     else None)(quorum_shows(q, q.live_broker(), want)), 30)
        assert qv["voters"][gone]["log_end"] < \
            qv["voters"][leader]["log_end"], qv
        log(f"after a new topic:\n{qv['text']}")
        assert qv["leader"] == leader, qv
        assert "(2 reachable, 1 unreachable)" in q.state()["text"]
        # it returns: follower again, and the lag goes back to 0
        q.ctls[gone].start()
        want[gone] = "follower"
        qv = wait_until("the member is back with lag 0",
                        lambda: quorum_shows(q, q.live_broker(), want), 30)
        log(f"member {gone} restarted:\n{qv['text']}")
        assert all(v["lag"] == 0 for v in qv["voters"].values()), qv
        # the leader killed: brokers show the new leader's view (the old
        # one unreachable, its log end 0: not heard from in this term)
        term = qv["term"]
        q.ctls[leader].kill9()
        new = q.wait_active(but=(leader,))
        want = {i: "leader" if i == new else "follower" for i in q.ctls}
        want[leader] = "unreachable"
        qv = wait_until("the new leader's view through a broker",
                        lambda: quorum_shows(q, q.live_broker(), want), 30)
        log(f"leader {leader} killed, {new} leads:\n{qv['text']}")
        assert qv["leader"] == new and qv["term"] > term, qv


if __name__ == "__main__":
    run_main([test_quorum_serves,
              test_kill9_active_moves_and_brokers_follow,
              test_active_and_leader_killed_together,
              test_wiped_member_rejoins_and_votes,
              test_paused_active_steps_down,
              test_cluster_shows_quorum])
