"""Idempotent producer against a real broker: forged batches with producer
ids and sequence numbers over the wire (duplicates, gaps, fenced epochs,
state rebuilt from the log after SIGTERM and kill -9), and `weir produce
--report` carried through a kill -9 of the broker: every acknowledged
record is in the log exactly once, at the offset reported for it."""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from weirtest import (Broker, weir, connect, read_frame, request, pb_msg,
                      pb_int, pb_parse, record_batch, run_main, log,
                      CLI_BIN, INIT_PRODUCER_ID, PRODUCE)

E_OK = 0
E_OUT_OF_ORDER_SEQUENCE = 34
E_DUPLICATE_SEQUENCE = 35
E_INVALID_PRODUCER_EPOCH = 36
E_UNKNOWN_PRODUCER_ID = 37


def init_producer_id(sock, corr=1):
    sock.sendall(request(corr, INIT_PRODUCER_ID, b""))
    resp, _ = read_frame(sock)
    assert pb_int(resp, 1) == corr
    assert pb_int(resp, 2) == 0, resp
    body = pb_parse(resp[16][0])
    return pb_int(body, 1), pb_int(body, 2)


def produce(sock, corr, topic, payload, acks=-1):
    """One partition's payload to partition 0: (error_code, base_offset)."""
    part = pb_msg((1, topic), (2, 0), (3, len(payload)))
    sock.sendall(request(corr, PRODUCE, pb_msg((1, acks), (3, [part])),
                         payload))
    resp, _ = read_frame(sock)
    assert pb_int(resp, 1) == corr
    res = pb_parse(pb_parse(resp[13][0])[1][0])
    return pb_int(res, 3), pb_int(res, 5)


def batch(pid, seq, values, epoch=0):
    return record_batch([v.encode() for v in values], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq)


def consume(b, topic, expect):
    """{(partition, offset): value} of the whole topic."""
    p = weir(b, "consume", topic, "--from-beginning", "--max-messages",
             expect, "--timeout-ms", 3000, "--format", r"%p %o %v\n",
             timeout=300)
    got = {}
    for line in p.stdout.decode().splitlines():
        if line:
            part, off, val = line.split(" ", 2)
            got[(int(part), int(off))] = val
    return got


def values_of(b, topic, expect):
    got = consume(b, topic, expect)
    return [got[k] for k in sorted(got)]


def test_duplicate_batch_gets_the_same_offset():
    with Broker() as b:
        weir(b, "topic", "create", "dup", "--partitions", 1)
        s = connect(b)
        pid, epoch = init_producer_id(s)
        assert epoch == 0
        first = batch(pid, 0, ["a", "b"])
        assert produce(s, 2, "dup", first) == (E_OK, 0)
        assert produce(s, 3, "dup", first) == (E_DUPLICATE_SEQUENCE, 0)
        assert produce(s, 4, "dup", batch(pid, 2, ["c"])) == (E_OK, 2)
        assert produce(s, 5, "dup", first) == (E_DUPLICATE_SEQUENCE, 0)
        # acks=1 answers the same way
        assert produce(s, 6, "dup", batch(pid, 2, ["c"]), acks=1) == \
            (E_DUPLICATE_SEQUENCE, 2)
        assert values_of(b, "dup", 3) == ["a", "b", "c"]
        # five more batches push the first out of what the broker remembers
        for i in range(5):
            assert produce(s, 10 + i, "dup", batch(pid, 3 + i, [f"x{i}"])) \
                == (E_OK, 3 + i)
        assert produce(s, 20, "dup", first)[0] == E_OUT_OF_ORDER_SEQUENCE
        assert produce(s, 21, "dup", batch(pid, 7, ["x4"])) == \
            (E_DUPLICATE_SEQUENCE, 7)
        # a plain batch is never checked
        plain = record_batch([b"p"])
        assert produce(s, 22, "dup", plain) == (E_OK, 8)
        assert produce(s, 23, "dup", plain) == (E_OK, 9)
        assert len(values_of(b, "dup", 10)) == 10


def restart_case(how):
    with Broker() as b:
        weir(b, "topic", "create", "rs", "--partitions", 1)
        s = connect(b)
        pid, _ = init_producer_id(s)
        batches = [batch(pid, 2 * i, [f"v{2 * i}", f"v{2 * i + 1}"])
                   for i in range(8)]
        for i, bt in enumerate(batches):
            assert produce(s, 10 + i, "rs", bt) == (E_OK, 2 * i)
        s.close()
        if how == "kill9":
            b.kill9()
            b.start()
            assert "event=recovered" in b.log_text()
        else:
            b.restart()
        assert "producers=1" in b.log_text().split("event=started")[-2]
        s = connect(b)
        # the last five are recognised from the log, the older ones not
        for i in range(3, 8):
            assert produce(s, 30 + i, "rs", batches[i]) == \
                (E_DUPLICATE_SEQUENCE, 2 * i), (how, i)
        assert produce(s, 40, "rs", batches[2])[0] == E_OUT_OF_ORDER_SEQUENCE
        assert produce(s, 41, "rs", batch(pid, 17, ["gap"]))[0] == \
            E_OUT_OF_ORDER_SEQUENCE
        assert produce(s, 42, "rs", batch(pid, 16, ["v16"])) == (E_OK, 16)
        # producer ids are never given twice, across restarts too
        pid2, _ = init_producer_id(s, 43)
        assert pid2 > pid, (pid, pid2)
        assert values_of(b, "rs", 17) == [f"v{i}" for i in range(17)]


def test_state_survives_sigterm():
    restart_case("sigterm")


def test_state_survives_kill9():
    restart_case("kill9")


def test_gap_is_out_of_order():
    with Broker() as b:
        weir(b, "topic", "create", "gap", "--partitions", 1)
        s = connect(b)
        pid, _ = init_producer_id(s)
        assert produce(s, 2, "gap", batch(pid, 0, ["a", "b"])) == (E_OK, 0)
        err, base = produce(s, 3, "gap", batch(pid, 3, ["d"]))
        assert (err, base) == (E_OUT_OF_ORDER_SEQUENCE, -1)
        # an unknown producer must start at 0
        assert produce(s, 4, "gap", batch(pid + 1000, 5, ["z"]))[0] == \
            E_UNKNOWN_PRODUCER_ID
        assert produce(s, 5, "gap", batch(pid, 2, ["c"])) == (E_OK, 2)
        assert values_of(b, "gap", 3) == ["a", "b", "c"]


def test_old_epoch_is_fenced():
    with Broker() as b:
        weir(b, "topic", "create", "ep", "--partitions", 1)
        s = connect(b)
        pid, _ = init_producer_id(s)
        assert produce(s, 2, "ep", batch(pid, 0, ["a"], epoch=0)) == (E_OK, 0)
        # a newer epoch starts over at sequence 0, and only there
        assert produce(s, 3, "ep", batch(pid, 1, ["b"], epoch=1))[0] == \
            E_OUT_OF_ORDER_SEQUENCE
        assert produce(s, 4, "ep", batch(pid, 0, ["b"], epoch=1)) == (E_OK, 1)
        assert produce(s, 5, "ep", batch(pid, 1, ["c"], epoch=0))[0] == \
            E_INVALID_PRODUCER_EPOCH
        assert produce(s, 6, "ep", batch(pid, 0, ["a"], epoch=0))[0] == \
            E_INVALID_PRODUCER_EPOCH
        assert values_of(b, "ep", 2) == ["a", "b"]


def test_produce_report_through_kill9():
    n = 20000
    b = Broker()
    b.start()
    try:
        weir(b, "topic", "create", "k9", "--partitions", 3)
        prod = subprocess.Popen(
            [CLI_BIN, "--bootstrap", b.addr, "produce", "k9", "--report",
             "--linger-ms", "2", "--batch-size", "2000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        lines = []
        errors = []

        def reader():
            for line in prod.stdout:
                lines.append(line.decode().strip())

        def err_reader():
            for line in prod.stderr:
                errors.append(line.decode().strip())
        threads = [threading.Thread(target=reader, daemon=True),
                   threading.Thread(target=err_reader, daemon=True)]
        for t in threads:
            t.start()
        killed = []

        def killer():
            # mid-stream, while requests are in flight: some of them
            # written but not acknowledged, so their retries are duplicates
            for at in (4000, 9000, 14000):
                while len(lines) < at and prod.poll() is None:
                    time.sleep(0.001)
                log(f"kill -9 with {len(lines)} of {n} reported")
                b.kill9()
                time.sleep(0.3)
                b.start()
                killed.append(True)
        kt = threading.Thread(target=killer, daemon=True)
        kt.start()
        for start in range(0, n, 1000):
            prod.stdin.write("".join(f"v{i}\n" for i in
                                     range(start, start + 1000)).encode())
            prod.stdin.flush()
        kt.join(120)
        prod.stdin.close()
        assert prod.wait(200) == 0, errors[-5:]
        for t in threads:
            t.join(10)
        assert len(killed) == 3, f"{len(killed)} kills before the end"
        assert len(lines) == n, f"{len(lines)} report lines for {n}"
        reported = {}
        for i, line in enumerate(lines):
            assert not line.startswith("ERROR"), (i, line)
            part, off = map(int, line.split())
            assert (part, off) not in reported, f"offset reported twice: {line}"
            reported[(part, off)] = f"v{i}"
        got = consume(b, "k9", n + 1000)
        assert len(got) == n, f"{len(got)} records in the log for {n}"
        for key, val in reported.items():
            assert got.get(key) == val, (key, val, got.get(key))
        dups = b.log_text().count("event=produce_duplicate")
        log(f"{n} records, each once at its reported offset; {dups} "
            f"retried payloads were answered as duplicates")
    finally:
        b.cleanup()


if __name__ == "__main__":
    run_main([test_duplicate_batch_gets_the_same_offset,
              test_state_survives_sigterm,
              test_state_survives_kill9,
              test_gap_is_out_of_order,
              test_old_epoch_is_fenced,
              test_produce_report_through_kill9])
