#!/usr/bin/env python3
"""Cluster identity (docs/operations.md, "Cluster identity"): a controller
starts only on a formatted data dir (or with auto-format on an empty one, or
on a metadata log from before cluster ids, which it adopts); --format makes
a new cluster and refuses a dir that holds metadata. A broker's data dir
keeps node.id, cluster.id and directory.id, a clean-shutdown marker and the
metadata offset it applied; logs the metadata does not know are kept and
reported, never deleted, and an operator removes them with the broker run
alone. (The controller losing its data is tests/faults/
test_controller_data_loss.py.) Every wait is bounded in time; only
processes started here are stopped, by PID."""
import os
import re
import subprocess
import tempfile
import time

from weirtest import (CONTROLLER_BIN, Broker, Cluster, Controller,
                      cluster_broker, cluster_state, connect, free_port, pb_int, pb_msg,
                      pb_parse, read_frame, request, run_main, wait_until,
                      weir)


def run_ctl(*args, env=None, timeout=10):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([CONTROLLER_BIN] + list(args), capture_output=True,
                          timeout=timeout, env=e)


def props(d):
    out = {}
    with open(os.path.join(d, "meta.properties")) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.strip().split("=", 1)
                out[k] = v
    return out


def write_metadata(ctl, tmp):
    """A broker registers once: records in the controller's log."""
    b = cluster_broker(ctl, 1, tmp)
    try:
        b.start()
        wait_until("registered", lambda: "event=registered" in b.log_text(),
                   10)
    finally:
        b.cleanup()


def test_empty_dir_without_format_is_refused():
    with tempfile.TemporaryDirectory(prefix="weir-ident-") as tmp:
        d = os.path.join(tmp, "ctl")
        p = run_ctl("--listen", f"127.0.0.1:{free_port()}", "--data-dir", d)
        err = p.stderr.decode()
        assert p.returncode == 2, (p.returncode, err)
        assert "not formatted" in err and "--format" in err, err
        assert "auto-format" in err, err
        assert not os.path.exists(os.path.join(d, "meta.properties"))


def test_format_then_start():
    with tempfile.TemporaryDirectory(prefix="weir-ident-") as tmp:
        d = os.path.join(tmp, "ctl")
        p = run_ctl("--format", "--data-dir", d, "--cluster-id", "prod-1")
        assert p.returncode == 0, p.stderr
        assert b"cluster.id=prod-1" in p.stdout, p.stdout
        assert props(d)["cluster.id"] == "prod-1"
        again = run_ctl("--format", "--data-dir", d)
        assert again.returncode == 2, again
        assert b"already formatted" in again.stderr, again.stderr
        bad = run_ctl("--format", "--data-dir", os.path.join(tmp, "x"),
                      "--cluster-id", "no spaces")
        assert bad.returncode == 2, bad
        ctl = Controller(data_dir=d, format=False)
        try:
            ctl.start()
            assert "cluster_id=prod-1" in ctl.log_text()
            write_metadata(ctl, tmp)
            ctl.stop()
            # --format refuses a dir holding metadata, even without a
            # meta.properties
            os.unlink(os.path.join(d, "meta.properties"))
            p = run_ctl("--format", "--data-dir", d)
            assert p.returncode == 2 and b"metadata log" in p.stderr, p
        finally:
            ctl.cleanup()


def test_auto_format_creates_a_cluster():
    with tempfile.TemporaryDirectory(prefix="weir-ident-") as tmp:
        d = os.path.join(tmp, "ctl")
        ctl = Controller(data_dir=d, format=False,
                         env={"WEIR_AUTO_FORMAT": "true"})
        try:
            ctl.start()
            assert "event=data_dir_formatted" in ctl.log_text()
            cid = props(d)["cluster.id"]
            assert len(cid) == 22, cid
            ctl.stop()
            ctl.start()  # formatted now: the same id, no new format
            assert ctl.log_text().count("event=data_dir_formatted") == 1
            assert props(d)["cluster.id"] == cid
        finally:
            ctl.cleanup()


def test_metadata_log_without_identity_is_adopted():
    with tempfile.TemporaryDirectory(prefix="weir-ident-") as tmp:
        d = os.path.join(tmp, "ctl")
        ctl = Controller(data_dir=d)
        try:
            ctl.start()
            write_metadata(ctl, tmp)
            first = props(d)["cluster.id"]
            ctl.stop()
            # what a controller from before cluster ids left behind
            os.unlink(os.path.join(d, "meta.properties"))
            assert os.path.getsize(os.path.join(d, "metadata.log")) > 0
            ctl.format = False
            ctl.start()
            text = ctl.log_text()
            assert "event=data_dir_adopted" in text, text[-2000:]
            adopted = props(d)["cluster.id"]
            assert adopted and adopted != first
            loaded = [ln for ln in text.splitlines()
                      if "event=log_loaded" in ln][-1]
            assert "brokers=1" in loaded, loaded
        finally:
            ctl.cleanup()


def registered(b, nth=-1):
    """(epoch, previous_epoch) of the broker's nth registration line."""
    lines = [ln for ln in b.log_text().splitlines()
             if "event=registered " in ln]
    m = re.search(r"epoch=(\d+) .*previous_epoch=(-?\d+)", lines[nth])
    return int(m.group(1)), int(m.group(2))


def test_broker_data_dir_identity():
    with Cluster(prefix="weir-ident-b-") as c:
        cid = props(c.ctl.data_dir)["cluster.id"]
        b = c.brokers[1]
        p = props(b.data_dir)
        assert p["node.id"] == "1" and p["cluster.id"] == cid, p
        assert len(p["directory.id"]) == 22, p
        ids = {props(x.data_dir)["directory.id"] for x in c.brokers.values()}
        assert len(ids) == 3, ids
        epoch, prev = registered(b)
        assert prev == -1, prev  # a first start
        wait_until("metadata offset stored", lambda: os.path.exists(
            os.path.join(b.data_dir, "metadata-offset")), 60)
        # a clean stop leaves its epoch; the next start spends it
        assert b.stop() == 0
        with open(os.path.join(b.data_dir, "clean-shutdown-epoch")) as f:
            assert f.read() == f"cluster.id={cid}\nbroker.epoch={epoch}\n"
        b.start()
        wait_until("registered again", lambda: b.log_text().count(
            "event=registered ") == 2, 60)
        assert registered(b)[1] == epoch, registered(b)
        assert not os.path.exists(os.path.join(b.data_dir, "clean-shutdown-epoch"))
        assert props(b.data_dir)["directory.id"] == p["directory.id"]
        # after kill -9 there is no marker: -1
        b.kill9()
        b.start()
        wait_until("registered a third time", lambda: b.log_text().count(
            "event=registered ") == 3, 60)
        assert registered(b)[1] == -1, registered(b)
        # another broker id on this data dir is refused
        other = Broker(data_dir=b.data_dir, args=[
            "--id", "7", "--controller", c.ctl.addr])
        b.kill9()
        try:
            other.start(timeout=5)
            raise AssertionError("broker 7 started on broker 1's data dir")
        except RuntimeError as e:
            assert "belongs to broker 1" in str(e), str(e)[-500:]


def test_stray_logs_are_kept_and_removable():
    with Cluster(prefix="weir-ident-s-") as c:
        weir(c.brokers[1], "topic", "create", "old", "--partitions", "1",
             "--replication-factor", "3")
        weir(c.brokers[1], "produce", "old", input=b"x\ny\n")
        b = c.brokers[3]
        assert b.stop() == 0
        # a data dir from before cluster ids (no cluster.id) joins a new
        # cluster that does not know its topic
        path = os.path.join(b.data_dir, "meta.properties")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(re.sub(r"cluster.id=.*", "cluster.id=", text))
        new = Controller(data_dir=os.path.join(c.tmp, "controller-b"))
        try:
            new.start()
            b2 = cluster_broker(new, 3, c.tmp, port=b.port)
            b2.log_path = os.path.join(c.tmp, "broker-3-b.log")
            b2.start()
            wait_until("stray reported", lambda: "event=stray_partition_logs"
                       in b2.log_text(), 60)
            line = [ln for ln in b2.log_text().splitlines()
                    if "event=stray_partition_logs" in ln][0]
            assert "topic=old" in line and "action=kept" in line, line
            assert "event=partition_logs_deleted" not in b2.log_text()
            assert os.path.isdir(os.path.join(b.data_dir, "old-0"))
            assert props(b.data_dir)["cluster.id"] == \
                props(new.data_dir)["cluster.id"]
            # not served
            got = weir(b2, "consume", "old", "--from-beginning",
                       "--timeout-ms", "500", check=False)
            assert got.stdout.split() == [], got
            assert b2.stop() == 0
            # the operator's way out: the broker alone on its data dir
            alone = Broker(data_dir=b.data_dir, args=["--id", "3"])
            alone.log_path = os.path.join(c.tmp, "broker-3-alone.log")
            alone.start()
            weir(alone, "topic", "delete", "old")
            assert alone.stop() == 0
            assert not os.path.exists(os.path.join(b.data_dir, "old-0"))
            b2.start()
            wait_until("registered", lambda: b2.log_text().count(
                "event=registered ") == 2, 60)
            assert b2.log_text().count("event=stray_partition_logs") == 1
        finally:
            new.cleanup()


def test_broker_calls_of_another_cluster_are_refused():
    """Every call a broker makes names its cluster id; the controller
    refuses another cluster's with INCONSISTENT_CLUSTER_ID (56) before it
    looks at anything else, and an empty id is not checked."""
    INCONSISTENT_CLUSTER_ID, NOT_FOUND = 56, 32
    HEARTBEAT, FETCH_METADATA, ALTER_ISR, ALLOC_PIDS = 21, 22, 23, 24
    with tempfile.TemporaryDirectory(prefix="weir-ident-") as tmp:
        ctl = Controller(data_dir=os.path.join(tmp, "ctl"))
        ctl.start()
        try:
            calls = {"heartbeat": (HEARTBEAT, pb_msg((1, 7), (2, 0))),
                     "pids": (ALLOC_PIDS, pb_msg((1, 7), (2, 0), (3, 10))),
                     "fetch": (FETCH_METADATA, pb_msg((1, 7), (3, 0))),
                     "alter_isr": (ALTER_ISR, pb_msg((1, 7), (2, 0)))}
            got = {}
            with connect(ctl) as s:
                for n, (name, (field, body)) in enumerate(calls.items()):
                    s.sendall(request(n + 1, field, body + pb_msg(
                        (80, "another-cluster"))))
                    resp, _ = read_frame(s)
                    got[name] = pb_int(resp, 2)
                s.sendall(request(9, HEARTBEAT, calls["heartbeat"][1]))
                resp, _ = read_frame(s)
                plain = pb_int(resp, 2)
            print(f"another cluster's calls answered {got}; without a "
                  f"cluster id: {plain}")
            assert set(got.values()) == {INCONSISTENT_CLUSTER_ID}, got
            assert plain == NOT_FOUND, plain  # unknown broker 7, as before
            assert "event=request_refused" in ctl.log_text()
        finally:
            ctl.stop()


def test_unverifiable_history_needs_the_operator():
    """A broker whose stored history point is older than what the
    controller keeps history values for (here: the controller's snapshot
    was written before chains existed, so nothing before its end is
    known) is refused with metadata_history_unverifiable: the controller
    cannot show its history is the broker's. The documented operator
    action (remove metadata-offset, start the broker) makes it take the
    controller's history."""
    import struct
    with tempfile.TemporaryDirectory(prefix="weir-ident-") as tmp:
        ctl = Controller(data_dir=os.path.join(tmp, "ctl"),
                         args=["--snapshot-every-records", "4"])
        ctl.start()
        b = cluster_broker(ctl, 1, tmp)
        try:
            b.start()
            wait_until("broker 1 in service", lambda: any(
                x[2] for x in cluster_state(b)["brokers"].values()), 15)
            stamp_path = os.path.join(b.data_dir, "metadata-offset")

            def stamp_text():
                try:
                    with open(stamp_path) as f:
                        return f.read()
                except FileNotFoundError:
                    return None
            old = stamp_text()
            weir(b, "topic", "create", "t0", "--partitions", "1",
                 "--replication-factor", "1")
            # the broker stores its offset (1/s): wait for it to move
            wait_until("the stored metadata offset moved", lambda:
                       stamp_text() not in (None, old), 60)
            b.stop()
            stamp = open(os.path.join(b.data_dir, "metadata-offset")).read()
            for i in range(6):  # records: the snapshot moves past it
                weir(ctl, "user", "create", f"u{i}", input=b"secret-pw\n")
            ctl.stop()
            snap = os.path.join(ctl.data_dir, "snapshot")
            data = open(snap, "rb").read()
            if data[:4] == b"WMCS":  # a build with chains: strip them
                n = struct.unpack(">I", data[13:17])[0]
                with open(snap, "wb") as f:  # as written before chains
                    f.write(data[17 + 8 * n + 4:])
            ctl.start()
            mark = len(b.log_text())
            b.start()
            wait_until("refused as unverifiable", lambda:
                       "event=metadata_history_unverifiable"
                       in b.log_text()[mark:], 15)
            time.sleep(1)
            assert "event=registered " not in b.log_text()[mark:]
            print("stored " + stamp.replace("\n", " ") + "-> refused")
            b.stop()
            os.unlink(os.path.join(b.data_dir, "metadata-offset"))
            mark = len(b.log_text())
            b.start()
            wait_until("registered after the operator's action", lambda:
                       "event=registered " in b.log_text()[mark:], 15)
        finally:
            b.cleanup()
            ctl.stop()


if __name__ == "__main__":
    run_main([test_empty_dir_without_format_is_refused,
              test_format_then_start,
              test_auto_format_creates_a_cluster,
              test_metadata_log_without_identity_is_adopted,
              test_broker_data_dir_identity,
              test_stray_logs_are_kept_and_removable,
              test_broker_calls_of_another_cluster_are_refused,
              test_unverifiable_history_needs_the_operator])
