#!/usr/bin/env python3
"""The scrub stops when everything is verified, and starts again when a
log needs it. One broker on loopback with 100 topics of 3 partitions (300
partition logs), records in 10 of them, restarted with SIGTERM: after a
clean start nothing of the closed segments is verified, so the scrub
checks every log, then stops (`event=scrub_idle`).

Idle, the broker must then wake up less than 10 times a second (the
scrub's 100 ms timer alone is 10) and use under 1 % of a core over 5 s.
A topic created afterwards starts the scrub again: its log is checked
(`scrub_done`) and the scrub stops once more.

Before the fix the scrub timer fired every 100 ms for ever, each time
walking every partition (with a topic lookup per step): 12.5 wakeups a
second and 0.6 % of a core with 1,000 topics, doing nothing."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPICS = 100
PARTS = 3
WINDOW_S = 5.0
WAKEUPS_MAX = 10.0  # per second: below the scrub timer's own rate
CPU_MAX = 0.01  # share of one core


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")


def proc_wakeups(pid):
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("voluntary_ctxt_switches"):
                return int(ln.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in /proc")


def idle_use(b):
    pid = b.proc.pid
    c0, x0, t0 = proc_cpu(pid), proc_wakeups(pid), time.time()
    time.sleep(WINDOW_S)
    c1, x1, t1 = proc_cpu(pid), proc_wakeups(pid), time.time()
    return (c1 - c0) / (t1 - t0), (x1 - x0) / (t1 - t0)


def test_scrub_stops_when_everything_is_verified():
    with weirtest.Broker(args=["--scrub-bytes-per-sec", "16777216"]) as b:
        for i in range(TOPICS):
            weir(b, "topic", "create", f"s{i:03d}", "--partitions",
                 str(PARTS))
        for i in range(10):
            weir(b, "produce", f"s{i:03d}", "--partition", "0",
                 input=b"".join(b"r%d\n" % j for j in range(200)))
        b.stop()
        mark = len(b.log_text())
        b.start()
        wait_until("every log scrubbed", lambda: b.log_text()[mark:].count(
            "event=scrub_done") >= TOPICS * PARTS, 30)
        log(f"{TOPICS * PARTS} logs scrubbed after the restart")
        time.sleep(0.5)
        cpu, wakeups = idle_use(b)
        log(f"idle: {100 * cpu:.2f} % of a core, {wakeups:.1f} wakeups/s "
            f"over {WINDOW_S:.0f} s")
        assert wakeups < WAKEUPS_MAX, f"{wakeups:.1f} wakeups/s while idle"
        assert cpu < CPU_MAX, f"{100 * cpu:.2f} % of a core while idle"
        assert "event=scrub_idle" in b.log_text()[mark:]
        mark = len(b.log_text())
        weir(b, "topic", "create", "late", "--partitions", "1")
        wait_until("the new log scrubbed", lambda: "late-0 " in "".join(
            ln + " " for ln in b.log_text()[mark:].splitlines()
            if "event=scrub_done" in ln), 60)
        wait_until("the scrub stopped again", lambda: "event=scrub_idle"
                   in b.log_text()[mark:], 60)
        log("a topic created later was scrubbed, and the scrub stopped again")


if __name__ == "__main__":
    run_main([test_scrub_stops_when_everything_is_verified])
