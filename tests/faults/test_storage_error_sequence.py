#!/usr/bin/env python3
"""A retriable storage error does not turn the idempotent producer's later
batches into permanent failures (issue 12, item 12a).

A controller and three brokers, each with its data directory on its own
small tmpfs (16 MiB, mounted by the test: needs root, else skipped).
Topic `s`: one partition, replication factor 3, min.insync.replicas 2.
`weir produce --acks all --report` (idempotent, small batches, several in
flight) writes unique values at about 2,000 records/s with a 2.5 s
delivery timeout. After 2 s the leader's filesystem is filled with a
file for 4 s, so its appends fail with ENOSPC (STORAGE), then freed.

Must hold: no record is reported OUT_OF_ORDER_SEQUENCE: the batches
behind a failing one wait for it and are never "failed for good" for its
sake; a record whose delivery timeout ran out during the fault fails with
a retriable code (and if that code is definite, the record is not in the
log); every record sent after the space came back is acknowledged; the
log holds every acknowledged record once, at its offset, in the order
sent, and no value twice. About 15 s."""
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from verdicts import CODES, drain, wait_leader  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC = "s"
RATE = 2000          # records a second
CHUNK = 40           # records per write to the producer's stdin
RUN_S = 9.0          # how long the producer is fed
FILL_AT_S, FILL_S = 2.0, 4.0
DELIVERY_TIMEOUT_MS = 2500


class TmpfsCluster(weirtest.Cluster):
    """weirtest.Cluster with every broker's data directory on its own
    16 MiB tmpfs; unmounted on exit."""

    def __init__(self):
        super().__init__(prefix="weir-fault-full-")
        self.mounts = []
        try:
            for b in self.brokers.values():
                os.makedirs(b.data_dir)
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m",
                                "weir-fault-full", b.data_dir], check=True)
                self.mounts.append(b.data_dir)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __enter__(self):
        try:
            return super().__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        for b in self.brokers.values():
            if b.proc and b.proc.poll() is None:
                b.kill9()
        if self.ctl.proc and self.ctl.proc.poll() is None:
            self.ctl.kill9()
        for m in self.mounts:
            subprocess.run(["umount", m], check=False)
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)


class Feeder:
    """`weir produce` fed f'v-{i}' at RATE records a second from a thread;
    the time each chunk was written is kept."""

    def __init__(self, broker):
        self.proc = subprocess.Popen(
            [weirtest.CLI_BIN, "--bootstrap", broker.addr, "produce", TOPIC,
             "--acks", "all", "--report", "--linger-ms", "1",
             "--batch-size", "400", "--delivery-timeout-ms",
             str(DELIVERY_TIMEOUT_MS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.chunk_t = []
        self.sent = 0
        self.out = []
        self.err = []
        self.threads = [threading.Thread(target=f, daemon=True) for f in
                        (self._write, self._read, self._read_err)]
        for t in self.threads:
            t.start()

    def _write(self):
        t0 = time.time()
        try:
            while time.time() - t0 < RUN_S:
                data = "".join(f"v-{i}\n" for i in
                               range(self.sent, self.sent + CHUNK)).encode()
                self.chunk_t.append(time.time())
                self.sent += CHUNK
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
                time.sleep(CHUNK / RATE)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def _read(self):
        for raw in self.proc.stdout:
            self.out.append(raw.decode().split())

    def _read_err(self):
        for raw in self.proc.stderr:
            self.err.append(raw.decode().rstrip())

    def wait(self, timeout):
        for t in self.threads:
            t.join(timeout)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError("weir produce did not finish")


def fill(path):
    """Fill the filesystem of path with one file; returns its name."""
    name = os.path.join(path, "filler")
    subprocess.run(["dd", "if=/dev/zero", f"of={name}", "bs=64k"],
                   capture_output=True, check=False)
    return name


def test_storage_error_does_not_fail_later_batches():
    with TmpfsCluster() as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", 1,
             "--replication-factor", 3, "--config",
             "min.insync.replicas=2")
        p = wait_leader(c.brokers[1], TOPIC, isr=3)
        leader = c.brokers[p["leader"]]
        other = c.brokers[p["replicas"][-1] if p["replicas"][-1] !=
                          p["leader"] else p["replicas"][0]]
        feed = Feeder(other)
        time.sleep(FILL_AT_S)
        filler = fill(leader.data_dir)
        t_fill = time.time()
        log(f"broker {p['leader']}'s filesystem filled")
        time.sleep(FILL_S)
        os.unlink(filler)
        t_free = time.time()
        log("freed")
        feed.wait(60)
        refused = leader.log_text().count("event=produce_refused")
        rows = feed.out
        assert len(rows) == feed.sent, (len(rows), feed.sent)
        failed = {}
        acked = {}
        for i, r in enumerate(rows):
            if r[0] == "ERROR":
                failed[i] = r[1]
            else:
                acked[i] = (int(r[0]), int(r[1]))
        kinds = {}
        for nm in failed.values():
            kinds[nm] = kinds.get(nm, 0) + 1
        log(f"{feed.sent} records, {len(acked)} acknowledged, failed "
            f"{kinds}; the leader logged {refused} refused writes")
        for i, nm in failed.items():
            assert nm != "OUT_OF_ORDER_SEQUENCE", (i, nm, feed.err[:5])
            assert CODES.get(nm, (0, False, False))[1], (i, nm, feed.err[:5])
        late = [i for i in range(feed.sent)
                if feed.chunk_t[i // CHUNK] > t_free + 0.2]
        assert late, "nothing was sent after the space came back"
        assert all(i in acked for i in late), \
            [(i, failed.get(i)) for i in late if i not in acked][:5]
        end = wait_until("the drain", lambda: (lambda d: d if len(d) >=
                         len(acked) else None)(drain(leader, TOPIC)), 30)
        where = {}
        for o, v in end.items():
            assert v not in where, f"{v} at {where[v]} and {o}"
            where[v] = o
        for i, (_, off) in acked.items():
            assert end.get(off) == f"v-{i}", (i, off, end.get(off))
        offs = [acked[i][1] for i in sorted(acked)]
        assert offs == sorted(offs), "acknowledged out of input order"
        for i, nm in failed.items():
            if CODES[nm][2]:  # definite: certainly not written
                assert f"v-{i}" not in where, (i, nm)
        in_log = sum(1 for i in failed if f"v-{i}" in where)
        log(f"log: {len(end)} records; {in_log} of the failed ones are in "
            f"it (allowed: their errors were indefinite); fault lasted "
            f"{t_free - t_fill:.1f} s")


if __name__ == "__main__":
    if os.geteuid() != 0:
        log("SKIPPED: mounting a tmpfs needs root")
        sys.exit(77)  # the faults tier's SKIP_RETURN_CODE
    run_main([test_storage_error_does_not_fail_later_batches])
