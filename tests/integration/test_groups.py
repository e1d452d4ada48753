#!/usr/bin/env python3
"""Consumer groups end to end, with real processes and the CLI as a user
runs it: a weir-controller and three weir-brokers on loopback, a topic with
6 partitions and replication factor 3, `weir produce --acks all --report`
writing unique values, `weir consume TOPIC --group G --format "%p %o %v\\n"`
processes whose stdout is read in threads, and `weir group describe G`
polled and parsed (the MEMBER ... PARTITIONS lines and the TOPIC PARTITION
COMMITTED LOG-END LAG OWNER lines).

Scenarios (the acceptance list of the consumer-group issue):
  test_members_share_partitions   two, then three members while records are
      produced: every record consumed (repeats counted and reported); at
      every observed Stable generation each partition has exactly one owner
      and all 6 are owned; committed offsets never go backwards.
  test_member_kill9               kill -9 of a member: after its session
      timeout its partitions move to the others, which resume exactly at its
      last commit; every produced value is consumed by someone, repeats only
      at or after the killed member's last commit.
  test_coordinator_kill9          kill -9 of the broker coordinating the
      group while the members commit: committed offsets never go backwards
      and consumption continues after the coordinator moved.
  test_zombie_member              kill -STOP of a member past its session
      timeout, the group rebalances without it, kill -CONT: its commit is
      refused (the error is on its stderr) and the committed offsets do not
      go back to its stale position.
  test_reset_offsets              `weir group reset-offsets` --to-earliest,
      --to-offset, --to-datetime on a group without members, dry run, and
      the refusal while a member is live.

The CLI has no session-timeout option: members use the library defaults
(session 10 s, heartbeat 3 s, rebalance 30 s, auto commit every 5 s).

WEIR_GROUP_BENCH=1 adds bench_rebalance (not run by ctest): time from a
member's kill -9, and from a member's clean leave (SIGTERM), until every
partition is owned again, polled with `weir group describe` every 50 ms;
WEIR_GROUP_BENCH_REPS repetitions (default 5), WEIR_GROUP_BENCH_JSON=FILE
writes the numbers as JSON. Every wait is bounded in time."""
import collections
import datetime
import json
import os
import random
import re
import signal
import statistics
import subprocess
import threading
import time

import weirtest
from test_group_coordinator import FIND, call, find
from weirtest import (CLI_BIN, connect, log, pb_int, pb_msg, run_main,
                      wait_until)

TOPIC = "gt"
PARTS = 6
SESSION_S = 10.0  # the CLI's (library default) session timeout
# A member is out of the group at most one session + one heartbeat after
# its death; the rebalance then waits for the others' next heartbeats. On
# this shared machine allow a lot more than that.
REBALANCE_WAIT = 90


class Cluster(weirtest.Cluster):
    def __init__(self):
        super().__init__(args=["--replica-lag-time-max-ms", "3000"],
                         prefix="weir-groups-it-")

    def bootstrap(self, but=()):
        return ",".join(b.addr for i, b in self.brokers.items()
                        if i not in but and b.proc and b.proc.poll() is None)

    def cli(self, *args, input=None, timeout=60, check=True, but=()):
        cmd = [CLI_BIN, "--bootstrap", self.bootstrap(but)] + [
            str(a) for a in args]
        p = subprocess.run(cmd, input=input, capture_output=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(
                f"{' '.join(cmd)} exited {p.returncode}\nstdout: "
                f"{p.stdout[-2000:]!r}\nstderr: {p.stderr[-2000:]!r}")
        return p

    def create(self, topic=TOPIC):
        self.cli("topic", "create", topic, "--partitions", PARTS,
                 "--replication-factor", 3)

        def settled():
            st = self.state()
            ps = [st["partitions"].get((topic, p)) for p in range(PARTS)]
            return all(q and q["leader"] > 0 and len(q["isr"]) == 3
                       for q in ps)
        wait_until(f"topic {topic} led with full ISRs", settled, 30)

    def group_state_log(self, group):
        """The brokers' event=group_state lines for group (evidence)."""
        out = []
        for i, b in self.brokers.items():
            for ln in b.log_text().splitlines():
                if "event=group_state" in ln and f"group={group} " in ln:
                    out.append(f"broker {i}: {ln}")
        return sorted(out, key=lambda s: s.split("ts=", 1)[-1])


# ---- processes ------------------------------------------------------------

class Producer:
    """`weir produce --acks all --report` fed k<i>:v<i> lines (keyed, so the
    records spread over the partitions) at a steady pace from a thread."""

    def __init__(self, c, topic=TOPIC, rate=300, chunk=10, prefix="v"):
        self.proc = subprocess.Popen(
            [CLI_BIN, "--bootstrap", c.bootstrap(), "produce", topic,
             "--acks", "all", "--report", "--key-separator", ":",
             "--linger-ms", "2"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.prefix = prefix
        self.sent = 0
        self.lines = []
        self.errors = []
        self.stopping = threading.Event()
        self.rate, self.chunk = rate, chunk
        self.threads = [threading.Thread(target=f, daemon=True) for f in
                        (self._write, self._read, self._read_err)]
        for t in self.threads:
            t.start()

    def _write(self):
        period = self.chunk / self.rate
        try:
            while not self.stopping.is_set():
                data = "".join(f"k{i}:{self.prefix}{i}\n" for i in range(
                    self.sent, self.sent + self.chunk)).encode()
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
                self.sent += self.chunk
                time.sleep(period)
        except (BrokenPipeError, ValueError):
            pass

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.decode().strip())

    def _read_err(self):
        for line in self.proc.stderr:
            self.errors.append(line.decode().strip())

    def wait_progress(self, n, timeout=60):
        start = len(self.lines)
        wait_until(f"{n} more acknowledgements", lambda: len(
            self.lines) >= start + n and self.proc.poll() is None, timeout)

    def stop(self, timeout=120):
        self.stopping.set()
        self.threads[0].join(10)
        self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        for t in self.threads[1:]:
            t.join(10)
        assert len(self.lines) == self.sent, \
            f"{len(self.lines)} report lines for {self.sent} records"
        return rc

    def acked(self):
        """{(partition, offset): value} of the acknowledged records."""
        out = {}
        for i, ln in enumerate(self.lines):
            if not ln.startswith("ERROR"):
                p, o = map(int, ln.split())
                out[(p, o)] = f"{self.prefix}{i}"
        return out

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class Consumer:
    """`weir consume TOPIC --group G --format '%p %o %v\\n'`; its stdout
    lines are parsed as they come (the CLI's stdout is a pipe here, as when
    a user pipes it into another program)."""

    def __init__(self, c, group, topic=TOPIC, extra=("--from-beginning",),
                 name="c"):
        self.name = name
        self.cmd = [CLI_BIN, "--bootstrap", c.bootstrap(), "consume", topic,
                    "--group", group, "--format", r"%p %o %v\n"] + list(extra)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.recs = []  # (time, partition, offset, value)
        self.partial = None
        self.err = []
        self.threads = [threading.Thread(target=f, daemon=True)
                        for f in (self._read, self._read_err)]
        for t in self.threads:
            t.start()

    def _read(self):
        for line in self.proc.stdout:
            if not line.endswith(b"\n"):
                # cut short: the process died with part of a line written
                self.partial = line
                continue
            p, o, v = line.decode().rstrip("\n").split(" ", 2)
            self.recs.append((time.time(), int(p), int(o), v))

    def _read_err(self):
        for line in self.proc.stderr:
            self.err.append(line.decode().rstrip())

    def _join(self):
        for t in self.threads:
            t.join(10)

    def term(self, sig=signal.SIGTERM, timeout=60):
        """Clean exit: commits, leaves the group, flushes stdout."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        self._join()
        return rc

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._join()

    def cleanup(self):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.proc.kill()
            self.proc.wait(10)


# ---- weir group describe ---------------------------------------------------

def describe(c, group, but=()):
    """`weir group describe` parsed, or None if it failed (e.g. while the
    coordinator moves): {'state', 'generation', 'members': {id: set of
    (topic, partition)}, 'parts': {partition: dict(committed, end, lag,
    owner)}, 'text'}."""
    try:
        p = c.cli("group", "describe", group, check=False, timeout=30,
                  but=but)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        return None
    text = p.stdout.decode()
    d = {"state": None, "generation": None, "members": {}, "parts": {},
         "text": text, "time": time.time()}
    section = None
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "group" and "state" in w:
            d["state"] = w[w.index("state") + 1]
            d["generation"] = int(w[w.index("generation") + 1])
        elif w[:2] == ["MEMBER", "CLIENT"]:
            section = "members"
        elif w[:2] == ["TOPIC", "PARTITION"]:
            section = "parts"
        elif section == "members":
            parts = set()
            if w[-1] != "-":
                for tp in w[-1].split(","):
                    t, q = tp.rsplit(":", 1)
                    parts.add((t, int(q)))
            d["members"][w[0]] = parts
        elif section == "parts" and w[0] == TOPIC_OF.get(group, TOPIC):
            d["parts"][int(w[1])] = {"committed": int(w[2]),
                                     "end": int(w[3]), "lag": int(w[4]),
                                     "owner": w[5]}
    return d


TOPIC_OF = {}  # group -> topic, for groups that read another topic


def owners(d, topic=TOPIC):
    """{partition: [member ids]} of a described group."""
    out = collections.defaultdict(list)
    for m, parts in d["members"].items():
        for t, p in parts:
            if t == topic:
                out[p].append(m)
    return out


def assignment_problems(d, topic=TOPIC):
    """What is wrong with a Stable generation's assignment ([] if fine)."""
    own = owners(d, topic)
    probs = [f"partition {p} owned by {m}" for p, m in sorted(own.items())
             if len(m) != 1]
    missing = sorted(set(range(PARTS)) - set(own))
    if missing:
        probs.append(f"partitions {missing} owned by nobody")
    extra = sorted(set(own) - set(range(PARTS)))
    if extra:
        probs.append(f"unknown partitions {extra} owned")
    return probs


def all_owned(d, n_members=None, without=(), topic=TOPIC):
    """d if it is Stable, every partition owned by exactly one member, and
    (optionally) with n members, none of `without`."""
    if d is None or d["state"] != "Stable" or assignment_problems(d, topic):
        return None
    if n_members is not None and len(d["members"]) != n_members:
        return None
    if set(without) & set(d["members"]):
        return None
    return d


class Watch:
    """Polls `weir group describe` in a thread: checks every Stable
    generation's assignment and that committed offsets never go
    backwards."""

    def __init__(self, c, group, period=0.2, topic=TOPIC):
        self.c, self.group, self.period, self.topic = c, group, period, topic
        self.samples = []
        self.problems = []
        self.gens = {}  # generation -> {partition: owner}
        self.but = ()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        last = {}
        while not self.stopping.is_set():
            d = describe(self.c, self.group, but=self.but)
            if d is not None:
                self.samples.append(d)
                self._check(d, last)
            self.stopping.wait(self.period)

    def _check(self, d, last):
        for p, e in d["parts"].items():
            if e["committed"] < last.get(p, -1):
                self.problems.append(
                    f"partition {p}: committed went back from {last[p]} "
                    f"to {e['committed']} (generation {d['generation']})")
            last[p] = max(last.get(p, -1), e["committed"])
        if d["state"] != "Stable":
            return
        probs = assignment_problems(d, self.topic)
        if probs:
            self.problems.append(f"generation {d['generation']}: {probs}\n"
                                 + d["text"])
        own = {p: m[0] for p, m in owners(d, self.topic).items()}
        seen = self.gens.setdefault(d["generation"], own)
        if seen != own:
            self.problems.append(f"generation {d['generation']} changed its "
                                 f"assignment: {seen} then {own}")

    def committed(self, before=None, after=None):
        """Per partition: all committed values sampled in the window."""
        out = collections.defaultdict(list)
        for d in self.samples:
            if (before is None or d["time"] < before) and (
                    after is None or d["time"] > after):
                for p, e in d["parts"].items():
                    out[p].append(e["committed"])
        return out

    def stop(self):
        self.stopping.set()
        self.thread.join(60)
        return self

    def check(self):
        stable = sorted(self.gens)
        log(f"watch {self.group}: {len(self.samples)} samples, Stable "
            f"generations {stable}")
        assert not self.problems, "\n".join(self.problems[:10])
        assert stable, "no Stable generation observed"


def wait_group(c, group, what, fn, timeout=REBALANCE_WAIT, step=0.2, but=()):
    """Poll describe until fn(d) is true; returns that d."""
    def ok():
        d = describe(c, group, but=but)
        return d if d is not None and fn(d) else None
    try:
        return wait_until(what, ok, timeout, step)
    except AssertionError:
        log("group state history:\n" + "\n".join(
            c.group_state_log(group)[-30:]))
        raise


def wait_drained(c, group, timeout=90, but=()):
    """Every partition's committed offset at its log end (the members
    commit every 5 s)."""
    return wait_group(c, group, "committed offsets at the log end", lambda d:
                      len(d["parts"]) == PARTS and all(
                          e["committed"] == e["end"] for e in
                          d["parts"].values()), timeout, 0.5, but)


def wait_commits(c, group, timeout=60):
    """Every partition has a committed offset > 0."""
    return wait_group(c, group, "a commit on every partition", lambda d:
                      len(d["parts"]) == PARTS and all(
                          e["committed"] > 0 for e in d["parts"].values()),
                      timeout, 0.5)


def check_consumed(prod, consumers, what):
    """Every acknowledged value was consumed at its (partition, offset);
    nothing consumed is unknown. Returns (Counter of (p, o), missing)."""
    acked = prod.acked()
    seen = collections.Counter()
    for k in consumers:
        for _, p, o, v in k.recs:
            assert acked.get((p, o), v) == v, \
                f"{k.name} read {v} at {p}/{o}, acknowledged as {acked[(p, o)]}"
            seen[(p, o)] += 1
    missing = sorted(set(acked) - set(seen))
    repeats = sum(n - 1 for n in seen.values() if n > 1)
    log(f"{what}: {len(acked)} acknowledged, {sum(seen.values())} consumed "
        f"by {len(consumers)} members, {len(missing)} never consumed, "
        f"{repeats} consumed more than once "
        f"({sum(1 for n in seen.values() if n > 1)} records)")
    return seen, missing


def cleanup(*things):
    for t in things:
        try:
            t.cleanup()
        except Exception as e:  # keep cleaning the others
            log(f"cleanup: {e!r}")


# ---- scenarios -------------------------------------------------------------

def test_members_share_partitions():
    group = "g-share"
    with Cluster() as c:
        c.create()
        ks, prod, watch = [], None, None
        try:
            ks = [Consumer(c, group, name=f"c{i}") for i in (1, 2)]
            d2 = wait_group(c, group, "2 members owning all partitions",
                            lambda d: all_owned(d, 2))
            watch = Watch(c, group)
            prod = Producer(c)
            prod.wait_progress(1500)
            ks.append(Consumer(c, group, name="c3"))
            d3 = wait_group(c, group, "3 members owning all partitions",
                            lambda d: all_owned(d, 3) and d["generation"] >
                            d2["generation"])
            log(f"generation {d2['generation']}: 2 members; generation "
                f"{d3['generation']}: 3 members, "
                + ", ".join(f"{len(v)} partitions" for v in
                            d3["members"].values()))
            prod.wait_progress(1500)
            assert prod.stop() == 0, prod.errors
            wait_drained(c, group)
            watch.stop()
            for k in ks:
                assert k.term() == 0, (k.name, k.err)
            watch.check()
            assert len(watch.gens) >= 2, watch.gens
            seen, missing = check_consumed(prod, ks, "2 then 3 members")
            assert not missing, f"never consumed: {missing[:20]}"
        finally:
            if watch:
                watch.stop()
            cleanup(*ks, *([prod] if prod else []))


def test_member_kill9():
    group = "g-kill"
    with Cluster() as c:
        c.create()
        ks, prod, watch = [], None, None
        try:
            ks = [Consumer(c, group, name=f"c{i}") for i in (1, 2, 3)]
            wait_group(c, group, "3 members owning all partitions",
                       lambda d: all_owned(d, 3))
            watch = Watch(c, group)
            prod = Producer(c)
            prod.wait_progress(1000)
            wait_commits(c, group)
            before = wait_group(c, group, "Stable with 3 members",
                                lambda d: all_owned(d, 3))
            victim = ks[0]
            victim.kill9()
            t0 = time.time()
            log(f"kill -9 of {victim.name} (generation "
                f"{before['generation']})")
            # its last commit: a commit it sent just before dying has
            # landed within 2 s; its session lasts 10 s
            time.sleep(2)
            at_kill = wait_until("describe", lambda: describe(c, group), 60)
            after = wait_group(
                c, group, "the others owning every partition",
                lambda d: all_owned(d, 2) and d["generation"] >
                before["generation"])
            t1 = time.time()
            gone = set(before["members"]) - set(after["members"])
            assert len(gone) == 1, (before["text"], after["text"])
            vid = gone.pop()
            vparts = sorted(p for _, p in before["members"][vid])
            last = {p: at_kill["parts"][p]["committed"] for p in vparts}
            log(f"{victim.name} was {vid}, owned {vparts}, last commits "
                f"{last}; partitions owned again {t1 - t0:.1f} s after "
                f"the kill (session {SESSION_S:.0f} s)")
            # removed one session after it was last heard from (at most
            # one 3 s heartbeat interval before the kill)
            assert t1 - t0 >= SESSION_S - 3 - 1, \
                "partitions moved before the session timeout"
            prod.wait_progress(1500)
            assert prod.stop() == 0, prod.errors
            wait_drained(c, group)
            watch.stop()
            for k in ks[1:]:
                assert k.term() == 0, (k.name, k.err)
            watch.check()
            # the new owners resume exactly at the last commit
            for p in vparts:
                offs = [o for k in ks[1:] for _, q, o, _ in k.recs if q == p]
                assert offs, f"nobody read partition {p} after the kill"
                assert min(offs) == max(last[p], 0), \
                    (p, min(offs), last[p])
            seen, missing = check_consumed(prod, ks, "kill -9 of a member")
            dup = [(p, o) for (p, o), n in seen.items() if n > 1]
            bad = [(p, o) for p, o in dup if p not in vparts or o < last[p]]
            log(f"repeats: {len(dup)} records, all in {vparts} at or after "
                f"the last commit" if not bad else f"repeats: {bad[:20]}")
            assert not bad, f"repeats before the last commit: {bad[:20]}"
            log(f"{victim.name} wrote {len(victim.recs)} whole lines before "
                f"the kill, then {victim.partial!r} (a line cut short)")
            if missing:
                log("group state history:\n" + "\n".join(
                    c.group_state_log(group)[-8:]))
            # every produced value is consumed by someone: the records
            # below the victim's last commit were its own to print
            vout = {(p, o) for _, p, o, _ in victim.recs}
            lost = [(p, o) for p, o in missing
                    if p in vparts and o < last[p] and (p, o) not in vout]
            assert not missing, (
                f"{len(missing)} acknowledged records never consumed, "
                f"{len(lost)} of them below {victim.name}'s last commit "
                f"{last} but absent from its stdout ({len(victim.recs)} "
                f"lines; max offset written per partition "
                f"{ {p: max([o for _, q, o, _ in victim.recs if q == p], default=-1) for p in vparts} }): "
                f"committed but never written out; first: {missing[:10]}")
        finally:
            if watch:
                watch.stop()
            cleanup(*ks, *([prod] if prod else []))


def offsets_partition_of(c, group):
    """(coordinator node, __consumer_offsets partition) from a raw
    FindCoordinator."""
    node, _ = find(c.brokers[1], group, timeout=30)
    sock = connect(c.brokers[1])
    try:
        r = call(sock, 2, FIND, pb_msg((1, group)))
    finally:
        sock.close()
    return node, pb_int(r, 6)


def test_coordinator_kill9():
    group = "g-coord"
    with Cluster() as c:
        c.create()
        node, part = offsets_partition_of(c, group)
        st = c.state()
        leader = st["partitions"][("__consumer_offsets", part)]["leader"]
        assert leader == node, (node, part, st["text"])
        log(f"coordinator of {group}: broker {node} (leader of "
            f"__consumer_offsets {part})")
        ks, prod, watch = [], None, None
        try:
            ks = [Consumer(c, group, name=f"c{i}") for i in (1, 2, 3)]
            wait_group(c, group, "3 members owning all partitions",
                       lambda d: all_owned(d, 3))
            watch = Watch(c, group)
            prod = Producer(c)
            prod.wait_progress(1000)
            wait_commits(c, group)
            prod.wait_progress(1000)  # a few more commits
            watch.but = (node,)
            time.sleep(0.5)
            c.brokers[node].kill9()
            t0 = time.time()
            pre = {p: max(v) for p, v in watch.committed(before=t0).items()}
            log(f"kill -9 of broker {node}, the coordinator; committed "
                f"before: {pre}")
            others = [i for i in (1, 2, 3) if i != node]
            node2, _ = wait_until("a new coordinator", lambda: (
                lambda r: r if r[0] != node else None)(
                    find(c.brokers[others[0]], group, timeout=30)), 60)
            log(f"new coordinator: broker {node2} after "
                f"{time.time() - t0:.1f} s")
            d = wait_group(c, group, "commits past those before the kill",
                           lambda d: len(d["parts"]) == PARTS and all(
                               d["parts"][p]["committed"] > pre.get(p, -1)
                               for p in range(PARTS)), 90, 0.5,
                           but=(node,))
            log(f"every partition committed past its pre-kill offset "
                f"{time.time() - t0:.1f} s after the kill (generation "
                f"{d['generation']}, {len(d['members'])} members)")
            wait_group(c, group, "Stable with 3 members owning everything",
                       lambda d: all_owned(d, 3), but=(node,))
            prod.wait_progress(500)
            assert prod.stop() == 0, prod.errors
            wait_drained(c, group, but=(node,))
            watch.stop()
            for k in ks:
                assert k.term() == 0, (k.name, k.err)
            watch.check()
            post = watch.committed(after=t0)
            assert all(post.get(p) for p in range(PARTS)), \
                "no describe answered after the kill"
            seen, missing = check_consumed(prod, ks, "coordinator kill -9")
            assert not missing, f"never consumed: {missing[:20]}"
        finally:
            if watch:
                watch.stop()
            cleanup(*ks, *([prod] if prod else []))


def test_zombie_member():
    group = "g-zombie"
    with Cluster() as c:
        c.create()
        ks, prod, watch = [], None, None
        try:
            ks = [Consumer(c, group, name=f"c{i}") for i in (1, 2)]
            wait_group(c, group, "2 members owning all partitions",
                       lambda d: all_owned(d, 2))
            watch = Watch(c, group)
            prod = Producer(c, rate=200)
            prod.wait_progress(1000)
            wait_commits(c, group)
            before = wait_group(c, group, "Stable with 2 members",
                                lambda d: all_owned(d, 2))
            zombie = ks[0]
            zombie.proc.send_signal(signal.SIGSTOP)
            t0 = time.time()
            # an upper bound of its position: the log ends once it stopped
            time.sleep(0.5)
            stale = {p: e["end"] for p, e in wait_until(
                "describe", lambda: describe(c, group), 6)["parts"].items()}
            after = wait_group(
                c, group, "a generation without the stopped member",
                lambda d: all_owned(d, 1) and d["generation"] >
                before["generation"])
            zid = (set(before["members"]) - set(after["members"])).pop()
            zparts = sorted(p for _, p in before["members"][zid])
            log(f"kill -STOP of {zombie.name} ({zid}, owned {zparts}); "
                f"generation {after['generation']} without it "
                f"{time.time() - t0:.1f} s later")
            ahead = wait_group(
                c, group, "the survivor committed past the zombie's position",
                lambda d: all(d["parts"][p]["committed"] > stale[p]
                              for p in zparts), 60, 0.5)
            pre = {p: ahead["parts"][p]["committed"] for p in range(PARTS)}
            errs_before = len(zombie.err)
            zombie.proc.send_signal(signal.SIGCONT)
            t1 = time.time()
            log(f"kill -CONT of {zombie.name}; committed {pre}, its stale "
                f"position at most {stale}")
            # it either learns it was evicted from a refused commit (an
            # error on its stderr) or, its own session clock having run
            # out, gives its partitions up without committing and joins
            # again as a new member; either way no commit of it lands
            def fenced_or_back():
                line = next((e for e in zombie.err[errs_before:] if
                             re.search(r"UNKNOWN_MEMBER|ILLEGAL_GENERATION|"
                                       r"REBALANCE", e, re.I)), None)
                if line is not None:
                    return line
                d = describe(c, group)
                if (d["state"] == "Stable" and len(d["members"]) == 2 and
                        zid not in d["members"]):
                    return f"rejoined: generation {d['generation']}"
                return None
            try:
                line = wait_until("the zombie fenced or back as a new member",
                                  fenced_or_back, 60, step=0.5)
            except AssertionError:
                log(f"{zombie.name} exit {zombie.proc.poll()} stderr "
                    f"{zombie.err[-5:]} group {describe(c, group)}")
                raise
            log(f"{zombie.name}: {line!r} (exit status "
                f"{zombie.proc.poll()})")
            time.sleep(6)  # past an auto-commit interval
            prod.wait_progress(300)
            assert prod.stop() == 0, prod.errors
            wait_drained(c, group)
            watch.stop()
            for k in ks:
                rc = k.term()
                assert rc in ((0, 1) if k is zombie else (0,)), (k.name, rc,
                                                                 k.err)
            watch.check()
            for p, vals in watch.committed(after=t1).items():
                assert min(vals) >= pre[p], \
                    f"partition {p}: committed went back to {min(vals)} " \
                    f"(was {pre[p]}, zombie position <= {stale[p]})"
            late = [(p, o) for t, p, o, _ in zombie.recs if t > t1]
            log(f"{zombie.name} wrote {len(late)} records after kill -CONT "
                f"(partitions {sorted({p for p, _ in late})}; offsets up to "
                f"{ {p: max(o for q, o in late if q == p) for p in {p for p, _ in late}} }"
                f"), before it found it was fenced")
            seen, missing = check_consumed(prod, ks, "zombie member")
            assert not missing, f"never consumed: {missing[:20]}"
        finally:
            if watch:
                watch.stop()
            cleanup(*ks, *([prod] if prod else []))


def produce_batch(c, topic, values):
    """Keyed records; returns {(p, o): value}."""
    data = "".join(f"k{v}:{v}\n" for v in values).encode()
    p = c.cli("produce", topic, "--acks", "all", "--report",
              "--key-separator", ":", input=data, timeout=60)
    out = {}
    for v, ln in zip(values, p.stdout.decode().splitlines()):
        q, o = map(int, ln.split())
        out[(q, o)] = v
    assert len(out) == len(values), p.stdout
    return out


def consume_once(c, group, topic, n, timeout_ms=15000):
    """One member reads n records (or stops after timeout_ms without one)
    and leaves; returns its (p, o, v) list."""
    p = c.cli("consume", topic, "--group", group, "--format", r"%p %o %v\n",
              "--max-messages", n, "--timeout-ms", timeout_ms, timeout=120)
    out = []
    for ln in p.stdout.decode().splitlines():
        q, o, v = ln.split(" ", 2)
        out.append((int(q), int(o), v))
    return out


def reset(c, group, topic, *how, execute=True, check=True):
    p = c.cli("group", "reset-offsets", group, "--topic", topic, *how,
              *(["--execute"] if execute else []), check=check)
    rows = {}
    for ln in p.stdout.decode().splitlines():
        t, q, old, new = ln.split()
        assert t == topic, ln
        rows[int(q)] = (int(old), int(new))
    return p, rows


def committed(c, group):
    d = describe(c, group)
    assert d is not None
    return {p: e["committed"] for p, e in d["parts"].items()}, d


def test_reset_offsets():
    group, topic = "g-reset", "gr"
    TOPIC_OF[group] = topic
    with Cluster() as c:
        c.create(topic)
        first = produce_batch(c, topic, [f"a{i}" for i in range(60)])
        time.sleep(2)
        mid = datetime.datetime.now(datetime.timezone.utc)
        time.sleep(2)
        second = produce_batch(c, topic, [f"b{i}" for i in range(60)])
        every = {**first, **second}
        ends = {p: 1 + max([o for q, o in every if q == p], default=-1)
                for p in range(PARTS)}
        assert sum(1 for e in ends.values() if e > 0) >= 3, ends
        got = c.cli("consume", topic, "--group", group, "--from-beginning",
                    "--format", r"%p %o %v\n", "--max-messages", 120,
                    "--timeout-ms", 20000, timeout=120)
        assert len(got.stdout.decode().splitlines()) == 120
        offs, _ = committed(c, group)
        assert offs == ends, (offs, ends)

        def expect(start):
            return sorted((p, o, v) for (p, o), v in every.items()
                          if o >= start[p])

        # dry run: OLD NEW lines, nothing changes
        p, rows = reset(c, group, topic, "--to-earliest", execute=False)
        assert rows == {q: (ends[q], 0) for q in range(PARTS)}, rows
        assert b"dry run" in p.stderr, p.stderr
        assert committed(c, group)[0] == ends
        # --to-earliest
        _, rows = reset(c, group, topic, "--to-earliest")
        assert rows == {q: (ends[q], 0) for q in range(PARTS)}, rows
        assert committed(c, group)[0] == {q: 0 for q in range(PARTS)}
        out = consume_once(c, group, topic, 120)
        assert sorted(out) == expect({q: 0 for q in range(PARTS)}), out
        log("--to-earliest: all 120 records read again, once each")
        # --to-offset N (clamped to the log end)
        n = 5
        _, rows = reset(c, group, topic, "--to-offset", n)
        start = {q: min(n, ends[q]) for q in range(PARTS)}
        assert rows == {q: (ends[q], start[q]) for q in range(PARTS)}, rows
        want = expect(start)
        out = consume_once(c, group, topic, len(want))
        assert sorted(out) == want, (out, want)
        log(f"--to-offset {n}: the {len(want)} records at offsets >= {n}")
        # --to-datetime between the two batches
        iso = mid.strftime("%Y-%m-%dT%H:%M:%S.") + \
            f"{mid.microsecond // 1000:03d}Z"
        _, rows = reset(c, group, topic, "--to-datetime", iso)
        start = {q: min([o for (p, o) in second if p == q], default=ends[q])
                 for q in range(PARTS)}
        assert rows == {q: (ends[q], start[q]) for q in range(PARTS)}, \
            (rows, start)
        out = consume_once(c, group, topic, 60)
        assert sorted(out) == sorted((p, o, v) for (p, o), v in
                                     second.items()), out
        log(f"--to-datetime {iso}: exactly the 60 records of the second "
            f"batch")
        # refused while a member is live
        k = Consumer(c, group, topic=topic, extra=(), name="live")
        try:
            wait_group(c, group, "one live member",
                       lambda d: d["state"] == "Stable" and len(
                           d["members"]) == 1, 60)
            offs, _ = committed(c, group)
            p, rows = reset(c, group, topic, "--to-earliest", check=False)
            assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
            msg = p.stderr.decode()
            assert "live member" in msg and group in msg, msg
            assert not rows, rows
            log(f"reset with a live member: exit 1, {msg.strip()!r}")
            assert committed(c, group)[0] == offs
        finally:
            assert k.term() == 0, k.err
            k.cleanup()


# ---- benchmark -------------------------------------------------------------

def time_until_owned(c, group, gen, n, period=0.05, timeout=REBALANCE_WAIT):
    """Seconds (from now) until describe shows a Stable generation > gen
    with n members owning every partition; describe every `period`."""
    t0 = time.time()
    deadline = t0 + timeout
    nxt = t0
    while time.time() < deadline:
        d = describe(c, group)
        if all_owned(d, n) and d["generation"] > gen:
            return d["time"] - t0, d
        nxt += period
        time.sleep(max(0.0, nxt - time.time()))
    raise AssertionError(f"partitions not owned again after {timeout} s")


def bench_rebalance():
    reps = int(os.environ.get("WEIR_GROUP_BENCH_REPS", "5"))
    group = "g-bench"
    rng = random.Random(int(os.environ.get("WEIR_GROUP_BENCH_SEED", "1")))
    res = {"kill9": [], "leave": [], "leave_exit": [],
           "session_timeout_s": SESSION_S}
    with Cluster() as c:
        c.create()
        ks, prod = [], None
        try:
            ks = [Consumer(c, group, name=f"c{i}") for i in (1, 2, 3)]
            prod = Producer(c, rate=100)
            for kind in ("kill9", "leave"):
                for r in range(reps):
                    d = wait_group(c, group, "3 members owning everything",
                                   lambda d: all_owned(d, 3))
                    # a random phase against the members' 3 s heartbeats
                    # (a fixed pause would measure one point of it)
                    time.sleep(rng.uniform(0.5, 3.5))
                    k = ks.pop(0)
                    t0 = time.time()
                    if kind == "kill9":
                        k.kill9()
                    else:
                        k.proc.send_signal(signal.SIGTERM)
                    _, d2 = time_until_owned(c, group, d["generation"], 2)
                    dt = d2["time"] - t0  # kill / signal to the answer
                    if kind == "leave":
                        rc = k.proc.wait(60)
                        k._join()
                        assert rc == 0, (rc, k.err)
                        res["leave_exit"].append(rc)
                    res[kind].append(dt)
                    log(f"{kind} {r + 1}/{reps}: every partition owned "
                        f"again after {dt * 1000:.0f} ms (generation "
                        f"{d2['generation']})")
                    ks.append(Consumer(c, group, name=f"c{kind}{r}"))
            prod.stop()
        finally:
            cleanup(*ks, *([prod] if prod else []))
    for kind in ("kill9", "leave"):
        xs = res[kind]
        log(f"{kind}: n={len(xs)} p50={statistics.median(xs) * 1000:.0f} ms "
            f"max={max(xs) * 1000:.0f} ms all="
            f"{[round(x * 1000) for x in xs]}")
    if os.environ.get("WEIR_GROUP_BENCH_JSON"):
        with open(os.environ["WEIR_GROUP_BENCH_JSON"], "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    tests = [
        test_members_share_partitions,
        test_member_kill9,
        test_coordinator_kill9,
        test_zombie_member,
        test_reset_offsets,
    ]
    if os.environ.get("WEIR_GROUP_BENCH") == "1":
        tests.append(bench_rebalance)
    run_main(tests)
