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
acknowledged again. Then the same through `weir produce`: records sent
while the ISR is below min ISR fail with NOT_ENOUGH_REPLICAS, not
REQUEST_TIMED_OUT. About 45 s."""
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import verdicts  # noqa: E402
from verdicts import (code, connect_to, definite, drain, name,  # noqa: E402
                      produce_request, read_answer, wait_leader)
from weirtest import (CLI_BIN, Cluster, log, run_main,  # noqa: E402
                      wait_until, weir)

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


def test_cli_producer_says_not_enough_replicas():
    """The same through libweir: `weir produce --acks all --report
    --delivery-timeout-ms 2000` writes 200 records/s; both followers are
    stopped for 8 s. Every record sent from 0.5 s after the ISR shrank
    until 2.5 s before the followers resume must fail with
    NOT_ENOUGH_REPLICAS, the real reason (definite: refused before the
    append), not REQUEST_TIMED_OUT. (Before: the writes waiting at the
    leader held the producer's five-batch window until their 30 s
    timeout, so every later record expired in the client's queue as
    REQUEST_TIMED_OUT.) Nothing reported failed with a definite code is
    in the log afterwards."""
    with Cluster(prefix="weir-fault-minisr-cli-") as c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", 1,
             "--replication-factor", 3, "--config",
             "min.insync.replicas=2")
        p = wait_leader(c.brokers[1], TOPIC, isr=3)
        leader = c.brokers[p["leader"]]
        followers = [c.brokers[i] for i in (1, 2, 3) if i != p["leader"]]
        proc = subprocess.Popen(
            [CLI_BIN, "--bootstrap", leader.addr, "produce", TOPIC, "--acks",
             "all", "--report", "--delivery-timeout-ms", "2000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        rows, sent_t = [], []
        reader = threading.Thread(target=lambda: rows.extend(
            ln.split() for ln in proc.stdout.read().decode().splitlines()),
            daemon=True)
        reader.start()
        stopped = []
        try:
            t_end = time.time() + 10
            t_stop = time.time() + 1
            t_shrunk = t_resume = None
            i = 0
            while time.time() < t_end:
                if not stopped and time.time() >= t_stop:
                    for f in followers:
                        f.proc.send_signal(signal.SIGSTOP)
                        stopped.append(f)
                    t_stop = time.time()
                if stopped and t_shrunk is None and \
                        verdicts.partition_info(leader, TOPIC)["isr"] == \
                        [p["leader"]]:
                    t_shrunk = time.time()
                if stopped and t_resume is None and \
                        time.time() >= t_stop + 8:
                    for f in stopped:
                        f.proc.send_signal(signal.SIGCONT)
                    t_resume = time.time()
                proc.stdin.write(b"".join(b"c-%d\n" % (i + k)
                                          for k in range(10)))
                proc.stdin.flush()
                sent_t += [time.time()] * 10
                i += 10
                time.sleep(0.05)
            proc.stdin.close()
            proc.wait(60)
            reader.join(10)
        finally:
            for f in stopped:
                f.proc.send_signal(signal.SIGCONT)
            if proc.poll() is None:
                proc.kill()
        assert t_shrunk is not None, "the ISR never shrank"
        assert len(rows) == len(sent_t), (len(rows), len(sent_t))
        kinds = {}
        for r in rows:
            k = r[1] if r[0] == "ERROR" else "ok"
            kinds[k] = kinds.get(k, 0) + 1
        log(f"{len(rows)} records; ISR shrank {t_shrunk - t_stop:.1f} s "
            f"after the stop; reports {kinds}")
        window = [i for i, t in enumerate(sent_t)
                  if t_shrunk + 0.5 <= t <= (t_resume or t_end) - 2.5]
        assert len(window) > 50, len(window)
        bad = [(i, rows[i]) for i in window
               if rows[i][:2] != ["ERROR", "NOT_ENOUGH_REPLICAS"]]
        assert not bad, bad[:5]
        wait_leader(leader, TOPIC, isr=3, timeout=30)
        got = set(drain(leader, TOPIC).values())
        for i, r in enumerate(rows):
            if r[0] == "ERROR" and definite(code(r[1])):
                assert f"c-{i}" not in got, (i, r)


if __name__ == "__main__":
    run_main([test_waiting_write_and_new_write_below_min_isr,
              test_cli_producer_says_not_enough_replicas])
