#!/usr/bin/env python3
"""Brokers find and follow the active controller among the addresses of
--controller (a list of quorum members). A real weir-controller and three
real weir-brokers; beside them a dead address (nothing listens) and a fake
member: a small TCP server that answers every call NOT_CONTROLLER naming
the real controller (Response.active_controller), as a quorum member that
is not active does. Also a real weir-controller started with --standby-of
(the controller side of the same answer), and the real controller
restarted on another port with the fake member's hint following it. Every
wait is bounded in time; processes and sockets are closed by the test."""
import os
import shutil
import socket
import tempfile
import threading
import time

from weirtest import (Broker, Controller, cluster_state, free_port, frame,
                      log, pb_int, pb_msg, pb_parse, read_frame, request,
                      run_main, wait_until, weir)

NOT_CONTROLLER = 79
REGISTER_BROKER, FETCH_METADATA, METADATA = 20, 22, 10


class FakeMember:
    """Answers every request NOT_CONTROLLER with self.hint (None: no
    active_controller field) and counts them."""

    def __init__(self, hint=None):
        self.hint = hint
        self.calls = 0
        self.port = free_port()
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", self.port))
        self.lsock.listen(16)
        self.conns = []
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def _accept(self):
        while not self.stopped:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(s)
            threading.Thread(target=self._serve, args=(s,),
                             daemon=True).start()

    def _serve(self, s):
        try:
            while not self.stopped:
                got = read_frame(s, timeout=60)
                if got is None:
                    return
                req, _ = got
                corr = pb_int(req, 1)
                hint = self.hint
                active = (pb_msg((1, 1), (2, hint))
                          if hint is not None else None)
                resp = pb_msg((1, corr), (2, NOT_CONTROLLER),
                              (3, f"fake member; active is {hint}"),
                              (5, active))
                with self.lock:
                    self.calls += 1
                s.sendall(frame(resp))
        except OSError:
            return
        finally:
            s.close()

    def stop(self):
        self.stopped = True
        self.lsock.close()
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


def dead_addr():
    return f"127.0.0.1:{free_port()}"  # nothing listens there


class Setup:
    """A controller, brokers with the given --controller lists, a temp
    dir; everything started here is killed by PID on exit."""

    def __init__(self, lists_fn, hint_self=True):
        self.tmp = tempfile.mkdtemp(prefix="weir-follow-")
        self.ctl = Controller(data_dir=os.path.join(self.tmp, "controller"))
        self.fake = FakeMember()
        self.hint_self = hint_self
        self.lists_fn = lists_fn
        self.extra = []
        self.brokers = {}

    def __enter__(self):
        self.ctl.start()
        if self.hint_self:
            self.fake.hint = self.ctl.addr
        for i in (1, 2, 3):
            self.brokers[i] = Broker(
                data_dir=os.path.join(self.tmp, f"broker-{i}"),
                args=["--id", str(i), "--controller", self.lists_fn(self, i)])
            self.brokers[i].start()
        return self

    def __exit__(self, *exc):
        for p in list(self.brokers.values()) + [self.ctl] + self.extra:
            if p.proc and p.proc.poll() is None:
                p.kill9()
        self.fake.stop()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def wait_alive(self, ids, timeout=30):
        def ok():
            st = cluster_state(self.brokers[1], timeout=20)
            alive = {i for i, b in st["brokers"].items() if b[2]}
            return st if ids <= alive else None
        return wait_until(f"brokers {sorted(ids)} alive", ok, timeout,
                          step=0.3)


def moved_lines(b):
    return [ln for ln in b.log_text().splitlines()
            if "event=controller_moved" in ln]


def produce_consume(s, topic, values):
    weir(s.brokers[2], "topic", "create", topic, "--partitions", "3",
         "--replication-factor", "3")
    wait_until(f"{topic} visible", lambda: sum(
        1 for k in cluster_state(s.brokers[1])["partitions"]
        if k[0] == topic) == 3, 15, step=0.3)
    weir(s.brokers[3], "produce", topic, input=b"\n".join(values) + b"\n")
    out = weir(s.brokers[1], "consume", topic, "--from-beginning",
               "--timeout-ms", "3000").stdout.split()
    assert sorted(out) == sorted(values), out


def test_dead_and_fake_members_first():
    """Broker 1 lists a dead address and the fake member only (the real
    controller is learned from the hint); 2 the fake first; 3 all three,
    the real one last."""
    dead = dead_addr()

    def lists(s, i):
        return {1: f"{dead},{s.fake.addr}",
                2: f"{s.fake.addr}, {dead}",
                3: f"{dead},{s.fake.addr},{s.ctl.addr}"}[i]

    with Setup(lists) as s:
        st = s.wait_alive({1, 2, 3})
        assert st["controller"] == s.ctl.addr, st["text"]
        produce_consume(s, "follow", [b"a", b"b", b"c", b"d"])
        for i, b in s.brokers.items():
            lines = moved_lines(b)
            log(f"broker {i}: " + " | ".join(
                ln.split("event=")[1] for ln in lines))
            assert lines, b.log_text()[-3000:]
            assert f"to={s.ctl.addr} reason=hint" in "\n".join(lines), lines
        assert f"from={dead} to={s.fake.addr} reason=unreachable" in \
            "\n".join(moved_lines(s.brokers[1]))
        assert s.fake.calls > 0
        # every broker stays with the active controller: no further moves
        n = {i: len(moved_lines(b)) for i, b in s.brokers.items()}
        time.sleep(1.5)  # a few heartbeats and metadata polls
        produce_consume(s, "follow2", [b"x", b"y"])
        assert n == {i: len(moved_lines(b)) for i, b in s.brokers.items()}


def test_follow_controller_restarted_on_another_port():
    """Only the fake member is listed. The real controller is restarted on
    another port (same data dir) and the fake member's hint follows it:
    the brokers move there, keep their state and serve the old data."""
    with Setup(lambda s, i: s.fake.addr) as s:
        s.wait_alive({1, 2, 3})
        produce_consume(s, "before", [b"1", b"2", b"3"])
        old = s.ctl.addr
        s.ctl.kill9()
        ctl2 = Controller(data_dir=s.ctl.data_dir)
        s.extra.append(ctl2)
        s.fake.hint = ctl2.addr
        ctl2.start()
        log(f"controller moved {old} -> {ctl2.addr}")

        def followed():
            return all(f"to={ctl2.addr}" in "\n".join(moved_lines(b))
                       for b in s.brokers.values())
        wait_until("brokers at the new controller", followed, 40, step=0.3)
        st = s.wait_alive({1, 2, 3})
        assert st["controller"] == ctl2.addr, st["text"]
        for b in s.brokers.values():
            assert b.proc.poll() is None
        out = weir(s.brokers[2], "consume", "before", "--from-beginning",
                   "--timeout-ms", "3000").stdout.split()
        assert sorted(out) == [b"1", b"2", b"3"], out
        produce_consume(s, "after", [b"p", b"q"])
        # as after a controller restart: the new one knows every broker's
        # registration, so the epochs held go on (no second registration)
        for b in s.brokers.values():
            assert b.log_text().count("event=registered ") == 1, \
                b.log_text()[-3000:]


def call(addr, corr, body_field, body):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request(corr, body_field, body))
        got = read_frame(s, timeout=10)
    assert got is not None, "connection closed"
    return got[0]


def test_standby_controller():
    tmp = tempfile.mkdtemp(prefix="weir-standby-")
    procs = []
    try:
        ctl = Controller(data_dir=os.path.join(tmp, "controller"))
        procs.append(ctl)
        ctl.start()
        standby = Controller(data_dir=os.path.join(tmp, "standby"),
                             args=["--standby-of", ctl.addr])
        procs.append(standby)
        standby.start()
        assert "event=member_state active=false" in standby.log_text()
        for corr, field, body in (
                (7, REGISTER_BROKER, b""),
                (8, FETCH_METADATA, b""),
                (9, METADATA, b"")):
            resp = call(standby.addr, corr, field, body)
            assert pb_int(resp, 1) == corr, resp
            assert pb_int(resp, 2) == NOT_CONTROLLER, resp
            hint = pb_parse(resp[5][0])
            assert hint[2][0].decode() == ctl.addr, hint
            assert pb_int(hint, 1) == -1, hint
        # the active one answers as before, with no hint
        resp = call(ctl.addr, 3, METADATA, b"")
        assert pb_int(resp, 2) == 0 and 5 not in resp, resp
        brokers = []
        for i in (1, 2, 3):
            b = Broker(data_dir=os.path.join(tmp, f"broker-{i}"),
                       args=["--id", str(i), "--controller", standby.addr])
            procs.append(b)
            brokers.append(b.start())

        def alive():
            st = cluster_state(brokers[0], timeout=20)
            return st if sum(1 for x in st["brokers"].values()
                             if x[2]) == 3 else None
        st = wait_until("brokers alive", alive, 30, step=0.3)
        assert st["controller"] == ctl.addr, st["text"]
        for b in brokers:
            assert f"from={standby.addr} to={ctl.addr} reason=hint" in \
                b.log_text(), b.log_text()[-2000:]
        # the CLI given the standby as its bootstrap address follows the
        # hint too (weir cluster and admin calls the controller serves)
        st = cluster_state(standby, timeout=20)
        assert st["controller"] == ctl.addr, st["text"]
        assert len(st["brokers"]) == 3, st["text"]
        weir(standby, "topic", "create", "via-standby", "--partitions", "2",
             "--replication-factor", "3")
        wait_until("topic at the active controller", lambda: sum(
            1 for k in cluster_state(ctl)["partitions"]
            if k[0] == "via-standby") == 2, 15, step=0.3)
        # the standby registered nobody: its own log did not grow
        assert "event=broker_registered" not in standby.log_text()
    finally:
        for p in procs:
            if p.proc and p.proc.poll() is None:
                p.kill9()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


def test_bad_controller_list_refused():
    for bad, needle in (("127.0.0.1:1,", "element 2 of the list is empty"),
                        ("127.0.0.1:1,nope", "'nope'"),
                        ("a:1,a:1", "listed twice")):
        b = Broker(args=["--id", "1", "--controller", bad])
        try:
            try:
                b.start(timeout=10)
                raise AssertionError(f"started with --controller {bad}")
            except RuntimeError as e:
                assert needle in str(e), (bad, str(e)[-500:])
        finally:
            b.cleanup()


if __name__ == "__main__":
    run_main([
        test_bad_controller_list_refused,
        test_standby_controller,
        test_dead_and_fake_members_first,
        test_follow_controller_restarted_on_another_port,
    ])
