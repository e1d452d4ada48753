#!/usr/bin/env python3
"""Damage in the middle of the controller's metadata log is never cut as a
torn tail, and a torn tail that is cut is kept (issue 12 review, item 2).

- test_damaged_length_in_the_middle_refuses_start: a controller with one
  broker creates three topics; after a clean stop one bit of the SECOND
  batch's length field is flipped (+65536: the batch now seems to run past
  the end of the file, like a torn last write). The batches after it are
  whole, so the controller must refuse to start, naming the file and the
  byte, and leave metadata.log as it was. Before the fix it started, cut
  every batch from the damaged one on (the three topic creations) and
  served the shorter history.
- test_torn_tail_is_cut_and_kept: a real torn last write (the file cut in
  the middle of its last batch) is still cut so the controller starts, and
  the bytes cut are kept in metadata.log.cut-<byte>, named in the trace.
Real processes; every wait is bounded; only processes started here are
stopped, by PID."""
import os
import struct
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (Controller, cluster_broker, cluster_state,  # noqa: E402
                      log, run_main, wait_until, weir)


def frames(data):
    """[(byte, body length)] of metadata.log's frames."""
    at, out = 0, []
    while at + 8 <= len(data):
        blen = struct.unpack(">I", data[at:at + 4])[0]
        out.append((at, blen))
        at += 8 + blen
    return out


def make_log(tmp):
    """A controller data dir whose log holds the broker's batches and then
    three topic creations; everything stopped. Returns the controller."""
    ctl = Controller(data_dir=os.path.join(tmp, "controller"))
    ctl.start()
    b = cluster_broker(ctl, 1, tmp)
    b.start()
    try:
        wait_until("broker alive", lambda: any(
            x[2] for x in cluster_state(b)["brokers"].values()), 15)
        for t in ("t1", "t2", "t3"):
            weir(b, "topic", "create", t, "--partitions", "1")
    finally:
        b.kill9()
        ctl.stop()
    return ctl


def test_damaged_length_in_the_middle_refuses_start():
    tmp = tempfile.mkdtemp(prefix="weir-fault-ctllog-")
    try:
        ctl = make_log(tmp)
        path = os.path.join(ctl.data_dir, "metadata.log")
        data = bytearray(open(path, "rb").read())
        fr = frames(data)
        log(f"metadata.log: {len(data)} bytes, {len(fr)} batches at "
            f"{[a for a, _ in fr]}")
        assert len(fr) >= 5, fr
        at, blen = fr[1]
        data[at + 1] ^= 0x01  # bits 16..23 of the length: +65536
        with open(path, "wb") as f:
            f.write(data)
        log(f"flipped a bit in the length of the batch at byte {at}: "
            f"{blen} -> {struct.unpack('>I', data[at:at + 4])[0]}")
        try:
            ctl.start(timeout=10)
        except RuntimeError as e:
            msg = str(e)
            log("controller refused: " + msg.strip().splitlines()[-1][:300])
            assert f"the batch at byte {at}" in msg, msg[-500:]
            assert f"a whole batch follows at byte {fr[2][0]}" in msg, \
                msg[-500:]
        else:
            txt = ctl.log_text()
            cut = [ln for ln in txt.splitlines() if "log_torn_tail_cut" in ln]
            ctl.stop()
            raise AssertionError(
                "the controller started on a log damaged in the middle; "
                f"metadata.log now {os.path.getsize(path)} of {len(data)} "
                f"bytes; {cut[-1][:300] if cut else 'no cut traced'}")
        assert open(path, "rb").read() == bytes(data), "metadata.log changed"
        assert not [f for f in os.listdir(ctl.data_dir) if ".cut-" in f]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_torn_tail_is_cut_and_kept():
    tmp = tempfile.mkdtemp(prefix="weir-fault-ctltorn-")
    try:
        ctl = make_log(tmp)
        path = os.path.join(ctl.data_dir, "metadata.log")
        data = open(path, "rb").read()
        at, blen = frames(data)[-1]
        torn = data[:at + 8 + blen // 2]  # the last write stopped halfway
        with open(path, "wb") as f:
            f.write(torn)
        ctl.start(timeout=10)
        try:
            txt = ctl.log_text()
            cut = [ln for ln in txt.splitlines() if "log_torn_tail_cut" in ln]
            assert cut, "no log_torn_tail_cut trace"
            log(cut[-1][:300])
            saved = os.path.join(ctl.data_dir, f"metadata.log.cut-{at}")
            assert f"saved={saved}" in cut[-1], cut[-1]
            assert open(saved, "rb").read() == torn[at:], "saved bytes differ"
            assert os.path.getsize(path) == at
        finally:
            ctl.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run_main([test_damaged_length_in_the_middle_refuses_start,
              test_torn_tail_is_cut_and_kept])
