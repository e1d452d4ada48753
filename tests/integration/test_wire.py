"""Malformed, oversized and stalled frames against a real broker, with a
healthy client beside them that must keep working at normal speed."""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from weirtest import (Broker, connect, read_frame, request, frame, pb_msg,
                      pb_int, pb_parse, closed_by_peer, record_batch, run_main,
                      log, METADATA, CREATE_TOPICS, PRODUCE, FETCH)

E_MALFORMED, E_FRAME_TOO_LARGE, E_UNSUPPORTED_API = 2, 6, 7
E_UNKNOWN_TOPIC, E_CORRUPT_MESSAGE, E_INVALID_REQUEST = 8, 15, 17

B = None


def create_topic(sock, name, parts=1):
    sock.sendall(request(1, CREATE_TOPICS,
                         pb_msg((1, pb_msg((1, name), (2, parts))))))
    resp, _ = read_frame(sock)
    body = pb_parse(resp[11][0])
    result = pb_parse(body[1][0])
    assert pb_int(result, 2) == 0, result


def produce(sock, corr, topic, batch, acks=1):
    part = pb_msg((1, topic), (2, 0), (3, len(batch)))
    sock.sendall(request(corr, PRODUCE, pb_msg((1, acks), (3, [part])),
                         batch))
    resp, _ = read_frame(sock)
    assert pb_int(resp, 1) == corr
    body = pb_parse(resp[13][0])
    return pb_parse(body[1][0])


class Healthy(threading.Thread):
    """Produces and fetches in a loop, recording the slowest round trip."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.worst = 0.0
        self.ops = 0
        self.error = None

    def run(self):
        try:
            s = connect(B)
            corr = 100
            while not self.stop.is_set():
                t0 = time.time()
                res = produce(s, corr, "healthy", record_batch([b"x" * 100]))
                assert pb_int(res, 3) == 0, res
                corr += 1
                fetch = pb_msg((1, 0), (2, 0), (3, 1 << 20), (4, [pb_msg(
                    (1, "healthy"), (2, 0), (3, 0), (4, 1 << 16))]))
                s.sendall(request(corr, FETCH, fetch))
                resp, payload = read_frame(s)
                assert pb_int(resp, 1) == corr
                corr += 1
                self.worst = max(self.worst, time.time() - t0)
                self.ops += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e


def test_oversized_frame_gets_error_and_close():
    s = connect(B)
    s.sendall(struct.pack(">II", 100 * 1024 * 1024, 10))
    resp = read_frame(s)
    assert resp is not None, "expected an error response before the close"
    assert pb_int(resp[0], 2) == E_FRAME_TOO_LARGE, resp
    assert closed_by_peer(s)


def test_negative_length_frame():
    s = connect(B)
    s.sendall(struct.pack(">II", 0xFFFFFFFF, 0xFFFFFFF0))
    resp = read_frame(s)
    assert resp is not None and pb_int(resp[0], 2) == E_FRAME_TOO_LARGE
    assert closed_by_peer(s)


def test_header_longer_than_frame():
    s = connect(B)
    s.sendall(struct.pack(">II", 10, 100) + b"x" * 6)
    resp = read_frame(s)
    assert resp is not None and pb_int(resp[0], 2) == E_MALFORMED, resp
    assert closed_by_peer(s)


def test_garbage_header():
    s = connect(B)
    s.sendall(frame(b"\xff" * 16))
    resp = read_frame(s)
    assert resp is not None and pb_int(resp[0], 2) == E_MALFORMED, resp
    assert closed_by_peer(s)


def test_random_garbage_stream():
    s = connect(B)
    s.sendall(os.urandom(4096))
    # an error or a close, but never a crash: the broker still answers
    closed_by_peer(s, timeout=5)
    s2 = connect(B)
    s2.sendall(request(7, METADATA, pb_msg((2, 1))))
    resp, _ = read_frame(s2)
    assert pb_int(resp, 1) == 7


def test_unknown_call_keeps_connection():
    s = connect(B)
    s.sendall(frame(pb_msg((1, 42), (99, b"\x08\x01"))))
    resp, _ = read_frame(s)
    assert pb_int(resp, 1) == 42 and pb_int(resp, 2) == E_UNSUPPORTED_API
    s.sendall(request(43, METADATA, pb_msg((2, 1))))
    resp, _ = read_frame(s)
    assert pb_int(resp, 1) == 43 and pb_int(resp, 2) == 0


def test_bad_crc_refused_per_partition():
    s = connect(B)
    res = produce(s, 5, "healthy", record_batch([b"a"], corrupt_crc=True))
    assert pb_int(res, 3) == E_CORRUPT_MESSAGE, res
    # the good batch after it on the same connection is accepted
    res = produce(s, 6, "healthy", record_batch([b"b"]))
    assert pb_int(res, 3) == 0, res


def test_payload_sizes_that_do_not_add_up():
    s = connect(B)
    batch = record_batch([b"a"])
    part = pb_msg((1, "healthy"), (2, 0), (3, len(batch) + 5))
    s.sendall(request(9, PRODUCE, pb_msg((1, 1), (3, [part])), batch))
    resp, _ = read_frame(s)
    assert pb_int(resp, 1) == 9 and pb_int(resp, 2) == E_INVALID_REQUEST


def test_truncated_batch_and_counts_beyond_bytes():
    s = connect(B)
    batch = record_batch([b"hello", b"world"])
    res = produce(s, 11, "healthy", batch[:-3])
    assert pb_int(res, 3) == E_CORRUPT_MESSAGE, res
    # record count field (bytes 57..61) claims far more records than exist
    forged = bytearray(batch)
    forged[57:61] = struct.pack(">i", 1 << 30)
    res = produce(s, 12, "healthy", bytes(forged))
    assert pb_int(res, 3) == E_CORRUPT_MESSAGE, res


def test_unknown_partition():
    s = connect(B)
    batch = record_batch([b"a"])
    part = pb_msg((1, "healthy"), (2, -1), (3, len(batch)))
    s.sendall(request(13, PRODUCE, pb_msg((1, 1), (3, [part])), batch))
    resp, _ = read_frame(s)
    res = pb_parse(pb_parse(resp[13][0])[1][0])
    assert pb_int(res, 3) == E_UNKNOWN_TOPIC, res


def test_partial_frame_stall_is_cut():
    s = connect(B)
    s.sendall(struct.pack(">II", 1000, 10) + b"abc")
    t0 = time.time()
    assert closed_by_peer(s, timeout=10), "stalled partial frame not cut"
    log(f"stalled connection cut after {time.time() - t0:.2f}s")


def test_pipelined_requests_answer_in_order():
    s = connect(B)
    msgs = b"".join(request(1000 + i, METADATA, pb_msg((2, 1)))
                    for i in range(200))
    s.sendall(msgs)
    for i in range(200):
        resp, _ = read_frame(s)
        assert pb_int(resp, 1) == 1000 + i


def test_many_connections():
    socks = [connect(B) for _ in range(300)]
    for i, s in enumerate(socks):
        s.sendall(request(i, METADATA, pb_msg((2, 1))))
    for i, s in enumerate(socks):
        resp, _ = read_frame(s)
        assert pb_int(resp, 1) == i
    for s in socks:
        s.close()


def main():
    global B
    B = Broker(args=["--frame-timeout-ms", "1000"])
    B.start()
    try:
        create_topic(connect(B), "healthy")
        healthy = Healthy()
        healthy.start()
        time.sleep(0.5)
        tests = [test_oversized_frame_gets_error_and_close,
                 test_negative_length_frame, test_header_longer_than_frame,
                 test_garbage_header, test_random_garbage_stream,
                 test_unknown_call_keeps_connection,
                 test_bad_crc_refused_per_partition,
                 test_payload_sizes_that_do_not_add_up,
                 test_truncated_batch_and_counts_beyond_bytes,
                 test_unknown_partition, test_partial_frame_stall_is_cut,
                 test_pipelined_requests_answer_in_order,
                 test_many_connections]

        def healthy_unaffected():
            healthy.stop.set()
            healthy.join(10)
            assert healthy.error is None, healthy.error
            log(f"healthy client: {healthy.ops} round trips, slowest "
                f"{healthy.worst * 1000:.1f} ms")
            assert healthy.ops > 50
            assert healthy.worst < 1.0, "healthy client was slowed down"
            assert B.proc.poll() is None, "broker died"
        run_main(tests + [healthy_unaffected])
    finally:
        B.cleanup()


if __name__ == "__main__":
    main()
