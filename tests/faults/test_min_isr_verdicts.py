#!/usr/bin/env python3
"""acks=all below min.insync.replicas says so (issue 12, item 12b).

A controller and three brokers; topic `m`, one partition, replication
factor 3, min.insync.replicas 2. Both followers are stopped with SIGSTOP
and a write is sent to the leader at once, so that it is appended and
waits for followers that never fetch. When the controller has fenced them
(session timeout, 3 s) and the ISR is the leader alone, that waiting write
must be answered NOT_ENOUGH_REPLICAS_AFTER_APPEND (retriable, indefinite:
it is in the leader's log and may or may not survive) well before its
timeout_ms, never REQUEST_TIMED_OUT. A write sent after that is refused
before it is appended: NOT_ENOUGH_REPLICAS (definite), and is never read.
The followers are then resumed; the ISR fills again and writes are
acknowledged again. About 25 s."""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import verdicts  # noqa: E402
from verdicts import (code, connect_to, definite, drain, name,  # noqa: E402
                      produce_request, read_answer, wait_leader)
from weirtest import Cluster, log, run_main, wait_until, weir  # noqa: E402

TOPIC = "m"
WAIT_TIMEOUT_MS = 15000  # the waiting write's timeout_ms


def test_waiting_write_and_new_write_below_min_isr():
    with Cluster(prefix="weir-fault-minisr-") as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", 1,
             "--replication-factor", 3, "--config",
             "min.insync.replicas=2")
        p = wait_leader(c.brokers[1], TOPIC, isr=3)
        leader = c.brokers[p["leader"]]
        followers = [c.brokers[i] for i in (1, 2, 3) if i != p["leader"]]
        weir(leader, "produce", TOPIC, "--acks", "all",
             input=b"".join(b"warm-%d\n" % i for i in range(20)))
        s = connect_to(leader)
        stopped = []
        try:
            for f in followers:
                f.proc.send_signal(signal.SIGSTOP)
                stopped.append(f)
            t0 = time.time()
            s.sendall(produce_request(1, TOPIC, 0, ["waiting-0"],
                                      timeout_ms=WAIT_TIMEOUT_MS))
            log(f"followers {[f.port for f in followers]} stopped; a write "
                f"sent with timeout_ms {WAIT_TIMEOUT_MS}")
            ans = read_answer(s, t0 + WAIT_TIMEOUT_MS / 1000 + 10)
            took = time.time() - t0
            assert ans is not None, "no answer to the waiting write"
            log(f"waiting write answered after {took:.1f} s: "
                f"{name(ans[1])}: {ans[3]}")
            assert ans[1] != code("REQUEST_TIMED_OUT"), ans
            assert ans[1] == code("NOT_ENOUGH_REPLICAS_AFTER_APPEND"), ans
            assert not definite(ans[1])
            assert took < WAIT_TIMEOUT_MS / 1000 - 3, took
            p = verdicts.partition_info(leader, TOPIC)
            assert p["isr"] == [p["leader"]], p
            # a new write is refused before it is appended
            t1 = time.time()
            s.sendall(produce_request(2, TOPIC, 0, ["refused-0"],
                                      timeout_ms=WAIT_TIMEOUT_MS))
            ans = read_answer(s, t1 + 10)
            assert ans is not None, "no answer to the new write"
            log(f"new write answered after {time.time() - t1:.1f} s: "
                f"{name(ans[1])}: {ans[3]}")
            assert ans[1] == code("NOT_ENOUGH_REPLICAS"), ans
            assert definite(ans[1])
        finally:
            for f in stopped:
                f.proc.send_signal(signal.SIGCONT)
            s.close()
        wait_leader(leader, TOPIC, isr=3, timeout=30)
        out = weir(leader, "produce", TOPIC, "--acks", "all", "--report",
                   input=b"after-0\n", timeout=60)
        assert not out.stdout.startswith(b"ERROR"), out.stdout
        got = wait_until("the last write readable",
                         lambda: (lambda d: d if "after-0" in d.values()
                                  else None)(drain(leader, TOPIC)), 20)
        values = list(got.values())
        log(f"log: {len(values)} records; waiting-0 "
            f"{'in' if 'waiting-0' in values else 'not in'} it (either is "
            f"right: its answer was indefinite)")
        assert "refused-0" not in values, values
        assert values.count("after-0") == 1, values


if __name__ == "__main__":
    run_main([test_waiting_write_and_new_write_below_min_isr])
