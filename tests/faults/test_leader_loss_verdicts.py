#!/usr/bin/env python3
"""A leader that loses its leadership while writes wait gives no definite
failure for them (issue 12, item 7).

A controller and three brokers; topic `l`, one partition, replication
factor 3, min.insync.replicas 2. A raw client keeps up to 40 acks=all
writes of unique values in flight on one connection to the leader (each
appended and waiting for the high watermark). The leader is stopped with
SIGSTOP past the session timeout: the controller fences it and elects one
of the followers, which holds some of the waiting writes (fetched before
the stop, but never known to the old leader as replicated). To make sure
such writes exist, the other follower is paused for 0.5 s just before
the leader (well under the session timeout), which holds the high
watermark back meanwhile (pause_leader). The old leader is resumed with
SIGCONT and answers the writes that waited. They
must be answered with an indefinite code (NOT_LEADER_AFTER_APPEND): some
of them are in the new leader's log and will be read. The history
(every answer, then a drain of the partition) goes through the chaos
checker (tests/chaos/history.py): no definite failure may be read, every
acknowledged write is at its offset. Repeated for 2 rounds (the leadership
moves each time). About 30 s."""
import os
import signal
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
import history  # noqa: E402
import verdicts  # noqa: E402
from verdicts import (code, connect_to, definite, drain, name,  # noqa: E402
                      produce_request, wait_leader)
from weirtest import (Cluster, log, pb_int, pb_msg, pb_parse,  # noqa: E402
                      run_main, wait_until, weir)

TOPIC = "l"
IN_FLIGHT = 40
ROUNDS = 2
GROUP = "g"
OFFSETS = "__consumer_offsets"
FIND, COMMIT, FETCH_OFFSETS = 30, 35, 36


class Pipelined:
    """Sends requests made by make(corr, i) one after the other on one
    connection, up to IN_FLIGHT unanswered, from a thread; answers (read by
    parse(frame) -> (error code, result)) are kept in request order, in
    the form history.check expects: (i, partition, offset, t) for a
    success, (i, None, ERROR_NAME, t) for a failure."""

    def __init__(self, broker, name, make, parse):
        self.name = name
        self.make, self.parse = make, parse
        self.sock = connect_to(broker)
        self.sent = 0
        self.reports = []
        self.sent_t = []
        self.running = True
        self.lock = threading.Condition()
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.writer.start()
        self.reader.start()

    def value(self, i):
        return f"{self.name}-{i}"

    def send_time(self, i):
        return self.sent_t[i]

    def acked(self):
        return sum(1 for r in self.reports if r[1] is not None)

    def _write(self):
        deadline = time.time() + 120
        while time.time() < deadline:
            with self.lock:
                while self.running and \
                        self.sent - len(self.reports) >= IN_FLIGHT:
                    self.lock.wait(0.5)
                if not self.running:
                    return
                i = self.sent
                self.sent += 1
                self.sent_t.append(time.time())
            try:
                self.sock.sendall(self.make(i + 1, i))
            except OSError:
                return

    def _read(self):
        deadline = time.time() + 120
        while True:
            frame = read_frame_until(self.sock, deadline)
            if frame is None:
                return
            corr, err, off = self.parse(frame)
            with self.lock:
                i = len(self.reports)
                assert corr == i + 1, (corr, i)
                if err == 0:
                    self.reports.append((i, 0, off, time.time()))
                else:
                    self.reports.append((i, None, name(err), time.time()))
                self.lock.notify_all()

    def stop_sending(self):
        with self.lock:
            self.running = False
            self.lock.notify_all()
        self.writer.join(10)

    def wait_answers(self, timeout):
        """Every request sent answered (or the connection gone)."""
        deadline = time.time() + timeout
        while time.time() < deadline and self.reader.is_alive():
            with self.lock:
                if len(self.reports) >= self.sent:
                    return True
            time.sleep(0.05)
        return len(self.reports) >= self.sent

    def close(self):
        self.sock.close()
        self.reader.join(10)

    def failures(self):
        out = {}
        for r in self.reports:
            if r[1] is None:
                out[r[2]] = out.get(r[2], 0) + 1
        return out


def read_frame_until(sock, deadline):
    """(header dict, payload) of the next frame, None at close/deadline."""
    head = verdicts._recv(sock, 8, deadline)
    if head is None:
        return None
    flen, hlen = struct.unpack(">II", head)
    rest = verdicts._recv(sock, flen - 4, deadline)
    if rest is None:
        return None
    return pb_parse(rest[:hlen]), rest[hlen:]


def produce_parse(frame):
    resp, _ = frame
    corr = pb_int(resp, 1)
    if 13 not in resp:
        return corr, pb_int(resp, 2), -1
    res = pb_parse(pb_parse(resp[13][0])[1][0])
    return corr, pb_int(res, 3), pb_int(res, 5)


def commit_parse(frame):
    resp, _ = frame
    corr = pb_int(resp, 1)
    if COMMIT not in resp:
        return corr, pb_int(resp, 2), -1
    return corr, pb_int(pb_parse(resp[COMMIT][0]), 1), 0


def pause_leader(c, part_info, topic, partition):
    """Stop the leader of topic/partition so that writes it holds are on
    the next leader without being acknowledged: the follower that comes
    last in replica order pauses first, for 0.5 s (well under the session
    timeout), so the high watermark stops while the other follower, the
    next leader (the first live ISR member in replica order), goes on
    fetching every new write; then the leader stops and the paused
    follower resumes. Whatever the old leader does on resuming, it cannot
    learn that those writes are replicated (the lagging follower never had
    them). Returns once another broker leads; the caller resumes the
    leader."""
    leader_id = part_info["leader"]
    old = c.brokers[leader_id]
    order = [r for r in part_info["replicas"] if r != leader_id]
    lagging = c.brokers[order[-1]]
    lagging.proc.send_signal(signal.SIGSTOP)
    time.sleep(0.5)
    old.proc.send_signal(signal.SIGSTOP)
    lagging.proc.send_signal(signal.SIGCONT)
    t0 = time.time()
    newp = wait_leader(c.live(but=(leader_id,)), topic, partition,
                       not_leader=leader_id, timeout=20)
    log(f"broker {leader_id} stopped (broker {order[-1]} lagging); broker "
        f"{newp['leader']} leads {topic}/{partition} after "
        f"{time.time() - t0:.1f} s")


def one_round(c, rnd, producers):
    p = wait_leader(c.live(), TOPIC, isr=3, timeout=40)
    old = c.brokers[p["leader"]]
    prod = Pipelined(old, f"r{rnd}", lambda corr, i: produce_request(
        corr, TOPIC, 0, [f"r{rnd}-{i}"], timeout_ms=60000), produce_parse)
    producers.append(prod)
    wait_until("writes acknowledged", lambda: prod.acked() > 200, 20)
    try:
        pause_leader(c, p, TOPIC, 0)
        log(f"round {rnd}: {prod.sent - len(prod.reports)} writes waiting")
        prod.stop_sending()
    finally:
        old.proc.send_signal(signal.SIGCONT)
    assert prod.wait_answers(30), "the resumed leader left writes unanswered"
    prod.close()
    counts = prod.failures()
    log(f"round {rnd}: {prod.sent} sent, {prod.acked()} acknowledged, "
        f"failures {counts}")
    assert counts.get("NOT_LEADER_AFTER_APPEND", 0) + \
        counts.get("NOT_LEADER", 0) > 0, \
        "no write waited on the old leader: the fault missed"
    return counts


def test_waiting_writes_get_indefinite_answers():
    producers = []
    totals = {}
    with Cluster(prefix="weir-fault-lost-") as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", 1,
             "--replication-factor", 3, "--config",
             "min.insync.replicas=2")
        for rnd in range(ROUNDS):
            for k, v in one_round(c, rnd, producers).items():
                totals[k] = totals.get(k, 0) + v
        wait_leader(c.live(), TOPIC, isr=3, timeout=40)
        leader = c.brokers[wait_leader(c.live(), TOPIC)["leader"]]
        weir(leader, "produce", TOPIC, "--acks", "all", input=b"end\n")
        got = wait_until("the drain to reach the last write",
                         lambda: (lambda d: d if "end" in d.values()
                                  else None)(drain(leader, TOPIC)), 30)
    log_vals = {(0, o): v for o, v in got.items()}
    bad, s = history.check(producers, [], (log_vals, []), 1)
    waited = [v for pr in producers for (i, part, nm, _) in pr.reports
              if part is None and nm == "NOT_LEADER_AFTER_APPEND"
              for v in [pr.value(i)]]
    in_log = set(got.values())
    log(f"failures {totals}; of {len(waited)} NOT_LEADER_AFTER_APPEND "
        f"answers, {sum(1 for v in waited if v in in_log)} are in the log")
    log(f"checker: {s['acknowledged']} acknowledged, {s['failed']} "
        f"definite failures, {s['indefinite']} indefinite "
        f"({s['indefinite_in_log']} in the log); violations "
        f"{s['violations']} {s['examples'][:5]}")
    assert bad.total() == 0, s["examples"]
    assert code("NOT_LEADER_AFTER_APPEND") > 0


def find_coordinator(broker, group, timeout=30):
    """(node id, offsets partition) of the group's coordinator."""
    def ok():
        sock = connect_to(broker)
        try:
            sock.sendall(raw_request(1, FIND, pb_msg((1, group))))
            fr = read_frame_until(sock, time.time() + 10)
        finally:
            sock.close()
        if fr is None or FIND not in fr[0]:
            return None
        body = pb_parse(fr[0][FIND][0])
        if pb_int(body, 1) != 0:
            return None
        return pb_int(body, 3), pb_int(body, 6)
    return wait_until(f"the coordinator of {group}", ok, timeout)


def fetch_committed(broker, group, timeout=30):
    """The group's committed offset of t/0 (-1: none), from the broker
    that coordinates it, retried while it loads."""
    def ok():
        sock = connect_to(broker)
        try:
            sock.sendall(raw_request(1, FETCH_OFFSETS, pb_msg((1, group))))
            fr = read_frame_until(sock, time.time() + 10)
        finally:
            sock.close()
        if fr is None or FETCH_OFFSETS not in fr[0]:
            return None
        body = pb_parse(fr[0][FETCH_OFFSETS][0])
        if pb_int(body, 1) != 0:
            return None
        for raw in body.get(3, []):
            m = pb_parse(raw)
            if m.get(1, [b""])[-1] == b"t" and pb_int(m, 2) == 0:
                return (pb_int(m, 3),)
        return (-1,)
    return wait_until(f"the offsets of {group}", ok, timeout)[0]


def raw_request(corr, field, body):
    hdr = pb_msg((1, corr), (2, "it"), (field, body))
    return struct.pack(">II", 4 + len(hdr), len(hdr)) + hdr


def commit_request(corr, offset):
    """An operator's commit (generation -1, no member) of t/0 at offset."""
    part = pb_msg((1, "t"), (2, 0), (3, offset), (4, -1))
    return raw_request(corr, COMMIT, pb_msg((1, GROUP), (2, -1), (3, ""),
                                            (4, [part])))


def commit_round(c, rnd):
    node, part = find_coordinator(c.live(), GROUP)
    p = wait_leader(c.live(), OFFSETS, part, isr=3, timeout=40)
    assert p["leader"] == node, (p, node)
    coord = c.brokers[node]
    base = rnd * 1000000  # offsets of this round: base + 1, base + 2, ...
    com = Pipelined(coord, f"commit{rnd}", lambda corr, i: commit_request(
        corr, base + i + 1), commit_parse)
    wait_until("commits acknowledged", lambda: com.acked() > 200, 20)
    try:
        pause_leader(c, p, OFFSETS, part)
        log(f"round {rnd}: {com.sent - len(com.reports)} commits waiting")
        com.stop_sending()
    finally:
        coord.proc.send_signal(signal.SIGCONT)
    assert com.wait_answers(30), "commits left unanswered"
    com.close()
    acked = [base + i + 1 for (i, ok, _, _) in com.reports if ok is not None]
    answer = {base + i + 1: (nm if ok is None else "OK")
              for (i, ok, nm, _) in com.reports}
    log(f"round {rnd}: {com.sent} commits sent, {len(acked)} acknowledged, "
        f"failures {com.failures()}")
    assert com.failures(), "no commit waited: the fault missed"
    node2, _ = find_coordinator(c.live(), GROUP)
    served = fetch_committed(c.brokers[node2], GROUP)
    nm = answer.get(served, "never sent")
    log(f"round {rnd}: the new coordinator (broker {node2}) serves offset "
        f"{served}, whose commit was answered {nm}")
    assert served >= max(acked), (served, max(acked))
    assert nm == "OK" or not definite(code(nm)), \
        f"the commit of offset {served} failed with {nm} (definite) but " \
        f"took effect"


def test_waiting_commits_get_indefinite_answers():
    """The same for OffsetCommit: an operator's commits (offsets 1, 2, 3,
    ... of t/0, up to 40 in flight) to the coordinator, whose offsets
    partition leader is paused as above, for 2 rounds. The commit the next
    coordinator serves must have been acknowledged or answered with an
    indefinite code (NOT_COORDINATOR_AFTER_APPEND), never with a definite
    failure, and no acknowledged commit may be lost."""
    with Cluster(args=["--offsets-topic-num-partitions", "1"],
                 prefix="weir-fault-lostc-") as c:
        weir(c.brokers[1], "topic", "create", "t", "--partitions", 1)
        for rnd in range(ROUNDS):
            commit_round(c, rnd)

if __name__ == "__main__":
    run_main([test_waiting_writes_get_indefinite_answers,
              test_waiting_commits_get_indefinite_answers])
