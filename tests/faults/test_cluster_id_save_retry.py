#!/usr/bin/env python3
"""A broker whose first save of the cluster id fails saves it later,
without another registration (review of issue 12, item 6).

A new broker learns its cluster id from its first registration answer and
stores it in <data-dir>/meta.properties. Here that write fails (fsync EIO
from the faultfs LD_PRELOAD shim, tests/lib/faultfs.c, for that file
only): the broker logs event=cluster_id_not_saved and goes on. Once the
disk works again the id must be stored within a few heartbeats
(event=cluster_joined, cluster.id in meta.properties). Before, the code
said "the next registration tries again", but no registration follows a
successful one: the id stayed unsaved until a restart, so the broker's
metadata-offset and clean-shutdown stamps (which name the cluster id)
were never written. Real processes; every wait is bounded; only
processes started here are stopped, by PID."""
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from diskfault import FaultCtl  # noqa: E402
from weirtest import (Controller, cluster_broker, log, run_main,  # noqa
                      wait_until)


def stored_cluster_id(data_dir):
    try:
        with open(os.path.join(data_dir, "meta.properties")) as f:
            for line in f:
                if line.startswith("cluster.id="):
                    return line.strip().split("=", 1)[1]
    except FileNotFoundError:
        pass
    return ""


def test_failed_cluster_id_save_is_retried():
    tmp = tempfile.mkdtemp(prefix="weir-fault-cidsave-")
    ctl = Controller(data_dir=os.path.join(tmp, "controller"))
    fctl = FaultCtl(os.path.join(tmp, "faultfs"))
    b = cluster_broker(ctl, 1, tmp)
    b.env = fctl.env()
    try:
        b.start()  # the controller is not up yet: nothing registered
        props = os.path.join(b.data_dir, "meta.properties")
        fctl.set([("fsync", "EIO", props)])
        ctl.start()
        wait_until("the cluster id save failed", lambda:
                   "event=cluster_id_not_saved" in b.log_text(), 20)
        assert stored_cluster_id(b.data_dir) == "", "saved despite EIO"
        wait_until("registered", lambda: "event=registered " in b.log_text(),
                   10)
        log(f"cluster id not saved ({len(fctl.hits())} fsync failures); "
            "the disk works again")
        fctl.set([])
        t0 = time.time()
        cid = wait_until("the cluster id stored", lambda: stored_cluster_id(
            b.data_dir), 60, step=0.2)
        log(f"stored cluster.id={cid} {time.time() - t0:.1f}s later; "
            f"{b.log_text().count('event=cluster_joined')} cluster_joined")
        assert "event=cluster_joined" in b.log_text()
        assert cid in ctl.log_text(), "not the controller's cluster id"
    finally:
        b.cleanup()
        if ctl.proc and ctl.proc.poll() is None:
            ctl.kill9()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run_main([test_failed_cluster_id_save_is_retried])
