#!/usr/bin/env python3
"""Never lead without the replication core (issue 12, item 2, broker half).

A broker that is restarted quickly (kill -9, back before the controller
fences it) finds itself named leader in the metadata log: the image still
holds its previous incarnation's leadership until its new registration is
applied (the controller moves that leadership away as it registers it).
The broker must act as leader only once the metadata holds its own new
registration, and answer LEADER_NOT_AVAILABLE (retriable) meanwhile.

The window is normally a few milliseconds. It is made observable, and the
test deterministic, by a TCP proxy between broker 1 and the controller that
holds broker 1's RegisterBroker call for HOLD_S seconds while its metadata
poll goes through: during the hold, produce to broker 1 for the partition
it led must be refused with LEADER_NOT_AVAILABLE and no role=leader may be
applied before event=registered. The controller's session timeout is long
and disconnect fencing is off, so nothing else moves the leadership first.
Every wait is bounded; only processes started here are stopped, by PID."""
import os
import socket
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (PRODUCE, Broker, Cluster, cluster_broker,  # noqa: E402
                      connect, log, pb_int, pb_msg, pb_parse, read_frame,
                      record_batch, request, run_main, wait_until, weir)

HOLD_S = 8.0
REGISTER_BROKER = 20  # Request.register_broker (proto/weir.proto)
OK, LEADER_NOT_AVAILABLE = 0, 19


class RegisterHoldingProxy:
    """Forwards a broker's controller connections; while armed, a frame
    carrying RegisterBroker (and what follows it on that connection)
    waits until the hold ends."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.hold_until = 0.0
        self.held = 0
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
            threading.Thread(target=self.frames, args=(c, u),
                             daemon=True).start()
            threading.Thread(target=self.pipe, args=(u, c),
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

    def frames(self, src, dst):
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
                if REGISTER_BROKER in pb_parse(rest[:hlen]):
                    wait = self.hold_until - time.time()
                    if wait > 0:
                        self.held += 1
                        log(f"proxy: holding RegisterBroker {wait:.1f}s")
                        time.sleep(wait)
                dst.sendall(head + rest)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()

    def pipe(self, src, dst):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()

    def close(self):
        self.closing = True
        self.srv.close()


def produce_once(broker, topic, partition, corr):
    """One acks=1 produce straight to broker: the partition's error code."""
    batch = record_batch([b"during-restart"])
    body = pb_msg((1, 1), (2, 5000), (3, [pb_msg((1, topic), (2, partition),
                                                 (3, len(batch)))]))
    with connect(broker) as s:
        s.sendall(request(corr, PRODUCE, body, batch))
        got = read_frame(s, timeout=10)
    assert got is not None, "connection closed"
    resp, _ = got
    if pb_int(resp, 2) != 0:
        return pb_int(resp, 2)
    parts = pb_parse(resp[13][0]).get(1, [])
    return pb_int(pb_parse(parts[0]), 3)


def leader_lines_before_registration(b, mark):
    """role=leader lines the restarted broker logged before its first
    event=registered (after byte offset mark of its log)."""
    text = b.log_text()[mark:]
    before = text.split("event=registered ", 1)[0]
    return [ln for ln in before.splitlines()
            if "event=leader_change" in ln and "role=leader" in ln]


def test_restarted_leader_waits_for_its_registration():
    args = ["--session-timeout-ms", "30000", "--disconnect-timeout-ms", "0"]
    with Cluster(prefix="weir-fault-gate-") as c:
        c.ctl.kill9()
        c.ctl.args = args
        c.ctl.start()
        c.wait_alive({1, 2, 3}, timeout=20)
        proxy = RegisterHoldingProxy(c.ctl.port)
        try:
            b1 = c.brokers[1]
            b1.stop()
            b1 = c.brokers[1] = Broker(
                data_dir=b1.data_dir, port=b1.port,
                args=["--id", "1", "--controller", proxy.addr])
            b1.start()
            c.wait_alive({1, 2, 3}, timeout=20)
            weir(c.brokers[2], "topic", "create", "gate", "--partitions", "3",
                 "--replication-factor", "3")

            def led_by_1():
                st = c.state()
                ps = [k[1] for k, p in st["partitions"].items()
                      if k[0] == "gate" and p["leader"] == 1
                      and len(p["isr"]) == 3]
                return ps
            part = wait_until("a partition led by broker 1", led_by_1, 15)[0]
            assert produce_once(b1, "gate", part, 1) == OK
            log(f"broker 1 leads gate/{part}; kill -9 and restart it with "
                f"its registration held {HOLD_S}s")
            b1.kill9()
            mark = len(b1.log_text())
            proxy.hold_until = time.time() + HOLD_S
            b1.start()
            codes = []
            deadline = proxy.hold_until - 1.0
            corr = 2
            while time.time() < deadline:
                try:
                    codes.append(produce_once(b1, "gate", part, corr))
                except (OSError, AssertionError) as e:
                    codes.append(repr(e))
                corr += 1
                time.sleep(0.25)
            early = leader_lines_before_registration(b1, mark)
            log(f"during the hold ({proxy.held} registration held): produce "
                f"answers {sorted(set(map(str, codes)))}, "
                f"{codes.count(OK)} accepted; role=leader lines before "
                f"registering: {len(early)}")
            assert proxy.held >= 1, "the registration was not held"
            assert OK not in codes, \
                f"{codes.count(OK)} produce calls accepted before the " \
                "restarted broker's registration was in its metadata"
            assert not early, early[:2]
            assert LEADER_NOT_AVAILABLE in codes, codes
            # after the hold: registered, and the cluster serves again
            wait_until("broker 1 registered", lambda: "event=registered "
                       in b1.log_text()[mark:], HOLD_S + 10)
            c.wait_alive({1, 2, 3}, timeout=20)
            weir(c.brokers[2], "produce", "gate", input=b"after\n")
        finally:
            proxy.close()


if __name__ == "__main__":
    run_main([test_restarted_leader_waits_for_its_registration])
