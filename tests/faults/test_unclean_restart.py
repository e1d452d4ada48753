#!/usr/bin/env python3
"""A broker restarted after a failed fsync neither counts what the fsync
did not cover nor calls its stop clean. A controller and three brokers on
loopback; topic `e` (1 partition, replication factor 3,
min.insync.replicas 2) under `weir produce --acks all`.

fdatasync fails with EIO (tests/lib/faultfs.c) for e-0 on a follower: its
log goes offline with records past its durable offset (appended, not
fsynced). The follower is then stopped with SIGTERM while the log is
offline, the fault is cleared and it starts again. It must:

- skip the clean-shutdown marker (`clean_shutdown_marker_skipped`), so
  the controller sees an unclean stop (`broker_unclean_stop`) and takes
  it out of the ELRs, as after kill -9;
- cut e-0 back to the durable offset the failure left
  (`cut_to_durable ... to=<durable_offset of the log_offline trace>`)
  before it fetches: the page cache may hold bytes the disk never got;
- catch up and rejoin the ISR, every acknowledged record read once.

Before the fix the stop wrote the marker (the controller saw a clean
stop) and the restart kept the unflushed bytes, counting them durable."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import diskfault  # noqa: E402
from diskfault import (FaultCtl, LogWatch, Producer, partition_state,  # noqa
                       read_partition, wait_isr)
import weirtest  # noqa: E402
from weirtest import log, run_main, wait_until, weir  # noqa: E402

TOPIC = "e"


def test_stop_after_failed_fsync_is_unclean_and_cuts():
    c = weirtest.Cluster(args=diskfault.broker_args(
        "--replica-lag-time-max-ms", "2000",
        "--log-offline-retry-ms", "60000"), prefix="weir-uncl-")
    fctl = {}
    for i, b in c.brokers.items():
        fctl[i] = FaultCtl(os.path.join(c.tmp, f"faultfs-{i}"))
        b.env = fctl[i].env()
    with c:
        weir(c.brokers[1], "topic", "create", TOPIC, "--partitions", "1",
             "--replication-factor", "3")
        st = wait_until("a full ISR", lambda: (
            lambda p: p if p["leader"] > 0 and len(p["isr"]) == 3 else None)(
                partition_state(c, TOPIC, 0)), 20)
        f = [r for r in st["replicas"] if r != st["leader"]][0]
        part_dir = os.path.join(c.brokers[f].data_dir, f"{TOPIC}-0")
        bootstrap = ",".join(b.addr for b in c.brokers.values())
        prod = Producer(bootstrap, TOPIC, 0)
        prod.wait_acks(200)
        watch = LogWatch(c.brokers[f])
        fctl[f].set([("fsync", "EIO", part_dir + "/")])
        line = watch.wait("follower log offline",
                          rf"event=log_offline dir=\S*/{TOPIC}-0 .*fsync=1", 10)
        end = int(re.search(r"end_offset=(\d+)", line).group(1))
        durable = int(re.search(r"durable_offset=(\d+)", line).group(1))
        log(f"broker {f}: e-0 offline at end {end}, durable {durable}")
        assert end > durable, line
        wait_isr(c, TOPIC, 0, f, False, 15)
        prod.wait_acks(100, timeout=20)
        ctl_mark = len(c.ctl.log_text())
        c.brokers[f].stop()
        text = c.brokers[f].log_text()
        skipped = "event=clean_shutdown_marker_skipped" in text
        marker = os.path.exists(os.path.join(c.brokers[f].data_dir,
                                             "clean-shutdown-epoch"))
        log(f"broker {f} stopped (SIGTERM): marker skipped={skipped}, "
            f"clean-shutdown-epoch present={marker}")
        fctl[f].set([])
        watch = LogWatch(c.brokers[f])
        c.brokers[f].start()
        unclean = wait_until("the controller's verdict on the stop", lambda: (
            lambda t: "unclean" if f"event=broker_unclean_stop broker={f}"
            in t else ("clean" if f"broker_unfenced broker={f}" in t
                       else None))(c.ctl.log_text()[ctl_mark:]), 20)
        log(f"controller: the stop of broker {f} was {unclean}")
        cuts = watch.lines(rf"event=cut_to_durable dir=\S*/{TOPIC}-0 ")
        log(f"broker {f} at start: {cuts[0][cuts[0].find('event='):][:160]}"
            if cuts else f"broker {f} at start: no cut")
        wait_isr(c, TOPIC, 0, f, True, 30)
        prod.wait_acks(100, timeout=20)
        prod.stop()
        acked = prod.acked()
        got, _ = read_partition(c, TOPIC, 0, prod.sent + 10)
        for val, off in acked.items():
            assert got.get(off) == val, f"{val} acknowledged at {off}"
        log(f"broker {f} back in the ISR; {len(acked)} acknowledged records "
            f"read at their offsets")
        assert not marker and skipped, "clean-shutdown marker written"
        assert unclean == "unclean", "the controller saw a clean stop"
        assert cuts and f"from={end} to={durable} " in cuts[0], \
            f"not cut to the durable offset {durable}: {cuts}"


if __name__ == "__main__":
    if not os.path.exists(diskfault.FAULTFS):
        log(f"SKIPPED: {diskfault.FAULTFS} is not built (set "
            f"WEIR_FAULTFS_LIB)")
        sys.exit(diskfault.SKIP)
    run_main([test_stop_after_failed_fsync_is_unclean_and_cuts])
