#!/usr/bin/env python3
"""Group generations never repeat across a coordinator failover (issue 12,
item 14c).

A coordinator that answers JoinGroup with generation N+1 before the group
record holding N+1 is committed can die with that record only in its own
log: its successor loads generation N and hands out N+1 again, to another
membership - so two different sets of members hold "generation N+1" and a
zombie of the first can commit as a member of the second. The coordinator
now answers a completed rebalance only once its record is below the high
watermark.

Real processes: a controller and three brokers, __consumer_offsets with one
partition (so one coordinator), members speaking the group protocol over
raw sockets; every JoinGroup answer is recorded. Scenario 1 (the failure,
made deterministic): the two followers of the offsets partition are
stopped (SIGSTOP) so nothing written after that commits, a member joins,
the coordinator is killed (kill -9) in the middle of that rebalance, the
followers resume, and another membership joins the new coordinator.
On the old code the successor handed out generation 2 again, to
{A, C} after {A, B}. Scenario 2: rounds of rebalances, the coordinator
killed after the joins are sent, after they are answered, after the
leader's sync, then restarted (a wider check; the window it hits on the
old code is narrow, so it usually passed there too). The check: one
leader and one member list per generation, and every member answered in
a generation is in its list. Every wait is bounded in time."""
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (Controller, cluster_broker, log, pb_int,  # noqa: E402
                      pb_msg, pb_parse, read_frame, run_main, wait_until,
                      weir)

FIND, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT = 30, 31, 32, 33, 34, 35
RETRIABLE = (39, 40, 41)  # coordinator not available / moved / loading
GROUP = "gen"


class Setup:
    """Controller + brokers 1..3; the offsets topic has one partition;
    followers may be stopped for seconds without leaving the ISR. A fetch
    waits at most 20 ms at the leader, so a stopped follower has no fetch
    parked there that new records would be sent to (they would sit in its
    socket and reach its log once it runs again)."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="weir-gen-")
        self.ctl = Controller(data_dir=os.path.join(self.tmp, "controller"),
                              args=["--session-timeout-ms", "20000"])
        args = ["--offsets-topic-num-partitions", "1",
                "--replica-lag-time-max-ms", "60000",
                "--fetch-max-wait-ms", "20"]
        self.brokers = {i: cluster_broker(self.ctl, i, self.tmp, args=args)
                        for i in (1, 2, 3)}

    def __enter__(self):
        self.ctl.start()
        for b in self.brokers.values():
            b.start()
        return self

    def __exit__(self, *exc):
        for b in self.brokers.values():
            if b.proc and b.proc.poll() is None:
                b.proc.send_signal(signal.SIGCONT)
                b.kill9()
        if self.ctl.proc and self.ctl.proc.poll() is None:
            self.ctl.kill9()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def live(self):
        return [b for b in self.brokers.values()
                if b.proc and b.proc.poll() is None]


def send(sock, corr, field, body):
    hdr = pb_msg((1, corr), (2, "gen-test"), (field, body))
    sock.sendall(struct.pack(">II", 4 + len(hdr), len(hdr)) + hdr)


def receive(sock, corr, field, timeout):
    """The body of the answer to corr, or None (timeout, closed)."""
    try:
        got = read_frame(sock, timeout=timeout)
    except (socket.timeout, OSError):
        return None
    if got is None:
        return None
    resp, _ = got
    assert pb_int(resp, 1) == corr, resp
    if field not in resp:
        return {1: [pb_int(resp, 2)]}  # an envelope-level error
    return pb_parse(resp[field][0])


def text(msg, num):
    v = msg.get(num)
    return v[-1].decode() if v else ""


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def serving(port):
    """True once the broker coordinates the group and has loaded it: a
    heartbeat from nobody is refused as an unknown member."""
    try:
        s = connect(port)
        send(s, 2, HEARTBEAT, pb_msg((1, GROUP), (2, 0), (3, "nobody")))
        r = receive(s, 2, HEARTBEAT, 5)
        s.close()
    except OSError:
        return False
    return r is not None and pb_int(r, 1) not in RETRIABLE


def coordinator(st, avoid=None, timeout=40):
    """(node, port) of the group's coordinator, once one other than
    `avoid` answers and serves the group."""
    def ok():
        for b in st.live():
            try:
                s = connect(b.port)
                send(s, 1, FIND, pb_msg((1, GROUP)))
                r = receive(s, 1, FIND, 5)
                s.close()
            except OSError:
                continue
            if r is None or pb_int(r, 1) != 0:
                continue
            if pb_int(r, 3) != avoid and serving(pb_int(r, 5)):
                return pb_int(r, 3), pb_int(r, 5)
        return None
    return wait_until("a coordinator", ok, timeout, step=0.2)


class History:
    """Every successful JoinGroup answer: (generation, member, leader,
    the leader's member list or None)."""

    def __init__(self):
        self.answers = []

    def add(self, who, r):
        if r is None or pb_int(r, 1) != 0:
            return
        members = None
        if r.get(7):
            members = sorted(text(pb_parse(m), 1) for m in r[7])
        a = (pb_int(r, 3), text(r, 6), text(r, 5), members)
        log(f"  {who}: generation {a[0]} member {a[1]} leader {a[2]}"
            + (f" members {members}" if members else ""))
        self.answers.append(a)

    def violations(self):
        out = []
        by_gen = {}
        for gen, member, leader, members in self.answers:
            g = by_gen.setdefault(gen, {"leaders": set(), "lists": set(),
                                        "members": set()})
            g["leaders"].add(leader)
            g["members"].add(member)
            if members is not None:
                g["lists"].add(tuple(members))
        for gen, g in sorted(by_gen.items()):
            if len(g["leaders"]) > 1 or len(g["lists"]) > 1:
                out.append(f"generation {gen} handed out twice: leaders "
                           f"{sorted(g['leaders'])}, member lists "
                           f"{sorted(g['lists'])}")
            for lst in g["lists"]:
                stray = g["members"] - set(lst)
                if stray:
                    out.append(f"generation {gen}: {sorted(stray)} answered "
                               f"but not in the leader's list {list(lst)}")
        return out


def join_body(member):
    proto = pb_msg((1, "range"), (2, b"sub"))
    return pb_msg((1, GROUP), (2, member), (3, 10000), (4, 5000),
                  (5, "consumer"), (6, [proto]))


class Member:
    def __init__(self, name, hist):
        self.name = name
        self.hist = hist
        self.id = ""
        self.gen = -1
        self.leads = False
        self.sock = None
        self.corr = 100

    def attach(self, port):
        if self.sock:
            self.sock.close()
        self.sock = connect(port)

    def send_join(self):
        self.corr += 1
        send(self.sock, self.corr, JOIN, join_body(self.id))
        return self.corr

    def wait_join(self, corr, timeout):
        r = receive(self.sock, corr, JOIN, timeout)
        self.hist.add(self.name, r)
        if r is not None and pb_int(r, 1) == 43:  # unknown member
            self.id = ""
        if r is not None and pb_int(r, 1) == 0:
            self.id = text(r, 6)
            self.gen = pb_int(r, 3)
            self.leads = text(r, 5) == self.id
            return r
        return None

    def call(self, field, body, timeout=20):
        self.corr += 1
        send(self.sock, self.corr, field, body)
        return receive(self.sock, self.corr, field, timeout)

    def sync(self, assignments=()):
        body = pb_msg((1, GROUP), (2, self.gen), (3, self.id),
                      (4, [pb_msg((1, m), (2, b"a-" + m.encode()))
                           for m in assignments]))
        return self.call(SYNC, body)

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None


def send_joins(port, members):
    """(Re)join every member; new members first, so the known members'
    rejoins complete a rebalance that includes them. {name: corr}."""
    corrs = {}
    for m in sorted(members, key=lambda m: m.id != ""):
        m.attach(port)
        corrs[m.name] = m.send_join()
        time.sleep(0.05)
    return corrs


def join_until_answered(port, members, timeout=60):
    """Join until all are answered in one generation (retrying the
    retriable errors of a coordinator that is loading or moving)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        corrs = send_joins(port, members)
        got = [m.wait_join(corrs[m.name], 15) for m in members]
        if all(got) and len({pb_int(r, 3) for r in got}) == 1:
            return got
        time.sleep(0.3)
    raise AssertionError(f"{[m.name for m in members]} not answered")


def settle(port, members):
    """Join, the leader syncs, a commit confirms the records committed."""
    join_until_answered(port, members)
    leader = next(m for m in members if m.leads)
    r = leader.sync([m.id for m in members])
    assert r is not None and pb_int(r, 1) == 0, r
    for m in members:
        if m is not leader:
            r = m.sync()
            assert r is not None and pb_int(r, 1) == 0, r
    part = pb_msg((1, "t"), (2, 0), (3, 1), (4, -1))

    def committed():
        r = leader.call(COMMIT, pb_msg((1, GROUP), (2, leader.gen),
                                       (3, leader.id), (4, [part])))
        assert r is not None and pb_int(r, 1) in (0,) + RETRIABLE, r
        return pb_int(r, 1) == 0
    # retried while a restarted broker is not yet back in the ISR
    wait_until("a commit of the settled generation", committed, 30, 0.3)


def test_killed_mid_rebalance_with_uncommitted_record():
    hist = History()
    with Setup() as st:
        node, port = coordinator(st)
        log(f"coordinator: broker {node}")
        a = Member("A", hist)
        settle(port, [a])  # generation 1: {A}, committed
        followers = [b for i, b in st.brokers.items() if i != node]
        for f in followers:
            f.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)  # their last fetches are answered (empty)
        log("followers stopped: nothing written now can commit")
        b = Member("B", hist)
        b.attach(port)
        cb = b.send_join()
        time.sleep(0.3)
        ca = a.send_join()  # A rejoins: the rebalance can complete
        a.wait_join(ca, 3)
        b.wait_join(cb, 0.5)
        st.brokers[node].kill9()
        log(f"coordinator {node} killed (kill -9) in the middle of the "
            "rebalance")
        for f in followers:
            f.proc.send_signal(signal.SIGCONT)
        node2, port2 = coordinator(st, avoid=node)
        log(f"new coordinator: broker {node2}")
        c = Member("C", hist)
        join_until_answered(port2, [c, a])
        for m in (a, b, c):
            m.close()
    bad = hist.violations()
    assert not bad, "\n".join(bad)
    log(f"{len(hist.answers)} join answers, generations "
        f"{sorted({x[0] for x in hist.answers})}: none repeated")


def test_kill_at_every_step_never_repeats_a_generation():
    """Rounds of rebalances; in each the coordinator is killed (kill -9)
    at another step: joins sent, joins answered, the leader's sync sent.
    The group then settles on the new coordinator, and the killed broker
    comes back."""
    hist = History()
    with Setup() as st:
        members = [Member(n, hist) for n in ("P", "Q", "R")]
        node, port = coordinator(st)
        settle(port, members[:1])
        for rnd, step in enumerate(("joins sent", "joins answered",
                                    "leader's sync sent")):
            group = members[:1 + (rnd + 1) % 3]
            corrs = send_joins(port, group)
            if step != "joins sent":
                for m in group:
                    m.wait_join(corrs[m.name], 8)
            if step == "leader's sync sent":
                leader = next((m for m in group if m.leads), group[0])
                leader.corr += 1
                send(leader.sock, leader.corr, SYNC, pb_msg(
                    (1, GROUP), (2, leader.gen), (3, leader.id),
                    (4, [pb_msg((1, m.id), (2, b"x")) for m in group])))
            st.brokers[node].kill9()
            log(f"round {rnd}: coordinator {node} killed after {step}")
            if step == "joins sent":
                for m in group:
                    m.wait_join(corrs[m.name], 0.5)
            st.brokers[node].start()
            node, port = coordinator(st)
            log(f"round {rnd}: coordinator now broker {node}")
            settle(port, group)
        for m in members:
            m.close()
    bad = hist.violations()
    assert not bad, "\n".join(bad)
    log(f"{len(hist.answers)} join answers, generations "
        f"{sorted({x[0] for x in hist.answers})}: none repeated")


if __name__ == "__main__":
    run_main([test_killed_mid_rebalance_with_uncommitted_record,
              test_kill_at_every_step_never_repeats_a_generation])
