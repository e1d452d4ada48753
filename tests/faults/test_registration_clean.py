#!/usr/bin/env python3
"""A clean restart and a running broker are never taken for an unclean
stop (review of issue 12, item 4).

The controller judges a registration unclean (the broker may lack records
it had not flushed, so it leaves the eligible replicas where others hold
the committed records) when the previous broker epoch it carries is not
the epoch the broker was registered with. Two ways that went wrong, each
made deterministic by a TCP proxy between broker 1 and the controller:

- test_retry_after_a_lost_answer_is_clean: broker 1 stops cleanly
  (SIGTERM) and starts again; the proxy lets its first RegisterBroker
  reach the controller but drops the answer (it closes the connection).
  The broker retries with the same previous epoch, and the controller,
  which applied the first attempt, must still judge it clean: no
  event=broker_unclean_stop for broker 1. Before, the retry was flagged
  unclean. A kill -9 and restart afterwards must still be flagged (once).
- test_running_broker_registering_again_is_clean: the proxy changes the
  broker epoch in one heartbeat of broker 1, so the controller answers
  NOT_FOUND and the running broker registers again. It never stopped, so
  it must not be judged unclean. Before, it sent previous epoch -1 and
  was flagged unclean.

Every wait is bounded; only processes started here are stopped, by PID."""
import os
import socket
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (Broker, Cluster, log, pb_field, pb_read_varint,  # noqa
                      pb_varint, run_main, wait_until)

REGISTER_BROKER, BROKER_HEARTBEAT = 20, 21  # Request body fields


def pb_fields(b):
    """bytes -> [(field, wire type, raw value bytes)] in order."""
    out, i = [], 0
    while i < len(b):
        key, i = pb_read_varint(b, i)
        num, wt = key >> 3, key & 7
        start = i
        if wt == 0:
            _, i = pb_read_varint(b, i)
            raw = b[start:i]
        elif wt == 2:
            n, j = pb_read_varint(b, i)
            raw, i = b[j:j + n], j + n
        elif wt == 5:
            raw, i = b[i:i + 4], i + 4
        elif wt == 1:
            raw, i = b[i:i + 8], i + 8
        else:
            raise ValueError(f"wire type {wt}")
        out.append((num, wt, raw))
    return out


def pb_join(fields):
    out = b""
    for num, wt, raw in fields:
        out += pb_varint(num << 3 | wt)
        out += pb_varint(len(raw)) + raw if wt == 2 else raw
    return out


class Proxy:
    """Forwards broker 1's controller connections. drop_register_answer:
    the answer to the next RegisterBroker is not delivered (the
    connection closes instead). bad_heartbeats: that many heartbeats have
    their broker epoch changed (the controller answers NOT_FOUND)."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.drop_register_answer = False
        self.bad_heartbeats = 0
        self.dropped = 0
        self.rewritten = 0
        self.closing = False
        threading.Thread(target=self.accept, daemon=True).start()

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def accept(self):
        while not self.closing:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.target, timeout=5)
            except OSError:
                c.close()
                continue
            u.settimeout(None)
            state = {"drop_next_answer": False}
            threading.Thread(target=self.up, args=(c, u, state),
                             daemon=True).start()
            threading.Thread(target=self.down, args=(u, c, state),
                             daemon=True).start()

    @staticmethod
    def recv(s, n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                return None
            b += chunk
        return b

    def rewrite(self, header):
        fields = pb_fields(header)
        out = []
        for num, wt, raw in fields:
            if num == BROKER_HEARTBEAT and wt == 2 and self.bad_heartbeats:
                body = [(n, w, pb_varint(1 << 40) if n == 2 else r)
                        for n, w, r in pb_fields(raw)]
                raw = pb_join(body)
                self.bad_heartbeats -= 1
                self.rewritten += 1
                log("proxy: a heartbeat of broker 1 with another epoch")
            out.append((num, wt, raw))
        return pb_join(out)

    def up(self, src, dst, state):
        """Broker -> controller, frame by frame."""
        try:
            while True:
                head = self.recv(src, 8)
                if head is None:
                    break
                flen, hlen = struct.unpack(">II", head)
                rest = self.recv(src, flen - 4)
                if rest is None:
                    break
                header, payload = rest[:hlen], rest[hlen:]
                nums = {n for n, _, _ in pb_fields(header)}
                if REGISTER_BROKER in nums and self.drop_register_answer:
                    self.drop_register_answer = False
                    state["drop_next_answer"] = True
                elif BROKER_HEARTBEAT in nums and self.bad_heartbeats:
                    header = self.rewrite(header)
                dst.sendall(struct.pack(">II", 4 + len(header) + len(payload),
                                        len(header)) + header + payload)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()

    def down(self, src, dst, state):
        """Controller -> broker, frame by frame."""
        try:
            while True:
                head = self.recv(src, 8)
                if head is None:
                    break
                flen, _ = struct.unpack(">II", head)
                rest = self.recv(src, flen - 4)
                if rest is None:
                    break
                if state["drop_next_answer"]:
                    self.dropped += 1
                    log("proxy: dropped the answer to a RegisterBroker")
                    break
                dst.sendall(head + rest)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()

    def close(self):
        self.closing = True
        self.srv.close()


def behind_proxy(c, proxy):
    """Restart broker 1 (cleanly) with the proxy as its controller."""
    b1 = c.brokers[1]
    b1.stop()
    c.brokers[1] = Broker(data_dir=b1.data_dir, port=b1.port,
                          args=["--id", "1", "--controller", proxy.addr])
    c.brokers[1].start()
    c.wait_alive({1, 2, 3}, timeout=20)
    return c.brokers[1]


def judged(c, mark):
    """(registrations, unclean-stop lines) of broker 1 in the controller's
    log after byte mark."""
    text = c.ctl.log_text()[mark:]
    return (text.count("event=broker_registered broker=1 "),
            text.count("event=broker_unclean_stop broker=1"))


def test_retry_after_a_lost_answer_is_clean():
    with Cluster(prefix="weir-fault-regretry-") as c:
        proxy = Proxy(c.ctl.port)
        try:
            b1 = behind_proxy(c, proxy)
            mark = len(c.ctl.log_text())
            b1.stop()  # clean: it leaves its epoch for the next start
            proxy.drop_register_answer = True
            b1.start()
            wait_until("broker 1 registered after its retry",
                       lambda: "event=registered " in b1.log_text()
                       .split("event=started")[-1], 30)
            regs, unclean = judged(c, mark)
            sent = [ln for ln in b1.log_text().split("event=started")[-1]
                    .splitlines() if "event=registered " in ln]
            log(f"after a clean restart: {proxy.dropped} answer dropped, "
                f"{regs} registrations of broker 1 at the controller, "
                f"{unclean} judged unclean; {sent[-1][-60:]}")
            assert proxy.dropped == 1 and regs >= 2, (proxy.dropped, regs)
            assert unclean == 0, "the retry was taken for an unclean stop"
            # and a real unclean stop is still told apart
            c.wait_alive({1, 2, 3}, timeout=20)
            mark = len(c.ctl.log_text())
            b1.kill9()
            b1.start()
            wait_until("broker 1 registered after kill -9", lambda: judged(
                c, mark)[0] >= 1, 20)
            log(f"after kill -9: {judged(c, mark)[1]} judged unclean")
            assert judged(c, mark)[1] == 1, "kill -9 not taken for unclean"
        finally:
            proxy.close()


def test_running_broker_registering_again_is_clean():
    with Cluster(prefix="weir-fault-regrun-") as c:
        proxy = Proxy(c.ctl.port)
        try:
            b1 = behind_proxy(c, proxy)
            mark = len(c.ctl.log_text())
            bmark = len(b1.log_text())
            proxy.bad_heartbeats = 1
            wait_until("broker 1 registered again", lambda: "event=registered "
                       in b1.log_text()[bmark:], 20)
            c.wait_alive({1, 2, 3}, timeout=20)
            regs, unclean = judged(c, mark)
            log(f"running broker: {proxy.rewritten} heartbeat answered "
                f"NOT_FOUND, {regs} registration, {unclean} judged unclean")
            assert "event=registration_lost" in b1.log_text()[bmark:]
            assert regs == 1, regs
            assert unclean == 0, "a running broker was taken for an " \
                "unclean stop"
        finally:
            proxy.close()


if __name__ == "__main__":
    run_main([test_retry_after_a_lost_answer_is_clean,
              test_running_broker_registering_again_is_clean])
