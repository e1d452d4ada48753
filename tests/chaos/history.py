"""The chaos harness's workloads, the history they record, and the checker.

Workloads are the real `weir` CLI:
- producers: `weir produce --acks all --report --report-times` (idempotent,
  the default) fed unique values; each line of the report is the outcome
  of one send: acknowledged at PARTITION OFFSET, or failed with an error;
- consumers: `weir consume --group G --group-events --format '%p %o %v'`,
  whose output interleaves every record polled with the group's events
  (assigned, revoked, committed, commit failed) in the order they happened.

The checker reads that history plus a full drain of the topic after
healing, and fails the run on: an acknowledged record missing, one offset
holding two values, a duplicate value, a consumer's offsets going backwards
within one assignment, committed offsets going backwards, and a write that
definitely failed showing up in the log."""
import os
import re
import signal
import subprocess
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _error_table():
    """The names of the definite errors, read from common/err.h: the write
    was certainly not applied. Retriable or not does not matter: libweir
    reports a record's failure with a definite code only when no attempt
    of it can have been written (a refusal after an earlier timeout is
    reported with the indefinite code), and the broker answers with a
    definite code only before it began to write. Every other error (and an
    unknown name) is indefinite: the write may be in the log."""
    out = set()
    path = os.path.join(ROOT, "common", "err.h")
    with open(path) as f:
        for m in re.finditer(r"X\((\w+), \d+, (true|false), (true|false),",
                             f.read()):
            if m.group(3) == "true":
                out.add(m.group(1))
    out.discard("OK")
    return out


DEFINITE_ERRORS = _error_table()


class Producer:
    """One `weir produce` process writing f'{name}-{i}' at `rate` records a
    second, in chunks, from a thread. Every report line is kept with the
    index of its record; the time of each chunk's write is kept so a
    record's send time is known."""

    def __init__(self, cli, topic, name, rate=1000, chunk=20):
        self.name = name
        self.proc = subprocess.Popen(
            cli + ["produce", topic, "--acks", "all", "--report",
                   "--report-times", "--linger-ms", "2",
                   "--delivery-timeout-ms", "60000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.rate, self.chunk = rate, chunk
        self.sent = 0
        self.chunk_t = []  # wall time of each chunk written
        self.reports = []  # (index, partition, offset, ack_s) or
        #                    (index, None, ERROR_NAME, ack_s)
        self.stderr = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=f, daemon=True) for f in
                        (self._write, self._read, self._read_err)]
        for t in self.threads:
            t.start()

    def value(self, i):
        return f"{self.name}-{i}"

    def _write(self):
        period = self.chunk / self.rate
        try:
            while not self.stopping.is_set() and self.sent < 5_000_000:
                n = self.sent
                data = "".join(self.value(i) + "\n" for i in
                               range(n, n + self.chunk)).encode()
                with self.lock:
                    self.chunk_t.append(time.time())
                    self.sent += self.chunk
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
                time.sleep(period)
        except (BrokenPipeError, ValueError, OSError):
            pass

    def _read(self):
        for raw in self.proc.stdout:
            w = raw.decode().split()
            i = len(self.reports)
            if len(w) == 3 and w[0] == "ERROR":
                self.reports.append((i, None, w[1], int(w[2]) / 1000))
            elif len(w) == 3:
                self.reports.append((i, int(w[0]), int(w[1]),
                                     int(w[2]) / 1000))

    def _read_err(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode().rstrip())

    def send_time(self, i):
        return self.chunk_t[i // self.chunk]

    def alive(self):
        return self.proc.poll() is None

    def acked(self):
        return sum(1 for r in self.reports if r[1] is not None)

    def stop(self, timeout=120):
        """Close stdin, let the producer flush; records it never answered
        are indefinite."""
        self.stopping.set()
        self.threads[0].join(10)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for t in self.threads[1:]:
            t.join(10)
        return self.proc.returncode


class Consumer:
    """One `weir consume --group` process; every output line is kept with
    the time it arrived."""

    def __init__(self, cli, topic, group, name):
        self.name = name
        self.proc = subprocess.Popen(
            cli + ["consume", topic, "--group", group, "--from-beginning",
                   "--group-events", "--auto-commit-interval-ms", "1000",
                   "--format", r"%p %o %v\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []  # (arrival time, text)
        self.stderr = []
        self.threads = [threading.Thread(target=f, daemon=True) for f in
                        (self._read, self._read_err)]
        for t in self.threads:
            t.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.append((time.time(), raw.decode().rstrip("\n")))

    def _read_err(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode().rstrip())

    def alive(self):
        return self.proc.poll() is None

    def polls(self):
        return sum(1 for _, ln in self.lines if not ln.startswith("#"))

    def stop(self, timeout=60):
        """SIGTERM: the consumer commits, leaves the group and exits."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for t in self.threads:
            t.join(10)
        return self.proc.returncode


def parse_drain(text):
    """{(partition, offset): value} from '%p %o %v' lines."""
    got = {}
    dupes = []
    for line in text.splitlines():
        if not line:
            continue
        p, o, v = line.split(" ", 2)
        key = (int(p), int(o))
        if key in got and got[key] != v:
            dupes.append((key, got[key], v))
        got[key] = v
    return got, dupes


def writes(producers):
    """Every send's outcome: acked {value: (p, o, t_send, t_ack)}, failed
    {value: (name, definite)}, indefinite [values], and the counts."""
    acked, failed, indefinite = {}, {}, []
    attempted = 0
    for pr in producers:
        attempted += pr.sent
        for i, part, off, t in pr.reports:
            v = pr.value(i)
            if part is None:
                failed[v] = (off, off in DEFINITE_ERRORS)
            else:
                acked[v] = (part, off, pr.send_time(i), t)
        indefinite += [pr.value(i) for i in range(len(pr.reports), pr.sent)]
    return acked, failed, indefinite, attempted


class Violations:
    def __init__(self, limit=20):
        self.counts = {}
        self.examples = []
        self.limit = limit

    def add(self, rule, msg):
        self.counts[rule] = self.counts.get(rule, 0) + 1
        if len(self.examples) < self.limit:
            self.examples.append(f"{rule}: {msg}")

    def total(self):
        return sum(self.counts.values())


RULES = ("acknowledged-missing", "two-values-at-offset", "duplicate",
         "definite-failure-visible", "consumer-backwards",
         "commit-backwards", "offset-gap", "unowned-partition-read")


def against_log(bad, log_vals, what, v, p, o):
    """Value v, seen at p:o (acknowledged there, or read there), must be
    what the drained log holds at p:o."""
    got = log_vals.get((p, o))
    if got is None:
        bad.add("acknowledged-missing", f"{what} {v} at {p}:{o}, not in the "
                f"log")
    elif got != v:
        bad.add("two-values-at-offset", f"{what} {v} at {p}:{o}, the log "
                f"holds {got}")


def check(producers, consumers, drain, n_parts):
    """Run every rule over the history and the drain; returns
    (Violations, summary dict)."""
    bad = Violations()
    acked, failed, indefinite, attempted = writes(producers)
    log_vals, drain_dupes = drain
    for key, v1, v2 in drain_dupes:
        bad.add("two-values-at-offset", f"drain read {v1!r} and {v2!r} "
                f"at {key[0]}:{key[1]}")
    # acknowledged writes: in the log, at their offset, with their value
    at = {}
    for v, (p, o, _, _) in acked.items():
        if (p, o) in at:
            bad.add("two-values-at-offset", f"{at[(p, o)]} and {v} both "
                    f"acknowledged at {p}:{o}")
        at[(p, o)] = v
        against_log(bad, log_vals, "acknowledged", v, p, o)
    where = {}
    for key, v in log_vals.items():
        if v in where:
            bad.add("duplicate", f"{v} at {where[v][0]}:{where[v][1]} and "
                    f"at {key[0]}:{key[1]}")
        else:
            where[v] = key
        if v in failed and failed[v][1]:
            bad.add("definite-failure-visible", f"{v} failed with "
                    f"{failed[v][0]} but is at {key[0]}:{key[1]}")
    for p in range(n_parts):
        offs = sorted(o for (q, o) in log_vals if q == p)
        if offs and offs != list(range(offs[0], offs[0] + len(offs))):
            bad.add("offset-gap", f"partition {p} is not dense")
    # consumers: reads match the log; offsets only go up within an
    # assignment; committed offsets never go back, group-wide
    commits = {}  # partition -> [(t, offset, consumer)]
    reads = 0
    for c in consumers:
        owned, last = set(), {}
        for t, ln in c.lines:
            if ln.startswith("# "):
                w = ln[2:].split()
                if w[0] == "assigned":
                    for p in map(int, w[1:]):
                        owned.add(p)
                        last.pop(p, None)
                elif w[0] == "revoked":
                    for p in map(int, w[1:]):
                        owned.discard(p)
                        last.pop(p, None)
                elif w[0] == "committed":
                    for po in w[1:]:
                        p, o = map(int, po.split(":"))
                        commits.setdefault(p, []).append((t, o, c.name))
                continue
            try:
                p, o, v = ln.split(" ", 2)
                p, o = int(p), int(o)
            except ValueError:
                continue
            reads += 1
            if p not in owned:
                bad.add("unowned-partition-read", f"{c.name} read {p}:{o} "
                        f"without owning partition {p}")
            if p in last and o <= last[p]:
                bad.add("consumer-backwards", f"{c.name} read {p}:{o} after "
                        f"{p}:{last[p]} in one assignment")
            last[p] = o
            against_log(bad, log_vals, f"{c.name} read", v, p, o)
    n_commits = 0
    for p, seq in commits.items():
        seq.sort()
        n_commits += len(seq)
        for (t1, o1, c1), (t2, o2, c2) in zip(seq, seq[1:]):
            if o2 < o1:
                bad.add("commit-backwards", f"partition {p}: {c1} committed "
                        f"{o1}, then {c2} committed {o2} "
                        f"({1000 * (t2 - t1):.0f} ms later)")
    in_log = set(log_vals.values())
    summary = {
        "attempted": attempted,
        "acknowledged": len(acked),
        "failed": sum(1 for v in failed.values() if v[1]),
        "indefinite": len(indefinite) + sum(
            1 for v in failed.values() if not v[1]),
        "indefinite_in_log": sum(1 for v in indefinite if v in in_log) + sum(
            1 for v, f in failed.items() if not f[1] and v in in_log),
        "in_log": len(log_vals),
        "consumer_reads": reads,
        "commits": n_commits,
        "violations": dict(bad.counts),
        "examples": list(bad.examples),
    }
    return bad, summary


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else None


def fault_metrics(fault, producers, consumers):
    """For one fault {t_fault, t_heal, partitions}: unavailability (from the
    fault to the first acknowledgement of a write sent after it, on the
    last of the partitions the fault hit to take one), fault to the next
    successful commit, and the operations completed while the fault
    lasted."""
    t0, t1 = fault["t_fault"], fault["t_heal"]
    parts = set(fault["partitions"])
    first = {}  # partition -> its first acknowledgement after the fault
    acks = 0
    for pr in producers:
        for i, part, _, t in pr.reports:
            if part is None:
                continue
            if t0 <= t <= t1:
                acks += 1
            if part in parts and t > t0 and pr.send_time(i) >= t0:
                first[part] = min(first.get(part, t), t)
    # the longest wait between successive acknowledgements on one of the
    # fault's partitions, from the fault to the first one after the heal
    # (a fault that leaves the partitions writable for a while, such as a
    # leader cut off from the controller only, shows its outage here)
    gap = None
    for part in parts:
        ts = sorted(t for pr in producers for _, p, _, t in pr.reports
                    if p == part and t > t0)
        prev = t0
        for t in ts:
            gap = max(gap or 0.0, t - prev)
            prev = t
            if t > t1:
                break
    polls = commit_first = 0
    commits = 0
    for c in consumers:
        for t, ln in c.lines:
            if ln.startswith("# committed"):
                if t0 <= t <= t1:
                    commits += 1
                if t > t0 and (not commit_first or t < commit_first):
                    commit_first = t
            elif not ln.startswith("#") and t0 <= t <= t1:
                polls += 1
    return {
        # until every partition the fault hit took a write again
        "unavailable_ms": None if not first else round(
            1000 * (max(first.values()) - t0)),
        "longest_gap_ms": None if gap is None else round(1000 * gap),
        "commit_gap_ms": None if not commit_first else round(
            1000 * (commit_first - t0)),
        "acks_during": acks, "polls_during": polls,
        "commits_during": commits,
    }
