#!/usr/bin/env python3
"""Weir's failover harness: faults against a running cluster while
idempotent acks=all producers and a consumer group work, then a checker
over the whole history.

    tests/chaos/chaos.py [--env auto|compose|process] [--scenarios A,B]
                         [--long] [--flap-s S] [--kills N] [--json FILE]

The topic has 6 partitions, replication factor 3 and min.insync.replicas
2. Two `weir produce --acks all` processes write unique values; three
`weir consume --group` processes read and commit. Scenarios run one after
another against the same cluster and workload; each fault is checked to
have taken effect (the process or container is down, leadership moved)
before it counts, then healed, and the cluster is back to full ISRs before
the next. After the last one the producers finish, the consumers leave,
the topic is drained from every partition, and the checker runs
(history.py). A results table is printed and written as JSON; the exit
status is 0 only if every rule held and every scenario ran.

The controller runs as a quorum of three (over mutual TLS in the TLS
runs; one controller with SCRAM, where the quorum scenarios are
skipped). controller-kill kills -9 the active controller (twice: the second
time another member is active); controller-leader-kill kills the active
controller and partition 0's leader together (in effect once the
partition has a new leader); controller-wipe kills the active controller,
empties its data dir and restarts it (it must rejoin and catch up);
controller-isolate cuts the active controller off from the other members
but not from brokers (it must step down and another become active in a
higher term). After the run every member's applied metadata history
(`event=applied` lines) must agree on the term of every index: a record
of a deposed active controller applied anywhere would show as two terms.

Partial partitions (one link cut, the rest up; with the controller
quorum, skipped with TLS): iptables DROP rules inside one node's network
namespace (process) or container's namespace (compose, by nsenter),
whose packet counters must show drops before the fault counts, and
which must be gone after the heal. leader-controller-cut (partition 4's leader <-> the
active controller: fenced, partitions moved), leader-followers-cut (a
leader <-> both followers: its ISRs shrink to itself, it must not ack),
follower-leader-cut (one follower <-> its leader: it leaves that leader's
ISRs), clients-leader-cut (the harness's clients <-> a leader that still
reaches everyone else: it stays leader with full ISRs), controller-broker-
cut (the active controller <-> the broker leading most: fenced),
link-flap (a leader <-> a follower cut 3 s, healed 3 s, for --flap-s
seconds, default 60) and one-way-cut (leader -> follower dropped, follower
-> leader delivered, counted by an ACCEPT rule: the follower leaves the
ISRs). leader-controller-cut and clients-leader-cut run by default; the
others only with --long (or named in --scenarios).

--env auto (the default) uses docker-compose when a Docker engine answers,
else local processes. WEIR_KEEP_TMP=1 keeps the logs."""
import argparse
import calendar
import json
import os
import re
import subprocess
import sys
import time

import envs
import history
from envs import IDS, log, wait_until

TOPIC = "chaos"
PARTS = 6
GROUP = "chaos-group"
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTS = 12
FLAP_PERIOD_S = 6.0  # link-flap: 3 s cut, 3 s healed

# partial partitions, one link cut and the rest up (network namespaces):
# two quick ones (about 10 s each, in both environments) run by default,
# the rest in the long tier (those waiting for an ISR to shrink take 30 s
# or more in compose, whose brokers keep the default replica lag time)
PARTIAL_SCENARIOS = ("leader-controller-cut", "leader-followers-cut",
                     "follower-leader-cut", "clients-leader-cut",
                     "controller-broker-cut", "link-flap", "one-way-cut")
SCENARIOS = ("leader-kill", "leader-stop", "leader-pause", "leader-isolate",
             "controller-kill", "controller-leader-kill", "controller-wipe",
             "controller-isolate", "leader-controller-cut",
             "clients-leader-cut",
             "coordinator-kill", "all-brokers-kill")
# the long tier (--long, ctest label chaos-long; not in tests/run.sh)
LONG_SCENARIOS = tuple(s for s in PARTIAL_SCENARIOS if s not in SCENARIOS)
# need the controller quorum (not run with TLS: one controller there; the
# partial cuts also need the clients' address apart from the controller's)
QUORUM_SCENARIOS = ("controller-leader-kill", "controller-wipe",
                    "controller-isolate") + PARTIAL_SCENARIOS


def fnv1a(s):
    h = 2166136261
    for b in s.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


class Run:
    def __init__(self, env):
        self.env = env
        self.producers, self.consumers = [], []
        self.faults = []
        self.skipped = {}
        self.notes = []
        self.generation = 0
        self.flap_s = 60
        self.counts = []

    # -- workload -----------------------------------------------------
    def start_workload(self):
        for k in range(2):
            self.producers.append(history.Producer(self.env.cli(), TOPIC,
                                                   f"p{k}", rate=1000))
        for k in range(3):
            self.consumers.append(history.Consumer(self.env.cli(), TOPIC,
                                                   GROUP, f"c{k}"))

    def acked(self):
        return sum(p.acked() for p in self.producers)

    def keep_workload(self):
        """A consumer that exited (e.g. an error that lasted too long) is
        replaced, and said so; its history stays in the record."""
        for c in list(self.consumers):
            if not c.alive() and not getattr(c, "replaced", False):
                c.replaced = True
                log(f"consumer {c.name} exited {c.proc.returncode}: "
                    f"{c.stderr[-3:]}; starting another")
                self.consumers.append(history.Consumer(
                    self.env.cli(), TOPIC, GROUP,
                    f"{c.name}r{len(self.consumers)}"))
        for p in self.producers:
            if not p.alive():
                raise AssertionError(f"producer {p.name} exited "
                                     f"{p.proc.returncode}: {p.stderr[-5:]}")

    def progress(self, n, timeout=60):
        start = self.acked()
        wait_until(f"{n} more acknowledged writes",
                   lambda: self.acked() >= start + n, timeout, step=0.2)

    # -- cluster state --------------------------------------------------
    def parts(self, but=(), topic=TOPIC):
        st = self.env.state(but)
        return {p: q for (t, p), q in st["partitions"].items() if t == topic}

    def led_by(self, b):
        return sorted(p for p, q in self.parts().items() if q["leader"] == b)

    def moved_from(self, b, parts, topic=TOPIC):
        """True when every partition in parts has a live leader other than
        b, as the brokers other than b see it."""
        ps = self.parts(but=(b,), topic=topic)
        return all(ps.get(p, {}).get("leader", -1) not in (-1, b)
                   for p in parts)

    def settled(self):
        st = self.env.state()
        alive = {i for i, b in st["brokers"].items() if b[2]}
        if set(IDS) - alive:
            return None
        ps = [q for (t, _), q in st["partitions"].items() if t == TOPIC]
        return len(ps) == PARTS and all(
            q["leader"] in IDS and set(IDS) <= set(q["isr"]) for q in ps)

    def settle(self, timeout=90):
        wait_until("every broker alive and every ISR full", self.settled,
                   timeout, step=0.5)
        self.keep_workload()
        self.progress(500)

    # -- faults -----------------------------------------------------------
    def fault(self, name, victim, parts, inject, took_effect, heal,
              hold_s=2.0, after_effect_s=0.0):
        """Inject, wait until the fault is seen to have taken effect
        (bounded), hold (hold_s from the injection, and at least
        after_effect_s past the effect), heal, and wait until the cluster
        is whole."""
        t0 = time.time()
        inject()
        # the fault is in place once the call that makes it returns (a
        # signal sent, `docker kill` or `pause` done); unavailability counts
        # from here
        t_in = time.time()
        wait_until(f"{name}: fault in effect", took_effect, 45, step=0.2)
        t_eff = time.time()
        rest = max(t0 + hold_s, t_eff + after_effect_s) - time.time()
        if rest > 0:
            time.sleep(rest)
        heal()
        t_heal = time.time()
        self.settle()
        rec = {"scenario": name, "victim": victim, "partitions": parts,
               "t_fault": t_in, "t_effect": t_eff, "t_heal": t_heal,
               "inject_ms": round(1000 * (t_in - t0)),
               "effect_ms": round(1000 * (t_eff - t_in)),
               "duration_ms": round(1000 * (t_heal - t0)),
               "recovered_ms": round(1000 * (time.time() - t_heal))}
        self.faults.append(rec)
        who = victim if isinstance(victim, str) else f"broker {victim}"
        log(f"{name}: {who}, partitions {parts}: in effect after "
            f"{rec['effect_ms']} ms, healed at {rec['duration_ms']} ms, "
            f"whole again {rec['recovered_ms']} ms later")

    def leader_fault(self, name, inject, heal, hold_s, part=0,
                     fenced=False, down=False):
        """A fault on the leader of `part`, in effect once its partitions
        have other leaders (and, with down, its process or container is
        gone; with fenced, the controller has fenced it)."""
        victim = self.parts()[part]["leader"]
        parts = self.led_by(victim)

        def effect():
            if down and self.env.running(victim):
                return False
            if fenced:
                st = self.env.state(but=(victim,))
                if st["brokers"].get(victim, (0, 0, True))[2]:
                    return False
            return self.moved_from(victim, parts)
        self.fault(name, victim, parts, lambda: inject(victim), effect,
                   lambda: heal(victim), hold_s)

    def s_leader_kill(self, kills):
        e = self.env
        for k in range(kills):
            self.leader_fault(
                "leader-kill", lambda v: e.kill(v), lambda v: e.restart(v),
                2.0, part=k % PARTS, down=True)

    def s_leader_stop(self):
        e = self.env
        self.leader_fault("leader-stop", lambda v: e.stop(v),
                          lambda v: e.restart(v), 2.0, part=1, down=True)

    def s_leader_pause(self):
        e = self.env
        self.leader_fault("leader-pause", lambda v: e.pause(v),
                          lambda v: e.unpause(v),
                          e.session_ms / 1000 + 3.0, part=2, fenced=True)

    def s_leader_isolate(self):
        e = self.env
        if not e.can_isolate():
            self.skipped["leader-isolate"] = (
                "needs root and iproute2 for network namespaces")
            return
        self.leader_fault("leader-isolate", lambda v: e.isolate(v),
                          lambda v: e.heal(v),
                          e.session_ms / 1000 + 3.0, part=3, fenced=True)

    # -- the controller quorum -------------------------------------------
    def active(self, timeout=30):
        return wait_until("one active controller",
                          self.env.active_controller, timeout, step=0.1)

    def new_active(self, old):
        """Another member active, and the brokers following it."""
        e = self.env
        if not e.quorum:
            return True
        j = e.active_controller()
        if j in (None, old):
            return False
        want = e.ctl_addr_seen(j)
        return self.env.state()["controller"] == want

    def s_controller_kill(self):
        """kill -9 of the active controller under load, twice (the second
        time another member is active); in effect once another member is
        active and the brokers follow it."""
        e = self.env
        for _ in range(2 if e.quorum else 1):
            j = self.active()
            self.fault("controller-kill", f"controller {j}",
                       list(range(PARTS)), lambda: e.kill_controller(j),
                       lambda: not e.controller_running(j)
                       and self.new_active(j),
                       lambda: e.start_controller(j), 5.0)

    def s_controller_leader_kill(self):
        """The active controller and the leader of partition 0 killed
        together: in effect once the partition has a new leader (elected
        by the new active controller); that time is the row's "in effect
        after"."""
        e = self.env
        j = self.active()
        victim = self.parts()[0]["leader"]
        parts = self.led_by(victim)

        def kill():
            e.kill_controller(j)
            e.kill(victim)

        def heal():
            e.start_controller(j)
            e.restart(victim)
        self.fault("controller-leader-kill",
                   f"controller {j} + broker {victim}", parts, kill,
                   lambda: not e.running(victim) and
                   not e.controller_running(j) and
                   self.moved_from(victim, parts), heal, 2.0)
        self.note(f"controller-leader-kill: controller {j} and broker "
                  f"{victim} killed together; partitions {parts} led "
                  f"again {self.faults[-1]['effect_ms']} ms later")

    def s_controller_wipe(self):
        """The active controller killed, its data dir emptied, restarted:
        it rejoins (event=quorum_rejoin) and catches up with what the
        active member had applied when it came back."""
        e = self.env
        j = self.active()
        target = {}

        def inject():
            e.kill_controller(j)
            wait_until(f"controller {j} down",
                       lambda: not e.controller_running(j), 30)
            e.wipe_controller(j)

        t_heal0 = [0.0]

        def heal():
            t_heal0[0] = time.time()
            e.start_controller(j)
            wait_until(f"controller {j} rejoins",
                       lambda: e.ctl_log(j).count("event=quorum_rejoin")
                       > before_rejoins, 30, step=0.2)
            k = self.active()
            target["index"] = e.applied_max(k)
            wait_until(f"controller {j} catches up to index "
                       f"{target['index']}",
                       lambda: e.applied_max(j) >= target["index"], 60,
                       step=0.2)
            self.note(f"controller-wipe: controller {j} wiped, rejoined "
                      f"(event=quorum_rejoin) and applied up to "
                      f"{e.applied_max(j)} (the active {k}: "
                      f"{target['index']}) {time.time() - t_heal0[0]:.1f} s "
                      f"after its restart")
        before_rejoins = e.ctl_log(j).count("event=quorum_rejoin")
        self.fault("controller-wipe", f"controller {j}", list(range(PARTS)),
                   inject, lambda: not e.controller_running(j)
                   and self.new_active(j), heal, 3.0)

    def s_controller_isolate(self):
        """The active controller cut off from the other members but not
        from the brokers: it must step down (event=no_longer_active) and
        another become active in a higher term; no record of the deposed
        term proposed after the cut may be applied anywhere (checked at
        the end: every member's applied history agrees)."""
        e = self.env
        if not e.can_cut_controllers():
            self.skipped["controller-isolate"] = (
                "needs network namespaces (root, iproute2, nsenter)")
            return
        j = self.active()
        text = e.ctl_log(j)
        terms = re.findall(r"event=active_controller term=(\d+)", text)
        old_term = int(terms[-1]) if terms else 0
        downs = text.count("event=no_longer_active")
        seen = {}

        def effect():
            t = e.ctl_log(j)
            if t.count("event=no_longer_active") <= downs:
                return False
            k = next((x for x in e.active_controllers() if x != j), None)
            if k is None:
                return False
            nt = re.findall(r"event=active_controller term=(\d+)",
                            e.ctl_log(k))
            if not nt or int(nt[-1]) <= old_term:
                return False
            seen.update(new=k, term=int(nt[-1]))
            return True

        def heal():
            e.heal_controller(j)
            if j in e.active_controllers():
                raise AssertionError(f"controller {j} still active after "
                                     f"the cut")
        self.fault("controller-isolate", f"controller {j}",
                   list(range(PARTS)), lambda: e.cut_controller(j), effect,
                   heal, 3.0)
        # how long the deposed one still believed itself active after the
        # new one became active (check-quorum); it could not commit then
        t_new = log_time(e.ctl_log(seen["new"]),
                         f"event=active_controller term={seen['term']} ")
        t_down = log_time(e.ctl_log(j), "event=no_longer_active", last=True)
        overlap = (None if t_new is None or t_down is None
                   else round(1000 * (t_down - t_new)))
        self.faults[-1]["overlap_ms"] = overlap
        when = ("at an unknown time" if overlap is None else
                f"{overlap} ms after that (it could commit nothing "
                f"meanwhile: see the history comparison)" if overlap > 0
                else f"{-overlap} ms before that (no overlap)")
        self.note(f"controller-isolate: controller {j} (term {old_term}) "
                  f"cut off from the other members stepped down; "
                  f"{seen['new']} active in term {seen['term']} "
                  f"{self.faults[-1]['effect_ms']} ms after the cut; the "
                  f"deposed one stepped down {when}")

    def note(self, text):
        self.notes.append(text)
        log(text)

    # -- partial partitions (one link cut, the rest up) -------------------
    # Each cut is iptables DROP rules in one node's network namespace
    # (envs.ProcessEnv.cut_link); a cut counts as in effect only when its
    # rules have dropped packets and the cluster shows the consequence the
    # row names. "The controller" is the active member of the quorum.
    def can_cut(self, name):
        if not self.env.can_cut_links():
            self.skipped[name] = ("needs the controller quorum, iptables "
                                  "and network namespaces (process: root "
                                  "and iproute2; compose: nsenter)")
            return False
        return True

    def dropped(self, cut):
        """Packets the cut's DROP rules have dropped so far."""
        return sum(n for (_, t), n in self.env.link_counts(cut).items()
                   if t == "DROP")

    def replicas_of(self, part):
        q = self.parts()[part]
        return q["leader"], [r for r in q["replicas"] if r != q["leader"]]

    def cut_fault(self, name, victim, parts, links, effect, hold_s,
                  after_effect_s=3.0, what=""):
        """Cut `links` ((a, b, one_way) each), in effect once every cut
        has dropped packets and effect() holds; healed by removing the
        rules."""
        e = self.env
        cuts = []

        def inject():
            for a, b, one_way in links:
                cuts.append(e.cut_link(a, b, one_way))

        def took():
            return all(self.dropped(c) > 0 for c in cuts) and effect()

        def heal():
            self.counts = [e.link_counts(c) for c in cuts]
            for c in cuts:
                e.heal_link(c)
        try:
            self.fault(name, victim, parts, inject, took, heal, hold_s,
                       after_effect_s)
        finally:
            for c in cuts:
                e.heal_link(c)
        drops = sum(n for cs in self.counts for (_, t), n in cs.items()
                    if t == "DROP")
        self.note(f"{name}: {what}; {len(cuts)} cut(s) dropped {drops} "
                  f"packets; in effect after "
                  f"{self.faults[-1]['effect_ms']} ms")
        return self.counts

    def isr_of(self, parts, but=()):
        ps = self.parts(but=but)
        return {p: ps.get(p, {}).get("isr", []) for p in parts}

    def s_leader_controller_cut(self):
        """Partition 4's leader cut off from the active controller only
        (it still reaches the other members, its followers and the
        clients): the controller must fence it and move its partitions;
        the cut-off leader must ack nothing for its old epoch (the checker
        would see two values or a lost write)."""
        if not self.can_cut("leader-controller-cut"):
            return
        j = self.active()
        v, _ = self.replicas_of(4)
        parts = self.led_by(v)

        def effect():
            st = self.env.state(but=(v,))
            return not st["brokers"].get(v, (0, 0, True))[2] and \
                self.moved_from(v, parts)
        self.cut_fault("leader-controller-cut", v, parts,
                       [(f"b{v}", f"c{j}", False)], effect,
                       self.env.session_ms / 1000 + 3.0,
                       what=f"broker {v} (leader of {parts}) <-> active "
                       f"controller {j}; fenced and its partitions moved")

    def s_leader_followers_cut(self):
        """Partition 1's leader cut off from both followers (it still
        reaches the controller and the clients): its followers fall out of
        the ISR of its partitions (or leadership moves); with min ISR 2 it
        must not ack alone."""
        if not self.can_cut("leader-followers-cut"):
            return
        v, fs = self.replicas_of(1)
        parts = self.led_by(v)
        seen = {}

        def effect():
            isr = self.isr_of(parts)
            ps = self.parts()
            ok = all(set(fs) - set(isr[p]) or ps[p]["leader"] != v
                     for p in parts)
            if ok:
                seen.update(isr=isr, leaders={p: ps[p]["leader"]
                                              for p in parts})
            return ok
        self.cut_fault("leader-followers-cut", v, parts,
                       [(f"b{v}", f"b{f}", False) for f in fs], effect,
                       8.0, what=f"broker {v} (leader of {parts}) <-> "
                       f"brokers {fs}")
        self.note(f"leader-followers-cut: when in effect, ISRs "
                  f"{seen.get('isr')}, leaders {seen.get('leaders')}")

    def s_follower_leader_cut(self):
        """One follower of partition 2 cut off from its leader only: it
        leaves the ISR of that leader's partitions; writes go on (ISR 2 =
        min ISR)."""
        if not self.can_cut("follower-leader-cut"):
            return
        v, fs = self.replicas_of(2)
        f = fs[0]
        parts = self.led_by(v)

        def effect():
            isr = self.isr_of(parts)
            return all(f not in isr[p] for p in parts)
        self.cut_fault("follower-leader-cut", f"broker {f} <-> {v}", parts,
                       [(f"b{f}", f"b{v}", False)], effect, 8.0,
                       what=f"follower {f} <-> leader {v} (of {parts}); "
                       f"{f} left their ISRs")

    def s_clients_leader_cut(self):
        """The clients cut off from partition 3's leader, which still
        reaches the controller and the other brokers: it stays leader
        (nothing fences it), its partitions are unavailable to the clients
        until the heal, and nothing is lost or duplicated by the producers'
        retries."""
        if not self.can_cut("clients-leader-cut"):
            return
        v, _ = self.replicas_of(3)
        parts = self.led_by(v)

        def effect():
            st = self.env.state(but=(v,))
            ps = {p: q for (t, p), q in st["partitions"].items()
                  if t == TOPIC}
            return st["brokers"].get(v, (0, 0, False))[2] and all(
                ps[p]["leader"] == v and set(IDS) <= set(ps[p]["isr"])
                for p in parts)
        self.cut_fault("clients-leader-cut", v, parts,
                       [(f"b{v}", "clients", False)], effect, 6.0,
                       what=f"clients <-> broker {v} (leader of {parts}); "
                       f"it stayed alive, leader, ISRs full")

    def s_controller_broker_cut(self):
        """The active controller cut off from one broker (the rules on the
        controller's side): the broker leading the most partitions, of
        equals a follower of partition 5 (after earlier faults one broker
        may lead everything, and a broker leading nothing is the weaker
        case). The controller fences it and moves what it led; it comes
        back into every ISR after the heal."""
        if not self.can_cut("controller-broker-cut"):
            return
        j = self.active()
        _, fs = self.replicas_of(5)
        b = max(IDS, key=lambda x: (len(self.led_by(x)), x in fs, x))
        parts = self.led_by(b)
        seen = {}

        def effect():
            st = self.env.state(but=(b,))
            ok = not st["brokers"].get(b, (0, 0, True))[2] and \
                self.moved_from(b, parts)
            if ok:
                seen["isr"] = {p: q["isr"] for (t, p), q in
                               st["partitions"].items() if t == TOPIC}
            return ok
        self.cut_fault("controller-broker-cut", f"controller {j} <-> {b}",
                       parts, [(f"c{j}", f"b{b}", False)], effect,
                       self.env.session_ms / 1000 + 3.0,
                       what=f"active controller {j} <-> broker {b} (leader "
                       f"of {parts}); fenced and its partitions moved")
        self.note(f"controller-broker-cut: when in effect, ISRs "
                  f"{seen.get('isr')}")

    def s_link_flap(self):
        """The link between partition 0's leader and one follower cut and
        healed again and again (FLAP_PERIOD_S a cycle, half of it cut) for
        --flap-s seconds: every cut must drop packets; the ISR may shrink
        and grow again; after the last heal the cluster must be whole."""
        if not self.can_cut("link-flap"):
            return
        e = self.env
        v, fs = self.replicas_of(0)
        f = fs[0]
        parts = self.led_by(v)
        half = FLAP_PERIOD_S / 2
        cut, t_cut, t_first = [None], [0.0], [0.0]
        stats = {"cuts": 0, "min_drop": None, "shrunk": 0}

        def inject():
            cut[0] = e.cut_link(f"b{v}", f"b{f}")
            t_cut[0] = time.time()
            t_first[0] = t_first[0] or t_cut[0]

        def end_cut():
            n = self.dropped(cut[0])
            stats["cuts"] += 1
            stats["min_drop"] = n if stats["min_drop"] is None else min(
                stats["min_drop"], n)
            try:
                isr = self.isr_of(parts)
                if any(f not in isr[p] for p in parts):
                    stats["shrunk"] += 1
            except (AssertionError, RuntimeError):
                pass
            e.heal_link(cut[0])
            cut[0] = None
            if n == 0:
                raise AssertionError(f"link-flap: cut {stats['cuts']} "
                                     f"dropped nothing")

        def heal():
            while True:
                time.sleep(max(0.0, half - (time.time() - t_cut[0])))
                end_cut()
                if time.time() + FLAP_PERIOD_S > t_first[0] + self.flap_s:
                    return
                time.sleep(half)
                inject()
        try:
            self.fault("link-flap", f"broker {v} <-> {f}", parts, inject,
                       lambda: self.dropped(cut[0]) > 0, heal, 0.0)
        finally:
            if cut[0] is not None:
                e.heal_link(cut[0])
        self.note(f"link-flap: broker {v} (leader of {parts}) <-> {f}, "
                  f"{half:g} s cut / {half:g} s healed for {self.flap_s} s: "
                  f"{stats['cuts']} cuts, each dropped packets (fewest "
                  f"{stats['min_drop']}); {f} was out of an ISR at the end "
                  f"of {stats['shrunk']} of them")

    def s_one_way_cut(self):
        """Packets from partition 1's leader to one follower dropped,
        follower to leader delivered (the follower's fetches arrive, the
        answers do not): the follower leaves the ISR of the leader's
        partitions; nothing acked is lost."""
        if not self.can_cut("one-way-cut"):
            return
        v, fs = self.replicas_of(1)
        f = fs[-1]
        parts = self.led_by(v)
        counts = self.cut_fault(
            "one-way-cut", f"broker {v} -> {f}", parts,
            [(f"b{v}", f"b{f}", True)],
            lambda: all(f not in isr for isr in
                        self.isr_of(parts).values()), 8.0,
            what=f"broker {v} (leader of {parts}) -> {f} dropped, {f} -> "
            f"{v} delivered; {f} left their ISRs")
        got = counts[0].get(("INPUT", "ACCEPT"), 0)
        self.note(f"one-way-cut: {got} packets from {f} delivered to {v} "
                  f"while its packets to {f} were dropped")
        if got == 0:
            raise AssertionError("one-way-cut: nothing from the follower "
                                 "reached the leader: not a one-way cut")

    def s_coordinator_kill(self):
        e = self.env
        op = fnv1a(GROUP) % OFFSETS_PARTS
        ps = self.parts(topic=OFFSETS_TOPIC)
        if op not in ps:
            raise AssertionError(f"{OFFSETS_TOPIC} partition {op} unknown: "
                                 f"has the group committed yet?")
        victim = ps[op]["leader"]
        self.fault("coordinator-kill", victim, self.led_by(victim),
                   lambda: e.kill(victim),
                   lambda: not e.running(victim) and self.moved_from(
                       victim, [op], topic=OFFSETS_TOPIC),
                   lambda: e.restart(victim), 2.0)

    def s_all_brokers_kill(self):
        e = self.env

        def kill_all():
            for i in IDS:
                e.kill(i)

        def start_all():
            for i in IDS:
                e.restart(i)
        self.fault("all-brokers-kill", "all", list(range(PARTS)), kill_all,
                   lambda: not any(e.running(i) for i in IDS), start_all, 3.0)

    # -- end of run ---------------------------------------------------
    def finish(self):
        log("stopping the producers (they flush what is pending)")
        for p in self.producers:
            rc = p.stop()
            log(f"producer {p.name}: exit {rc}, {p.sent} sent, "
                f"{len(p.reports)} answered, {p.acked()} acknowledged")
        acked = self.acked()

        def caught_up():
            seen = set()
            for c in self.consumers:
                seen.update(ln.split(" ", 2)[2] for _, ln in c.lines
                            if not ln.startswith("#") and ln.count(" ") >= 2)
            return len(seen) >= acked
        try:
            wait_until("the group read every acknowledged write", caught_up,
                       90, step=1)
        except AssertionError as e:
            log(f"note: {e}")
        for c in self.consumers:
            rc = c.stop()
            log(f"consumer {c.name}: exit {rc}, {c.polls()} records read"
                + (f"; stderr: {c.stderr[-3:]}" if rc else ""))

    def drain(self, expect):
        """The whole topic, read from every partition below the high
        watermark after healing."""
        got = ({}, [])
        for attempt in range(3):
            p = self.env.weir("consume", TOPIC, "--from-beginning",
                              "--max-messages", str(expect + 1000),
                              "--timeout-ms", "10000", "--format",
                              r"%p %o %v\n", timeout=600, check=False)
            got = history.parse_drain(p.stdout.decode())
            if len(got[0]) >= expect:
                break
            log(f"drain {attempt + 1}: {len(got[0])} records of at least "
                f"{expect}; again")
        return got


def log_time(text, mark, last=False):
    """The ts= of the first (or last) line holding mark, as epoch
    seconds."""
    lines = [ln for ln in text.splitlines() if mark in ln]
    if not lines:
        return None
    m = re.search(r"ts=(\S+?)Z", lines[-1] if last else lines[0])
    if not m:
        return None
    return calendar.timegm(time.strptime(m.group(1)[:19],
                                         "%Y-%m-%dT%H:%M:%S")) + float(
        "0" + m.group(1)[19:])


def table(env_name, res):
    lines = [f"Weir chaos run ({env_name}), {res['date']}, commit "
             f"{res['commit']}", ""]
    lines.append("| scenario | faults | in effect after (ms) | "
                 "unavailable p50 / max (ms) | longest ack gap (ms) | "
                 "next commit p50 (ms) | writes acked during | "
                 "records read during |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for name, s in res["scenarios"].items():
        if s.get("skipped"):
            lines.append(f"| {name} | skipped: {s['skipped']} "
                         f"| | | | | | |")
            continue
        fmt = (lambda v: "-" if v is None else str(v))
        lines.append(
            f"| {name} | {s['faults']} | {fmt(s['effect_ms_max'])} | "
            f"{fmt(s['unavailable_ms_p50'])} / "
            f"{fmt(s['unavailable_ms_max'])} | "
            f"{fmt(s['longest_gap_ms_max'])} | "
            f"{fmt(s['commit_gap_ms_p50'])} | {s['acks_during']} | "
            f"{s['polls_during']} |")
    w = res["writes"]
    lines += ["", f"Writes: {w['attempted']} attempted, {w['acknowledged']} "
              f"acknowledged, {w['failed']} failed, {w['indefinite']} "
              f"indefinite ({w['indefinite_in_log']} of them in the log). "
              f"Consumers read {w['consumer_reads']} records and committed "
              f"{w['commits']} partition offsets; the drain read "
              f"{w['in_log']}."]
    if res.get("notes"):
        lines += [""] + [f"- {n}" for n in res["notes"]] + [""]
    ch = res.get("controller_history")
    if ch and ch["members"] > 1:
        lines.append(f"Controller quorum: {ch['members']} members' applied "
                     f"histories compared over {ch['indexes']} indexes: "
                     + ("they agree." if not ch["problems"] else
                        f"{len(ch['problems'])} disagreements."))
    v = res["violations"]
    lines.append("Checks: " + ", ".join(
        f"{r} {v.get(r, 0)}" for r in history.RULES) + ". Result: "
        + ("PASS" if res["pass"] else "FAIL") + ".")
    return "\n".join(lines)


def summarize(run, summary):
    by = {}
    for f in run.faults:
        by.setdefault(f["scenario"], []).append(
            dict(f, **history.fault_metrics(f, run.producers, run.consumers)))
    out = {}
    for name in SCENARIOS + LONG_SCENARIOS:
        if name in run.skipped:
            out[name] = {"skipped": run.skipped[name]}
            continue
        fs = by.get(name, [])
        if not fs:
            continue
        un = [f["unavailable_ms"] for f in fs if f["unavailable_ms"] is not
              None]
        cg = [f["commit_gap_ms"] for f in fs if f["commit_gap_ms"] is not None]
        gaps = [f["longest_gap_ms"] for f in fs
                if f["longest_gap_ms"] is not None]
        out[name] = {
            "faults": len(fs),
            "effect_ms_max": max(f["effect_ms"] for f in fs),
            "unavailable_ms_p50": history.pct(un, 0.5),
            "unavailable_ms_max": max(un) if un else None,
            "commit_gap_ms_p50": history.pct(cg, 0.5),
            "longest_gap_ms_max": max(gaps) if gaps else None,
            "acks_during": sum(f["acks_during"] for f in fs),
            "polls_during": sum(f["polls_during"] for f in fs),
            "each": [{k: f[k] for k in (
                "victim", "partitions", "inject_ms", "effect_ms", "duration_ms",
                "recovered_ms", "unavailable_ms", "longest_gap_ms",
                "commit_gap_ms",
                "acks_during", "polls_during", "commits_during")}
                | ({"overlap_ms": f["overlap_ms"]} if "overlap_ms" in f
                   else {})
                for f in fs],
        }
    return out


def git_commit():
    p = subprocess.run(["git", "-C", envs.ROOT, "rev-parse", "--short=12",
                        "HEAD"], capture_output=True)
    return p.stdout.decode().strip() if p.returncode == 0 else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", choices=("auto", "compose", "process"),
                    default=os.environ.get("WEIR_CHAOS_ENV", "auto"))
    ap.add_argument("--scenarios", default=None,
                    help="comma-separated, from the default and the long "
                    "tier (default: the default tier; with --long both)")
    ap.add_argument("--long", action="store_true",
                    help="the long tier too: the partial partitions "
                    "(process environment)")
    ap.add_argument("--history", default=os.environ.get("WEIR_CHAOS_HISTORY"),
                    help="write the producers' raw history (every answer: "
                    "producer, index, partition, offset or error, sent and "
                    "answered times) and the faults here, as JSON")
    ap.add_argument("--flap-s", type=int, default=60,
                    help="link-flap: how long the link flaps (default 60)")
    ap.add_argument("--kills", type=int, default=3,
                    help="leader-kill repetitions (default 3)")
    ap.add_argument("--json", default=os.environ.get("WEIR_CHAOS_JSON"))
    ap.add_argument("--tls", action="store_true",
                    default=os.environ.get("WEIR_CHAOS_TLS") == "1",
                    help="mutual TLS on every listener and link")
    ap.add_argument("--scram", action="store_true",
                    default=os.environ.get("WEIR_CHAOS_SCRAM") == "1",
                    help="TLS with SCRAM logins and ACLs on every "
                    "listener and link")
    a = ap.parse_args()
    every = SCENARIOS + LONG_SCENARIOS
    if a.scenarios is None:
        chosen = list(every if a.long else SCENARIOS)
    else:
        chosen = [s for s in a.scenarios.split(",") if s]
    for s in chosen:
        if s not in every:
            ap.error(f"unknown scenario {s}; known: {', '.join(every)}")
    why = envs.ComposeEnv.available() if a.env != "process" else "asked"
    if a.env == "compose" and why:
        log(f"SKIP: compose scenarios need a Docker engine: {why}")
        return 0
    env = envs.ComposeEnv(a.tls, a.scram) if not why else \
        envs.ProcessEnv(a.tls, a.scram)
    log(f"environment: {env.describe()}"
        + (f" (no compose: {why})" if why and a.env == "auto" else ""))
    run = Run(env)
    t_start = time.time()
    try:
        env.up()
        envs.wait_alive(env, IDS, 30)
        log(f"cluster up {time.time() - t_start:.1f} s after start")
        env.weir("topic", "create", TOPIC, "--partitions", str(PARTS),
                 "--replication-factor", "3", "--config",
                 "min.insync.replicas=2")
        wait_until("the topic led with full ISRs", run.settled, 30)
        run.start_workload()
        run.progress(2000)
        wait_until("a first group commit", lambda: any(
            ln.startswith("# committed") for c in run.consumers
            for _, ln in c.lines), 60, step=0.5)
        run.flap_s = a.flap_s
        for s in every:
            if s not in chosen:
                continue
            log(f"== {s}")
            if s in QUORUM_SCENARIOS and not env.quorum:
                run.skipped[s] = ("one controller with SCRAM (no SASL "
                                  "between quorum members)")
                continue
            fn = getattr(run, "s_" + s.replace("-", "_"))
            fn(a.kills) if s == "leader-kill" else fn()
        run.finish()
        n = sum(p.sent for p in run.producers)
        drain = run.drain(run.acked())
        ctl_texts = {j: env.ctl_log(j) for j in env.controller_ids()}
    finally:
        for p in run.producers:
            if p.alive():
                p.proc.kill()
        for c in run.consumers:
            if c.alive():
                c.proc.kill()
        env.down()
    bad, summary = history.check(run.producers, run.consumers, drain, PARTS)
    # every member's applied metadata history must agree (no record of a
    # deposed active controller applied where another term's record is)
    n_idx, ctl_problems = envs.compare_histories(ctl_texts)
    if env.quorum and n_idx == 0:
        ctl_problems.append("no member logged an applied entry")
    res = {
        "env": env.name, "tls": env.tls, "scram": a.scram,
        "describe": env.describe(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": git_commit(), "duration_s": round(time.time() - t_start),
        "writes": {k: summary[k] for k in (
            "attempted", "acknowledged", "failed", "indefinite",
            "indefinite_in_log", "in_log", "consumer_reads", "commits")},
        "violations": summary["violations"],
        "examples": summary["examples"],
        "scenarios": summarize(run, summary),
        "notes": run.notes,
    }
    missing = [s for s in chosen if s not in res["scenarios"]]
    res["daemon_problems"] = list(env.problems)
    res["controller_history"] = {
        "members": len(ctl_texts), "indexes": n_idx,
        "problems": ctl_problems}
    res["pass"] = (bad.total() == 0 and not missing and n > 0
                   and not env.problems and not ctl_problems)
    print(table(env.name + (", TLS + SCRAM" if a.scram else
                            ", mutual TLS" if a.tls else ""), res),
          flush=True)
    for ex in summary["examples"]:
        log(f"violation: {ex}")
    if missing:
        log(f"scenarios that did not run: {missing}")
    for pr in env.problems:
        log(f"daemon problem: {pr}")
    for pr in ctl_problems:
        log(f"controller history: {pr}")
    if a.history:
        with open(a.history, "w") as f:
            json.dump({"faults": run.faults, "producers": {
                p.name: [[i, part, off, p.send_time(i), t]
                         for i, part, off, t in p.reports]
                for p in run.producers}}, f)
        log(f"raw history written to {a.history}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
        log(f"results written to {a.json}")
    return 0 if res["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
