#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Controller quorum benchmark (issue 13): real processes on loopback,
default timeouts. See docs/benchmarks.md ("Controller quorum").

    tests/bench/bench_quorum.py                    # ~6-9 min on 2 busy CPUs
    ROUNDS=3 CREATES=300 tests/bench/bench_quorum.py   # a quick pass

One quorum cluster (three weir-controller members, --voters, and three
brokers given every member) runs the failover parts; the throughput part
adds a single-controller cluster (one weir-controller, three brokers) and
measures both in the same run, interleaved.

 (1) controller failover: kill -9 of the active controller; time from the
     kill to the `event=active_controller` trace line of the new one (its
     own timestamp, ms resolution); also when every broker's `weir cluster`
     names it. The killed member is restarted and the quorum is whole again
     before the next round.
 (2) partition unavailability, as a client sees it: `weir produce --acks
     all --report` writes 2,000 records/s to topic f (3 partitions, RF 3,
     min ISR 2) the whole time. Unavailability = kill to the first
     acknowledgement of a record written after the kill on partition 0 (an
     upper bound: reports come in input order). Each round is a pair, in
     an order rotated each round: (a) kill -9 of partition 0's leader
     alone; (b) kill -9 of the active controller and of partition 0's
     leader at the same moment. Both are restarted and every ISR is full
     again before the next case. The trace lines of the new controller
     give the breakdown of (b): active_controller, broker_fenced.
 (3) metadata throughput: topic creations per second, sent straight to the
     active controller by one process over CONNS connections with WINDOW
     CreateTopics requests (one topic each) in flight on each, so the
     controller has up to CONNS*WINDOW creations to group into one fsync.
     Quorum (3 voters) and single controller alternate, REPS times each.

Environment knobs [defaults]:
  BUILD_DIR   build directory, relative to the repo or absolute [build]
  ROUNDS      rounds of (1) and pairs of (2) [10]
  CREATES     topics created per throughput case [3000]
  REPS        throughput cases per setup [3]
  CONNS WINDOW  connections and requests in flight on each [4, 32]
  CREATE_RF   replication factor of the created topics (1 partition each;
              RF 1 keeps the brokers' own work small) [1]
  RESULTS     the report (markdown) [BUILD_DIR/bench-quorum-<UTC>.md];
              raw numbers in a .json beside it
  CTL_ARGS    extra options for every weir-controller, e.g.
              "--election-timeout-ms 300" (experiments; the defaults are
              what the benchmark is for) []
  KEEP_TMP=1  keep the data dirs and logs (WEIR_KEEP_TMP)

Every process is started here and killed by PID on exit; every wait is
bounded in time.
"""
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_DIR = os.environ.get("BUILD_DIR", "build")
if not os.path.isabs(BUILD_DIR):
    BUILD_DIR = os.path.join(ROOT, BUILD_DIR)
os.environ["WEIR_BUILD_DIR"] = BUILD_DIR
if os.environ.get("KEEP_TMP") == "1":
    os.environ["WEIR_KEEP_TMP"] = "1"
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import weirtest  # noqa: E402
from test_failover import Producer  # noqa: E402
from test_quorum import Quorum  # noqa: E402
from weirtest import (CREATE_TOPICS, log, pb_msg, pb_parse, read_frame,  # noqa: E402
                      request, wait_until, weir)

ROUNDS = int(os.environ.get("ROUNDS", "10"))
CREATES = int(os.environ.get("CREATES", "3000"))
REPS = int(os.environ.get("REPS", "3"))
CONNS = int(os.environ.get("CONNS", "4"))
WINDOW = int(os.environ.get("WINDOW", "32"))
CREATE_RF = int(os.environ.get("CREATE_RF", "1"))
STAMP = datetime.datetime.now(datetime.timezone.utc).strftime(
    "%Y%m%dT%H%M%SZ")
RESULTS = os.environ.get("RESULTS") or os.path.join(
    BUILD_DIR, f"bench-quorum-{STAMP}.md")
TOPIC = "f"  # test_failover.Producer writes to "f"
BROKER_ARGS = ["--replica-lag-time-max-ms", "2000"]
CTL_ARGS = os.environ.get("CTL_ARGS", "").split()


# ---- trace lines -----------------------------------------------------------

TS = re.compile(r"^ts=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z ")


def trace_times(proc, what, after):
    """Times (epoch s) of proc's trace lines containing `what` stamped at
    or after `after` (the stamps have ms resolution: 1 ms of slack)."""
    out = []
    for line in proc.log_text().splitlines():
        m = TS.match(line)
        if not m or what not in line:
            continue
        t = trace_times_line(m)
        if t >= after - 0.001:
            out.append(t)
    return out


def trace_times_line(m):
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f") \
        .replace(tzinfo=datetime.timezone.utc).timestamp()


def first_trace(proc, what, after, timeout=30):
    return wait_until(f"'{what}' in {proc.log_path}",
                      lambda: (trace_times(proc, what, after) or [None])[0],
                      timeout, step=0.02)


# ---- the quorum cluster ----------------------------------------------------

class Bench(Quorum):
    def __init__(self):
        super().__init__()
        for b in self.brokers.values():
            b.args += BROKER_ARGS
        for c in self.ctls.values():
            c.args += CTL_ARGS

    def bootstrap(self):
        return ",".join(b.addr for b in self.brokers.values())

    def active(self):
        """As Quorum.active, but a restarted member's log counts only from
        its last start (it appends to the log of its earlier run)."""
        ids = []
        for i, c in self.running(self.ctls).items():
            text = c.log_text()
            text = text[text.rfind("event=started"):]
            states = re.findall(r"event=member_state active=(\w+)", text)
            if states and states[-1] == "true":
                ids.append(i)
        return ids

    def part(self, p=0):
        return self.state()["partitions"][(TOPIC, p)]

    def healthy(self):
        """One active member that every other member and every broker
        names, all brokers alive, every partition of TOPIC led with a full
        ISR. Returns the active member's id or None."""
        act = self.active()
        if len(act) != 1 or len(self.running(self.ctls)) != 3:
            return None
        addr = self.ctls[act[0]].addr
        for i, c in self.ctls.items():
            if i != act[0] and f"controller: {addr}" not in weir(
                    c, "cluster", check=False, timeout=30).stdout.decode():
                return None
        for b in self.brokers.values():
            st = weirtest.cluster_state(b)
            if st["controller"] != addr or not all(
                    x[2] for x in st["brokers"].values()):
                return None
            for (t, _), p in st["partitions"].items():
                if t == TOPIC and (p["leader"] <= 0 or len(p["isr"]) != 3):
                    return None
        return act[0]

    def wait_healthy(self, timeout=90):
        return wait_until("quorum and ISRs whole", self.healthy, timeout,
                          step=0.2)


def ack_gap_ms(prod, t0, t1, part=0):
    """Longest time between two acknowledgements on `part` reported in
    [t0, t1] (the edges count as acknowledgements)."""
    ts = [t0] + [t for t, ln in list(prod.lines) if t0 <= t <= t1 and
                 not ln.startswith("ERROR") and int(ln.split()[0]) == part]
    ts.append(t1)
    return 1000 * max(b - a for a, b in zip(ts, ts[1:]))


def last_ack_before(prod, t0, part=0):
    for t, ln in reversed(list(prod.lines)):
        if t <= t0 and not ln.startswith("ERROR") and \
                int(ln.split()[0]) == part:
            return t
    return None


def live_fenced(ctl, t_act, victims=()):
    """Brokers other than victims that ctl fenced within 3.5 s of becoming
    active (a full session is 3 s): live brokers that had not reached it.
    Waits until that window has passed."""
    time.sleep(max(0.0, t_act + 3.5 - time.time()))
    out = []
    for line in ctl.log_text().splitlines():
        m = TS.match(line)
        f = re.search(r"event=broker_fenced broker=(\d+) ", line)
        if m and f and int(f.group(1)) not in victims:
            t = trace_times_line(m)
            if t_act - 0.001 <= t <= t_act + 3.5:
                out.append(int(f.group(1)))
    return out


def bench_controller_kill(q, prod, rounds):
    rows = []
    for r in range(rounds):
        old = q.wait_healthy()
        t0 = time.time()
        q.ctls[old].kill9()
        new = q.wait_active(but=(old,), timeout=60)
        t_act = first_trace(q.ctls[new], "event=active_controller", t0)
        addr = q.ctls[new].addr
        wait_until("every broker names the new controller", lambda: all(
            weirtest.cluster_state(b)["controller"] == addr
            for b in q.brokers.values()), 60, step=0.02)
        t_brk = time.time()
        fenced = live_fenced(q.ctls[new], t_act)
        gap = ack_gap_ms(prod, t0, time.time())
        row = {"round": r + 1, "killed": old, "new": new,
               "live_fenced": fenced,
               "active_ms": 1000 * (t_act - t0),
               "brokers_follow_ms": 1000 * (t_brk - t0),
               "produce_gap_ms": gap}
        log(f"(1) round {r + 1}: controller {old} killed, {new} active "
            f"after {row['active_ms']:.0f} ms, brokers follow by "
            f"{row['brokers_follow_ms']:.0f} ms; longest ack gap on f-0 "
            f"{gap:.0f} ms; live brokers fenced: {fenced}")
        rows.append(row)
        q.ctls[old].start()
    q.wait_healthy()
    return rows


def kill_case(q, prod, with_controller):
    old = q.wait_healthy()
    victim = q.part(0)["leader"]
    t0, idx = prod.mark()
    if with_controller:
        q.ctls[old].kill9()
    q.brokers[victim].kill9()
    t1 = prod.first_ack_after(idx, part=0, timeout=90)
    tl = last_ack_before(prod, t0)
    row = {"case": "leader+controller" if with_controller else "leader",
           "victim": victim, "unavail_ms": 1000 * (t1 - t0),
           "ack_gap_ms": 1000 * (t1 - tl) if tl else None}
    if with_controller:
        new = q.wait_active(but=(old,), timeout=60)
        t_act = first_trace(q.ctls[new], "event=active_controller", t0)
        fence = trace_times(q.ctls[new], f"event=broker_fenced broker={victim} ",
                            t0)
        row.update(new=new, active_ms=1000 * (t_act - t0),
                   fenced_ms=1000 * (fence[0] - t0) if fence else None,
                   live_fenced=live_fenced(q.ctls[new], t_act, (victim,)))
    else:
        fence = trace_times(q.ctls[old], f"event=broker_fenced broker={victim} ",
                            t0)
        disc = trace_times(q.ctls[old],
                           f"event=broker_connection_lost broker={victim} ", t0)
        row.update(fenced_ms=1000 * (fence[0] - t0) if fence else None,
                   disconnect_seen_ms=1000 * (disc[0] - t0) if disc else None)
    log(f"(2) {row}")
    q.brokers[victim].start()
    if with_controller:
        q.ctls[old].start()
    q.wait_healthy()
    prod.wait_progress(500, timeout=60)
    return row


def bench_unavailability(q, prod, rounds):
    rows = []
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        for both in order:
            row = kill_case(q, prod, both)
            row["round"] = r + 1
            rows.append(row)
    return rows


# ---- metadata throughput ---------------------------------------------------

def create_topics(addr, names, conns, window, rf):
    """CreateTopics straight to the controller at addr: one topic per
    request, `window` requests in flight per connection. Returns (seconds,
    errors {code: count})."""
    host, port = addr.rsplit(":", 1)
    parts = [names[i::conns] for i in range(conns)]
    errors = {}
    lock = threading.Lock()

    def one(names):
        s = socket.create_connection((host, int(port)), timeout=30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = done = 0

        def send(i):
            topic = pb_msg((1, names[i]), (2, 1), (3, rf))
            s.sendall(request(i + 1, CREATE_TOPICS, pb_msg((1, topic))))

        try:
            while sent < min(window, len(names)):
                send(sent)
                sent += 1
            while done < len(names):
                fr = read_frame(s, timeout=60)
                if fr is None:
                    raise RuntimeError("controller closed the connection")
                resp = fr[0]
                code = resp.get(2, [0])[-1]
                if code == 0 and 11 in resp:
                    res = pb_parse(pb_parse(resp[11][-1])[1][0])
                    code = res.get(2, [0])[-1]
                if code != 0:
                    with lock:
                        errors[code] = errors.get(code, 0) + 1
                done += 1
                if sent < len(names):
                    send(sent)
                    sent += 1
        finally:
            s.close()

    threads = [threading.Thread(target=one, args=(p,)) for p in parts]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return time.time() - t0, errors


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")


def bench_creates(q, single, reps):
    rows = []
    for r in range(reps):
        order = ("quorum", "single") if r % 2 == 0 else ("single", "quorum")
        for setup in order:
            if setup == "quorum":
                ctl = q.ctls[q.wait_healthy()]
                others = [c for c in q.ctls.values() if c is not ctl]
            else:
                ctl, others = single.ctl, []
            names = [f"c{setup[0]}{r}-{i}" for i in range(CREATES)]
            c0 = [cpu_s(p.proc.pid) for p in [ctl] + others]
            secs, errs = create_topics(ctl.addr, names, CONNS, WINDOW,
                                       CREATE_RF)
            c1 = [cpu_s(p.proc.pid) for p in [ctl] + others]
            prefix = f"event=topic_created topic={names[0][:-1]}"
            created = wait_until("creations traced", lambda: sum(
                1 for ln in ctl.log_text().splitlines() if prefix in ln)
                >= CREATES - sum(errs.values()) and sum(
                1 for ln in ctl.log_text().splitlines() if prefix in ln),
                10, step=0.2)
            row = {"rep": r + 1, "setup": setup, "creates": CREATES,
                   "seconds": secs, "traced": created, "per_s": (CREATES - sum(errs.values()))
                   / secs, "errors": errs,
                   "active_cpu_pct": 100 * (c1[0] - c0[0]) / secs,
                   "followers_cpu_pct": [100 * (b - a) / secs for a, b in
                                         zip(c0[1:], c1[1:])]}
            log(f"(3) {row}")
            rows.append(row)
    return rows


# ---- report ----------------------------------------------------------------

def pct(xs, q):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def f0(x):
    return "—" if x is None else f"{x:,.0f}"


def report(kill_rows, una_rows, create_rows, meta):
    out = [f"Controller quorum benchmark, {meta['utc']}, commit "
           f"{meta['commit']}, build {meta['build_type']}, load average at "
           f"start {meta['load_start']}, at end {meta['load_end']}"
           + (f", controller options {' '.join(CTL_ARGS)}" if CTL_ARGS
              else ""), ""]
    out += ["| measure | rounds | p50 ms | max ms | all (ms) |",
            "|---|--:|--:|--:|---|"]

    def line(name, xs):
        xs = [x for x in xs if x is not None]
        if xs:
            out.append(f"| {name} | {len(xs)} | {f0(pct(xs, 0.5))} | "
                       f"{f0(max(xs))} | {' '.join(f0(x) for x in xs)} |")

    line("(1) kill -9 of the active controller → new one active "
         "(its trace line)", [r["active_ms"] for r in kill_rows])
    line("(1) → every broker's `weir cluster` names it",
         [r["brokers_follow_ms"] for r in kill_rows])
    line("(1) longest gap between acks=all acks on f-0, kill to 3.5 s "
         "after the new one is active", [r["produce_gap_ms"] for r in kill_rows])
    lead = [r for r in una_rows if r["case"] == "leader"]
    both = [r for r in una_rows if r["case"] == "leader+controller"]
    line("(2a) kill -9 of f-0's leader → first ack after the kill",
         [r["unavail_ms"] for r in lead])
    line("(2a) same, last ack before → first after",
         [r["ack_gap_ms"] for r in lead])
    line("(2a) → the controller saw its connection close",
         [max(0.0, r["disconnect_seen_ms"]) if r.get("disconnect_seen_ms")
          is not None else None for r in lead])
    line("(2a) → dead leader fenced (`broker_fenced`)",
         [r["fenced_ms"] for r in lead])
    line("(2b) kill -9 of f-0's leader and the active controller → first "
         "ack after the kill", [r["unavail_ms"] for r in both])
    line("(2b) same, last ack before → first after",
         [r["ack_gap_ms"] for r in both])
    line("(2b) → new controller active", [r["active_ms"] for r in both])
    line("(2b) → dead leader fenced by the new controller",
         [r["fenced_ms"] for r in both])
    diffs = [b["unavail_ms"] - a["unavail_ms"] for a, b in zip(lead, both)]
    line("(2b) − (2a), pairs of the same round", diffs)
    with_ = [r["unavail_ms"] for r in both if r["live_fenced"]]
    without = [r["unavail_ms"] for r in both if not r["live_fenced"]]

    def ms(xs):
        return " ".join(f0(x) for x in xs) or "—"

    nf1 = sum(1 for r in kill_rows if r["live_fenced"])
    nf2 = sum(1 for r in both if r["live_fenced"])
    out += ["", f"Live brokers fenced by the new active controller (no "
            f"broker was killed, or not the victim) in its first 3.5 s: "
            f"(1) {nf1} of {len(kill_rows)} rounds, (2b) {nf2} of "
            f"{len(both)} rounds; (2b) unavailability in the rounds "
            f"without: {ms(without)} ms, with: {ms(with_)} ms"]
    if create_rows:
        out += ["", "| (3) setup | reps | creations | creations/s (median) | "
                "all | active controller CPU % | follower CPU % | errors |",
                "|---|--:|--:|--:|---|--:|---|---|"]
    for setup in ("quorum", "single"):
        rs = [r for r in create_rows if r["setup"] == setup]
        if not rs:
            continue
        fol = [x for r in rs for x in r["followers_cpu_pct"]]
        out.append(
            f"| {'3 voters' if setup == 'quorum' else '1 controller'} | "
            f"{len(rs)} | {CREATES} | {f0(pct([r['per_s'] for r in rs], .5))}"
            f" | {' '.join(f0(r['per_s']) for r in rs)} | "
            f"{f0(pct([r['active_cpu_pct'] for r in rs], .5))} | "
            f"{f0(pct(fol, .5)) if fol else '—'} | "
            f"{sum(sum(r['errors'].values()) for r in rs)} |")
    qs = [r for r in create_rows if r["setup"] == "quorum"]
    ss = [r for r in create_rows if r["setup"] == "single"]
    ratios = [a["per_s"] / b["per_s"] for a, b in zip(qs, ss)]
    if ratios:
        out += ["", f"3 voters ÷ 1 controller, creations/s, pairs of the "
                f"same repetition: median {pct(ratios, .5):.2f}× "
                f"({' '.join(f'{x:.2f}' for x in ratios)}); "
                f"{CONNS} connections × {WINDOW} in flight, 1 partition, "
                f"RF {CREATE_RF}"]
    return "\n".join(out) + "\n"


def git_head():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return r.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")


def build_type():
    try:
        with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
            txt = f.read()
    except OSError:
        return "?"
    m = re.search(r"^CMAKE_BUILD_TYPE:STRING=(.*)$", txt, re.M)
    san = "WEIR_SANITIZE:BOOL=ON" in txt
    return (m.group(1) if m else "?") + (" + sanitizers" if san else "")


def main():
    for b in (weirtest.BROKER_BIN, weirtest.CONTROLLER_BIN, weirtest.CLI_BIN):
        if not os.access(b, os.X_OK):
            sys.exit(f"missing {b}: build first (BUILD_DIR={BUILD_DIR})")
    meta = {"utc": STAMP, "commit": git_head(), "build_type": build_type(),
            "load_start": round(os.getloadavg()[0], 1)}
    if "Debug" in meta["build_type"] or "sanitizers" in meta["build_type"]:
        log("WARNING: a Debug or sanitizer build: numbers will be off")
    kill_rows, una_rows, create_rows = [], [], []
    with Bench() as q:
        weir(q.live_broker(), "topic", "create", TOPIC, "--partitions", "3",
             "--replication-factor", "3")
        q.wait_healthy()
        prod = Producer(q)
        try:
            prod.wait_progress(2000, timeout=60)
            kill_rows = bench_controller_kill(q, prod, ROUNDS)
            una_rows = bench_unavailability(q, prod, ROUNDS)
        finally:
            try:
                rc = prod.stop()
            except AssertionError as e:
                rc = f"stop: {e}"
            log(f"producer: {prod.sent} records written, {prod.acked()} "
                f"acknowledged, exit status {rc}")
        meta["producer"] = {"written": prod.sent, "acked": prod.acked(),
                            "rc": rc}
        single = weirtest.Cluster(args=BROKER_ARGS,
                                  prefix="weir-bench-single-")
        single.ctl.args += CTL_ARGS
        with single:
            create_rows = bench_creates(q, single, REPS)
    meta["load_end"] = round(os.getloadavg()[0], 1)
    text = report(kill_rows, una_rows, create_rows, meta)
    print(text)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)
    with open(os.path.splitext(RESULTS)[0] + ".json", "w") as f:
        json.dump({"meta": meta, "controller_kill": kill_rows,
                   "unavailability": una_rows, "creates": create_rows}, f,
                  indent=1)
    log(f"report in {RESULTS}")


if __name__ == "__main__":
    main()
