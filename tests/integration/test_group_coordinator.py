#!/usr/bin/env python3
"""The group coordinator over the wire, with forged requests (no client
library in the way): FindCoordinator, JoinGroup / SyncGroup / Heartbeat /
LeaveGroup with generations, OffsetCommit / OffsetFetch, List / Describe /
DeleteGroups, on a single broker and on a controller with three brokers,
where the coordinator is killed and its successor serves exactly the
committed offsets. Every wait is bounded in time."""
import os
import time

import weirtest
from weirtest import (Broker, connect, log, pb_int, pb_msg, pb_parse,
                      read_frame, run_main, wait_until, weir)

FIND, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH_OFFSETS, LIST, DESCRIBE, \
    DELETE = range(30, 40)
E_COORD_NA, E_NOT_COORD, E_LOADING = 39, 40, 41
E_ILLEGAL_GEN, E_UNKNOWN_MEMBER, E_REBALANCING = 42, 43, 44
E_GROUP_NOT_FOUND, E_NON_EMPTY = 47, 48
RETRIABLE = (E_COORD_NA, E_NOT_COORD, E_LOADING)


def call(sock, corr, field, body, timeout=20):
    hdr = pb_msg((1, corr), (2, "it"), (field, body))
    import struct
    sock.sendall(struct.pack(">II", 4 + len(hdr), len(hdr)) + hdr)
    resp, _ = read_frame(sock, timeout=timeout)
    assert pb_int(resp, 1) == corr, resp
    assert pb_int(resp, 2) == 0, resp
    return pb_parse(resp[field][0])


def send(sock, corr, field, body):
    import struct
    hdr = pb_msg((1, corr), (2, "it"), (field, body))
    sock.sendall(struct.pack(">II", 4 + len(hdr), len(hdr)) + hdr)


def receive(sock, corr, field, timeout=20):
    resp, _ = read_frame(sock, timeout=timeout)
    assert pb_int(resp, 1) == corr, resp
    return pb_parse(resp[field][0])


def s(msg, num):
    v = msg.get(num)
    return v[-1].decode() if v else ""


def find(b, group, timeout=20):
    """(node, port) of the coordinator, retrying while it is not ready."""
    def ok():
        sock = connect(b)
        try:
            r = call(sock, 1, FIND, pb_msg((1, group)))
        finally:
            sock.close()
        if pb_int(r, 1) in RETRIABLE:
            return None
        assert pb_int(r, 1) == 0, r
        return pb_int(r, 3), pb_int(r, 5)
    return wait_until(f"coordinator of {group}", ok, timeout, step=0.1)


def join_body(group, member="", session=6000, rebalance=6000):
    proto = pb_msg((1, "range"), (2, b"sub"))
    return pb_msg((1, group), (2, member), (3, session), (4, rebalance),
                  (5, "consumer"), (6, [proto]))


def retry(fn, what, timeout=20):
    """fn() -> (error, result); retried while the error is retriable."""
    def ok():
        err, res = fn()
        if err in RETRIABLE:
            return None
        return (err, res)
    return wait_until(what, ok, timeout, step=0.1)


def commit(sock, corr, group, gen, member, offsets):
    parts = [pb_msg((1, t), (2, p), (3, o), (4, -1)) for (t, p), o in
             offsets.items()]
    r = call(sock, corr, COMMIT, pb_msg((1, group), (2, gen), (3, member),
                                        (4, parts)))
    return pb_int(r, 1), r


def fetch_offsets(sock, corr, group):
    r = call(sock, corr, FETCH_OFFSETS, pb_msg((1, group)))
    out = {}
    for p in r.get(3, []):
        m = pb_parse(p)
        out[(s(m, 1), pb_int(m, 2))] = pb_int(m, 3)
    return pb_int(r, 1), out


def test_single_broker_membership_and_offsets():
    with Broker() as b:
        node, port = find(b, "g1")
        assert port == b.port, (node, port)
        a = connect(b)
        err, j = retry(lambda: (lambda r: (pb_int(r, 1), r))(
            call(a, 2, JOIN, join_body("g1"))), "first join")
        assert err == 0, j
        ma = s(j, 6)
        assert pb_int(j, 3) == 1 and s(j, 5) == ma, j  # generation 1, leader
        assert len(j.get(7, [])) == 1, j                # leader sees members
        r = call(a, 3, SYNC, pb_msg((1, "g1"), (2, 1), (3, ma),
                                    (4, [pb_msg((1, ma), (2, b"asg-a"))])))
        assert pb_int(r, 1) == 0 and r[3][0] == b"asg-a", r
        r = call(a, 4, HEARTBEAT, pb_msg((1, "g1"), (2, 1), (3, ma)))
        assert pb_int(r, 1) == 0, r
        err, _ = commit(a, 5, "g1", 1, ma, {("t", 0): 10, ("t", 1): 20})
        assert err == 0
        assert fetch_offsets(a, 6, "g1") == (0, {("t", 0): 10, ("t", 1): 20})
        # a second member: the first must rejoin, both get generation 2
        bsock = connect(b)
        send(bsock, 7, JOIN, join_body("g1"))
        # the first member hears of it on its next heartbeat once the
        # coordinator has taken the join (no fixed delay: a loaded machine)
        r = weirtest.wait_until("a heartbeat answered REBALANCING", lambda: (
            lambda r: r if pb_int(r, 1) == E_REBALANCING else None)(
                call(a, 8, HEARTBEAT, pb_msg((1, "g1"), (2, 1), (3, ma)))),
            60, step=0.1)
        assert pb_int(r, 1) == E_REBALANCING, r
        ja = call(a, 9, JOIN, join_body("g1", ma))
        jb = receive(bsock, 7, JOIN)
        assert pb_int(ja, 1) == 0 and pb_int(jb, 1) == 0, (ja, jb)
        assert pb_int(ja, 3) == 2 and pb_int(jb, 3) == 2, (ja, jb)
        mb = s(jb, 6)
        leader = s(ja, 5)
        assert leader in (ma, mb) and s(jb, 5) == leader
        # the old generation can no longer commit (refused as a rebalance
        # in progress until the assignment is synced, as Kafka does)
        err, _ = commit(a, 10, "g1", 1, ma, {("t", 0): 11})
        assert err in (E_ILLEGAL_GEN, E_REBALANCING), err
        # both sync; the leader hands out the assignment
        lsock, fsock = (a, bsock) if leader == ma else (bsock, a)
        fid = mb if leader == ma else ma
        send(fsock, 11, SYNC, pb_msg((1, "g1"), (2, 2), (3, fid)))
        r = call(lsock, 12, SYNC, pb_msg(
            (1, "g1"), (2, 2), (3, leader),
            (4, [pb_msg((1, leader), (2, b"L")), pb_msg((1, fid), (2, b"F"))])))
        assert pb_int(r, 1) == 0 and r[3][0] == b"L", r
        r = receive(fsock, 11, SYNC)
        assert pb_int(r, 1) == 0 and r[3][0] == b"F", r
        err, _ = commit(a, 13, "g1", 2, ma, {("t", 0): 12})
        assert err == 0
        # list and describe
        r = call(a, 14, LIST, b"")
        names = [s(pb_parse(g), 1) for g in r.get(3, [])]
        assert "g1" in names, r
        r = call(a, 15, DESCRIBE, pb_msg((1, ["g1"])))
        d = pb_parse(r[1][0])
        assert s(d, 4) == "Stable" and pb_int(d, 7) == 2, d
        assert len(d.get(9, [])) == 2
        # delete is refused while members are in, allowed once they left
        r = call(a, 16, DELETE, pb_msg((1, ["g1"])))
        assert pb_int(pb_parse(r[1][0]), 2) == E_NON_EMPTY, r
        assert pb_int(call(a, 17, LEAVE, pb_msg((1, "g1"), (2, ma))), 1) == 0
        assert pb_int(call(bsock, 18, LEAVE, pb_msg((1, "g1"), (2, mb))),
                      1) == 0
        # an operator commit (generation -1) into the now empty group
        err, _ = commit(a, 19, "g1", -1, "", {("t", 1): 5})
        assert err == 0
        a.close()
        bsock.close()
        # the offsets come back from the log after a restart
        b.restart()
        sock = connect(b)
        err, offs = retry(lambda: fetch_offsets(sock, 20, "g1"),
                          "offsets after restart")
        assert offs == {("t", 0): 12, ("t", 1): 5}, offs
        r = call(sock, 21, DELETE, pb_msg((1, ["g1"])))
        assert pb_int(pb_parse(r[1][0]), 2) == 0, r
        assert fetch_offsets(sock, 22, "g1") == (0, {})
        out = weir(b, "topic", "list").stdout.decode()
        assert "__consumer_offsets" not in out, out
        out = weir(b, "topic", "list", "--internal").stdout.decode()
        assert "__consumer_offsets" in out, out


def test_session_expiry_fences_a_zombie():
    with Broker() as b:
        find(b, "gz")
        a = connect(b)
        err, j = retry(lambda: (lambda r: (pb_int(r, 1), r))(
            call(a, 2, JOIN, join_body("gz", session=1500))), "join")
        ma = s(j, 6)
        r = call(a, 3, SYNC, pb_msg((1, "gz"), (2, 1), (3, ma),
                                    (4, [pb_msg((1, ma), (2, b"x"))])))
        assert pb_int(r, 1) == 0
        # no heartbeat: the session (1.5 s) expires; wait for the group to
        # be empty rather than for a fixed time (timers run late under load)
        weirtest.wait_until("the session of gz expired", lambda: any(
            "event=group_state group=gz " in ln and " members=0 " in ln
            for ln in b.log_text().splitlines()), 60, step=0.2)
        err, _ = commit(a, 4, "gz", 1, ma, {("t", 0): 1})
        assert err in (E_UNKNOWN_MEMBER, E_ILLEGAL_GEN), err
        r = call(a, 5, HEARTBEAT, pb_msg((1, "gz"), (2, 1), (3, ma)))
        assert pb_int(r, 1) == E_UNKNOWN_MEMBER, r
        assert fetch_offsets(a, 6, "gz") == (0, {})


def test_coordinator_failover_keeps_commits():
    with weirtest.Cluster(prefix="weir-groups-") as c:
        node, port = find(c.brokers[1], "gf", timeout=30)
        coord = c.brokers[node]
        assert coord.port == port
        sock = connect(coord)
        offsets = {}
        for i in range(50):
            offsets[("t", i % 6)] = i
            err, _ = retry(lambda: commit(sock, 10 + i, "gf", -1, "",
                                          {("t", i % 6): i}), "commit")
            assert err == 0, (i, err)
        sock.close()
        coord.kill9()
        others = [i for i in (1, 2, 3) if i != node]
        node2, _ = wait_until("a new coordinator", lambda: (
            lambda r: r if r[0] != node else None)(
                find(c.brokers[others[0]], "gf")), 30)
        sock = connect(c.brokers[node2])
        err, got = retry(lambda: fetch_offsets(sock, 100, "gf"),
                         "offsets from the new coordinator")
        assert err == 0 and got == offsets, (got, offsets)
        log(f"coordinator {node} killed; {node2} serves all "
            f"{len(got)} committed offsets")


def dir_bytes(path):
    total = 0
    for f in os.listdir(path):
        total += os.path.getsize(os.path.join(path, f))
    return total


def test_compaction_keeps_latest_commits():
    """Many commits of a few keys: the offsets partition is compacted and
    a restarted broker still serves the latest commit of every key."""
    args = ["--offsets-topic-segment-bytes", "16384",
            "--retention-check-interval-ms", "200"]
    with Broker(args=args) as b:
        find(b, "gc")
        sock = connect(b)
        r = call(sock, 1, FIND, pb_msg((1, "gc")))
        part = pb_int(r, 6)
        pdir = os.path.join(b.data_dir, f"__consumer_offsets-{part}")
        latest = {}
        for i in range(3000):
            offs = {("t", k): i * 10 + k for k in range(8)}
            latest.update(offs)
            err, _ = retry(lambda: commit(sock, 100 + i, "gc", -1, "", offs),
                           "commit")
            assert err == 0, err
        # 24,000 offset records of at least 30 bytes each were written
        written = 24000 * 30
        wait_until("the offsets partition compacted", lambda:
                   "event=log_compacted topic=__consumer_offsets" in
                   b.log_text(), 20)
        after = wait_until("it shrank", lambda: (
            lambda n: n if n < written // 10 else None)(dir_bytes(pdir)), 20)
        log(f"__consumer_offsets-{part}: over {written} bytes written, "
            f"{after} bytes on disk after compaction")
        sock.close()
        b.restart()
        sock = connect(b)
        err, got = retry(lambda: fetch_offsets(sock, 5000, "gc"),
                         "offsets after restart")
        assert got == latest, (got, latest)


if __name__ == "__main__":
    run_main([
        test_single_broker_membership_and_offsets,
        test_session_expiry_fences_a_zombie,
        test_coordinator_failover_keeps_commits,
        test_compaction_keeps_latest_commits,
    ])
