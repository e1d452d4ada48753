#!/usr/bin/env python3
"""Issue 12 item 9: empty leader epochs do not wedge a follower.

A rolling restart of an idle topic: 200 records in each partition of an
RF 3 topic, then every broker in turn is stopped with SIGTERM (controlled
shutdown: its leaderships move, each move a new leader epoch with no
record in it) and started again. After each restart every ISR must be full
again within 20 s, and the idle brokers must use little CPU (a follower
stuck on the same DIVERGING answer fetched in a loop, and its leader
answered, each at 35-40 % of a core). Then two controlled shutdowns in a
row with no write in between (two brokers down at once, started again),
same checks. Every wait is bounded."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC = "idle"
PARTS = 3
ISR_TIMEOUT_S = 20
CPU_WINDOW_S = 3.0
CPU_MAX = 0.15  # share of one core an idle broker may use


def full_isrs(c, but=()):
    st = c.state(but)
    ps = {k: v for k, v in st["partitions"].items() if k[0] == TOPIC}
    if len(ps) != PARTS:
        return None
    bad = {k[1]: v["isr"] for k, v in ps.items()
           if v["leader"] < 0 or sorted(v["isr"]) != sorted(v["replicas"])}
    return None if bad else ps


def wait_full_isrs(c, what):
    t0 = time.time()
    try:
        wait_until(f"full ISRs {what}", lambda: full_isrs(c), ISR_TIMEOUT_S,
                   step=0.25)
    except AssertionError:
        st = c.state()
        log("ISRs after %ds: %s" % (ISR_TIMEOUT_S, ", ".join(
            f"p{k[1]} leader={v['leader']} isr={v['isr']}"
            for k, v in sorted(st["partitions"].items()) if k[0] == TOPIC)))
        cpu_use(c, "while stuck")
        raise
    log(f"full ISRs {what} after {time.time() - t0:.1f}s")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return int(w[11]) + int(w[12])  # utime + stime (fields 14, 15)


def cpu_use(c, what):
    """Share of a core each broker used over CPU_WINDOW_S."""
    hz = os.sysconf("SC_CLK_TCK")
    pids = {i: b.proc.pid for i, b in c.brokers.items()}
    t0 = time.time()
    before = {i: cpu_ticks(p) for i, p in pids.items()}
    time.sleep(CPU_WINDOW_S)
    dt = time.time() - t0
    use = {i: (cpu_ticks(p) - before[i]) / hz / dt for i, p in pids.items()}
    log(f"idle CPU {what}: " + ", ".join(
        f"broker {i} {u * 100:.0f}%" for i, u in sorted(use.items())))
    return use


def check_idle_cpu(c, what):
    use = cpu_use(c, what)
    hot = {i: u for i, u in use.items() if u > CPU_MAX}
    assert not hot, f"idle brokers busy {what}: {hot}"


class Cluster(weirtest.Cluster):
    def __init__(self):
        super().__init__(prefix="weir-rolling-")


def test_rolling_restart_of_idle_topic():
    with Cluster() as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions",
             str(PARTS), "--replication-factor", "3")
        wait_until("partitions led", lambda: (lambda st: all(
            st["partitions"].get((TOPIC, p), {}).get("leader", -1) > 0
            for p in range(PARTS)))(c.state()), 15)
        for p in range(PARTS):
            weir(c.brokers[1], "produce", TOPIC, "--partition", str(p),
                 input=b"".join(b"p%d-%d\n" % (p, i) for i in range(200)))
        wait_full_isrs(c, "after writing 200 records per partition")
        for i in (1, 2, 3):
            c.brokers[i].stop()
            c.brokers[i].start()
            c.wait_alive({1, 2, 3}, timeout=60)
            wait_full_isrs(c, f"after restarting broker {i}")
            check_idle_cpu(c, f"after restarting broker {i}")
        # two controlled shutdowns in a row, no write in between
        c.brokers[1].stop()
        c.brokers[2].stop()
        c.brokers[1].start()
        c.brokers[2].start()
        c.wait_alive({1, 2, 3}, timeout=60)
        wait_full_isrs(c, "after two controlled shutdowns in a row")
        check_idle_cpu(c, "after two controlled shutdowns in a row")
        # nothing acknowledged was lost on the way
        for p in range(PARTS):
            got = weir(c.brokers[1], "consume", TOPIC, "--partition", str(p),
                       "--from-beginning", "--max-messages", "200",
                       "--timeout-ms", "10000").stdout.split()
            assert got == [b"p%d-%d" % (p, i) for i in range(200)], \
                (p, got[:3], len(got))


if __name__ == "__main__":
    run_main([test_rolling_restart_of_idle_topic])
