#!/usr/bin/env python3
"""A leader cut off from the controller says so (issue 12, item 12c).

The controller is paused (SIGSTOP) while every broker leads a partition.
Once no heartbeat has been answered for longer than the session timeout,
each leader logs event=controller_unreachable_while_leading (warn), again
every 5 s while it lasts and no more often; when the controller is resumed
(SIGCONT), each logs event=controller_contact_restored (info). Before this,
a leader logged nothing at info or above while the controller was gone.
Every wait is bounded; only processes started here are signalled, by PID."""
import calendar
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import Cluster, log, run_main, wait_until, weir  # noqa: E402

SESSION_S = 3.0  # the controller's default session timeout
HEARTBEAT_S = 0.5  # the brokers' default heartbeat interval
PAUSE_S = 14.0
WARN = "event=controller_unreachable_while_leading"
BACK = "event=controller_contact_restored"


def warn_times(b, mark):
    """Seconds (since the epoch) of the warnings logged after mark."""
    out = []
    for line in b.log_text()[mark:].splitlines():
        if WARN in line:
            ts = line.split()[0].split("=", 1)[1]  # 2026-...T..:..:..mmmZ
            out.append(calendar.timegm(time.strptime(ts[:19],
                                                     "%Y-%m-%dT%H:%M:%S"))
                       + int(ts[20:23]) / 1000.0)
    return out


def test_leaders_warn_while_cut_off_and_say_when_back():
    with Cluster(prefix="weir-fault-cutoff-") as c:
        weir(c.brokers[1], "topic", "create", "cut", "--partitions", "3",
             "--replication-factor", "3")

        def leaders():
            st = c.state()
            return {p["leader"] for k, p in st["partitions"].items()
                    if k[0] == "cut"}
        wait_until("every broker leads", lambda: leaders() == {1, 2, 3}, 15)
        marks = {i: len(b.log_text()) for i, b in c.brokers.items()}
        os.kill(c.ctl.proc.pid, signal.SIGSTOP)
        paused = time.time()
        log(f"controller paused for {PAUSE_S}s")
        try:
            wait_until("every leader warned", lambda: all(
                WARN in b.log_text()[marks[i]:]
                for i, b in c.brokers.items()), SESSION_S + 5)
            first = time.time() - paused
            time.sleep(max(0.0, PAUSE_S - (time.time() - paused)))
        finally:
            os.kill(c.ctl.proc.pid, signal.SIGCONT)
        log(f"controller resumed; first warnings within {first:.1f}s")
        wait_until("every leader says contact is back", lambda: all(
            BACK in b.log_text()[marks[i]:]
            for i, b in c.brokers.items()), 15)
        for i, b in c.brokers.items():
            times = warn_times(b, marks[i])
            gaps = [round(y - x, 1) for x, y in zip(times, times[1:])]
            log(f"broker {i}: {len(times)} warnings, gaps {gaps}")
            # the last answered heartbeat may be up to one interval older
            # than the pause
            assert times[0] - paused > SESSION_S - HEARTBEAT_S - 0.1, \
                times[0] - paused
            assert len(times) >= 2, "warned once only, not while it lasted"
            assert all(g >= 4.9 for g in gaps), gaps
            line = [ln for ln in b.log_text()[marks[i]:].splitlines()
                    if WARN in ln][0]
            assert "leading=" in line and "leading=0" not in line, line


if __name__ == "__main__":
    run_main([test_leaders_warn_while_cut_off_and_say_when_back])
