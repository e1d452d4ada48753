#!/usr/bin/env python3
"""Issue 12 item 6 (first half): a follower reports only what is durable.

One follower runs with a small LD_PRELOAD shim (built here with cc) that
makes fdatasync of the partition's segment files fail with EIO once a
trigger file exists. With min.insync.replicas = 3, an acks=all write then
needs that follower's fetch offset to pass it. The follower appends the
batch, its fsync fails: it must never send a fetch offset past what it
flushed, so the write is not acknowledged and the leader's high watermark
does not cover it. Before the fix the fetcher sent its log end after the
failed flush and the write was acknowledged. Every wait is bounded."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (LIST_OFFSETS, connect, log, pb_int, pb_msg,  # noqa
                      pb_parse, read_frame, request, run_main, wait_until,
                      weir)

TOPIC = "fs"

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fdatasync fails with EIO for files whose path ends in $FAILSYNC_SUFFIX
 * and contains the text of the file $FAILSYNC_TRIGGER, once that exists. */
int fdatasync(int fd)
{
    static int (*real)(int);
    const char *trigger = getenv("FAILSYNC_TRIGGER");
    const char *suffix = getenv("FAILSYNC_SUFFIX");
    char match[512];
    char link[64];
    char path[4096];
    FILE *f;
    size_t m;
    ssize_t n;

    if (real == NULL) {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    }
    f = trigger != NULL && suffix != NULL ? fopen(trigger, "r") : NULL;
    if (f != NULL) {
        m = fread(match, 1, sizeof(match) - 1, f);
        fclose(f);
        match[m] = '\0';
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof(path) - 1);
        if (m > 0 && n > 0) {
            size_t ls = strlen(suffix);
            path[n] = '\0';
            if (strstr(path, match) != NULL && (size_t)n >= ls &&
                strcmp(path + n - ls, suffix) == 0) {
                errno = EIO;
                return -1;
            }
        }
    }
    return real(fd);
}
"""


def build_shim(tmp):
    src = os.path.join(tmp, "failsync.c")
    so = os.path.join(tmp, "failsync.so")
    with open(src, "w") as f:
        f.write(SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, src, "-ldl"],
                   check=True, capture_output=True, timeout=60)
    return so


class Cluster(weirtest.Cluster):
    """Every broker runs with the shim; the trigger file says whose
    partition directory fails."""

    def __init__(self, so, trigger):
        super().__init__(args=["--replica-lag-time-max-ms", "3000"],
                         prefix="weir-flushfail-")
        for b in self.brokers.values():
            b.env = {"LD_PRELOAD": so, "FAILSYNC_TRIGGER": trigger,
                     "FAILSYNC_SUFFIX": ".log"}

    def part(self, but=()):
        return self.state(but)["partitions"][(TOPIC, 0)]


def latest_offset(broker):
    s = connect(broker)
    try:
        body = pb_msg((1, [pb_msg((1, TOPIC), (2, 0), (3, -1))]))
        s.sendall(request(1, LIST_OFFSETS, body))
        env, _ = read_frame(s)
        res = pb_parse(pb_parse(env[LIST_OFFSETS][0])[1][0])
        return pb_int(res, 3), pb_int(res, 4, -1)
    finally:
        s.close()


def report_rows(p):
    return [ln.split() for ln in p.stdout.decode().splitlines() if ln]


def test_follower_never_reports_unflushed_records():
    tmp = tempfile.mkdtemp(prefix="weir-failsync-")
    try:
        so = build_shim(tmp)
        trigger = os.path.join(tmp, "fail-now")
        with Cluster(so, trigger) as c:
            run(c, trigger)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(c, trigger):
    weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
         "--replication-factor", "3", "--config", "min.insync.replicas=3")
    p = wait_until("partition led", lambda: (
        lambda q: q if q["leader"] > 0 else None)(c.part()), 15)
    leader = p["leader"]
    victim = min({1, 2, 3} - {leader})
    wait_until("full ISR", lambda: sorted(c.part()["isr"]) == [1, 2, 3], 20)
    out = weir(c.brokers[leader], "produce", TOPIC, "--report",
               input=b"".join(b"a-%d\n" % i for i in range(10)))
    assert all(r[0] != "ERROR" for r in report_rows(out)), out.stdout
    assert latest_offset(c.brokers[leader]) == (0, 10)
    with open(trigger, "w") as f:
        f.write(f"/broker-{victim}/{TOPIC}-0/")
    t0 = time.time()
    out = weir(c.brokers[leader], "produce", TOPIC, "--report", "--acks",
               "all", "--delivery-timeout-ms", "8000", input=b"b-0\n",
               check=False, timeout=60)
    rows = report_rows(out)
    log(f"acks=all with broker {victim}'s fsync failing: exit "
        f"{out.returncode} {rows} after {time.time() - t0:.1f}s")
    text = c.brokers[victim].log_text()
    assert "Input/output error" in text, \
        "the shim did not fail the follower's fsync"
    assert rows and all(r[0] == "ERROR" for r in rows), rows
    # the high watermark never covered the record
    code, hw = latest_offset(c.brokers[leader])
    log(f"leader's latest offset: error {code}, offset {hw}")
    assert code != 0 or hw == 10, (code, hw)
    assert "event=partition_failed" in text


if __name__ == "__main__":
    run_main([test_follower_never_reports_unflushed_records])
