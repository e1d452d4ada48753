#!/usr/bin/env python3
"""Cluster control plane with real processes: a weir-controller and three
weir-brokers on loopback. Registration and liveness, placement, failover
after kill -9 (fenced, new leader from the ISR, bumped leader epoch), a
restarted broker unfenced, a restarted controller with all its metadata,
controlled shutdown on SIGTERM, and single-broker mode unaffected. These
tests check metadata, roles and routing only; data replication is in
test_replication.py. Every wait is bounded in time."""
import os
import signal
import time

from weirtest import (INIT_PRODUCER_ID, Broker, Cluster, cluster_state,
                      connect, log, pb_int, pb_parse, read_frame, request,
                      run_main, wait_until, weir)

SESSION_S = 3.0  # the controller's default session timeout


def test_three_brokers_register_and_spread_a_topic():
    with Cluster() as c:
        st = c.state()
        assert st["controller"] == c.ctl.addr, st["text"]
        assert len(st["brokers"]) == 3, st["text"]
        # a single controller (no --voters) shows no quorum section
        assert st["quorum"] is None and "quorum:" not in st["text"], \
            st["text"]
        weir(c.brokers[2], "topic", "create", "orders", "--partitions", "6",
             "--replication-factor", "3")
        # a broker that got the create forwarded already shows the topic
        st = c.state()
        parts = [v for k, v in st["partitions"].items() if k[0] == "orders"]
        assert len(parts) == 6, st["text"]
        firsts = [p["replicas"][0] for p in parts]
        leaders = [p["leader"] for p in parts]
        for i in (1, 2, 3):
            assert firsts.count(i) == 2, st["text"]
            assert leaders.count(i) == 2, st["text"]
        for p in parts:
            assert sorted(p["replicas"]) == [1, 2, 3], st["text"]
            assert sorted(p["isr"]) == [1, 2, 3], st["text"]
        # produce and consume through any broker (clients follow leaders)
        weir(c.brokers[3], "produce", "orders", input=b"a\nb\nc\nd\n")
        out = weir(c.brokers[1], "consume", "orders", "--from-beginning",
                   "--max-messages", "4",
                   "--timeout-ms", "30000").stdout.split()
        assert sorted(out) == [b"a", b"b", b"c", b"d"], out


def failover_check(c, victim, before, killed_at):
    """After victim died: fenced, leaders moved within the ISR, epochs up."""
    seen = {}

    def done():
        seen["t"] = time.time()  # the poll's start: a slow CLI adds nothing
        st = c.state(but=(victim,))
        if st["brokers"][victim][2]:
            return None
        for k, p in before["partitions"].items():
            if p["leader"] == victim and st["partitions"][k]["leader"] in (
                    victim, -1):
                return None
        return st
    st = wait_until(f"broker {victim} fenced", done, SESSION_S + 60)
    took = seen["t"] - killed_at
    log(f"broker {victim} fenced and replaced {took:.2f}s after kill")
    assert took < SESSION_S + 1.5, took
    moved = 0
    for k, p in before["partitions"].items():
        now = st["partitions"][k]
        assert victim not in now["isr"], (k, now)
        if p["leader"] == victim:
            moved += 1
            assert now["leader"] in p["isr"], (k, p, now)
            assert now["epoch"] > p["epoch"], (k, p, now)
    assert moved > 0
    return st


def test_kill9_fails_over_and_restart_unfences():
    with Cluster() as c:
        weir(c.brokers[1], "topic", "create", "t", "--partitions", "6",
             "--replication-factor", "3")
        wait_until("topic visible", lambda: len(c.state()["partitions"]) == 6,
                   60)
        before = c.state()
        c.brokers[1].kill9()
        killed = time.time()
        failover_check(c, 1, before, killed)
        c.brokers[1].start()
        st = c.wait_alive({1, 2, 3})
        assert st["brokers"][1][2], st["text"]
        # writes still go through to the new leaders
        weir(c.brokers[1], "produce", "t", input=b"x\ny\n")


def test_controller_restart_keeps_metadata_and_failover():
    with Cluster() as c:
        weir(c.brokers[3], "topic", "create", "keep", "--partitions", "6",
             "--replication-factor", "3", "--config", "retention.ms=600000")
        wait_until("topic visible", lambda: len(c.state()["partitions"]) == 6,
                   60)
        before = c.state()
        c.ctl.kill9()
        c.ctl.start()
        # the controller itself answers Metadata from its reloaded image
        st = cluster_state(c.ctl)
        assert st["partitions"] == before["partitions"], st["text"]
        assert set(st["brokers"]) == {1, 2, 3}, st["text"]
        c.wait_alive({1, 2, 3})
        before = c.state()
        c.brokers[2].kill9()
        failover_check(c, 2, before, time.time())
        assert "event=log_loaded" in c.ctl.log_text()


def test_sigterm_moves_leaderships_before_exit():
    with Cluster() as c:
        weir(c.brokers[1], "topic", "create", "s", "--partitions", "6",
             "--replication-factor", "3")
        wait_until("topic visible", lambda: len(c.state()["partitions"]) == 6,
                   60)
        before = c.state()
        assert any(p["leader"] == 3 for p in before["partitions"].values())
        t0 = time.time()
        assert c.brokers[3].stop(timeout=15) == 0
        took = time.time() - t0
        log(f"controlled shutdown took {took:.2f}s")
        assert took < SESSION_S, took  # not a session expiry
        st = c.state(but=(3,))  # right after exit: no waiting
        assert not st["brokers"][3][2], st["text"]
        for k, p in st["partitions"].items():
            assert p["leader"] != 3, (k, p)
            if before["partitions"][k]["leader"] == 3:
                assert p["epoch"] > before["partitions"][k]["epoch"], (k, p)
        assert "event=controlled_shutdown broker=3" in c.ctl.log_text()
        assert "how=leaderships_moved" in c.brokers[3].log_text()


def init_producer_id(broker):
    """(error_code, producer_id) of one InitProducerId."""
    s = connect(broker)
    try:
        s.sendall(request(1, INIT_PRODUCER_ID, b""))
        resp, _ = read_frame(s, timeout=20)
    finally:
        s.close()
    if pb_int(resp, 2) != 0:
        return pb_int(resp, 2), -1
    return 0, pb_int(pb_parse(resp[16][0]), 1)


def test_producer_ids_come_from_the_controller():
    """Every broker gets blocks of ids from the controller: ids are unique
    across brokers, broker restarts and a controller restart."""
    with Cluster() as c:
        seen = []

        def ask(i, n=3):
            for _ in range(n):
                err, pid = init_producer_id(c.brokers[i])
                assert err == 0, (i, err)
                assert pid not in seen, (i, pid, seen)
                seen.append(pid)
        for i in (1, 2, 3):
            ask(i)
            assert "event=producer_ids_block" in c.brokers[i].log_text()
        c.brokers[1].kill9()
        c.brokers[1].start()
        c.wait_alive({1, 2, 3}, timeout=60)
        ask(1)
        c.ctl.kill9()
        c.ctl.start()
        c.wait_alive({1, 2, 3}, timeout=20)
        c.brokers[2].kill9()
        c.brokers[2].start()
        c.wait_alive({1, 2, 3}, timeout=60)
        ask(2)
        ask(3)
        blocks = sum(c.brokers[i].log_text().count("event=producer_ids_block")
                     for i in (1, 2, 3))
        log(f"{len(seen)} producer ids, all distinct, from {blocks} blocks")
        assert blocks == 5, blocks


def test_single_broker_mode_unaffected():
    with Broker() as b:
        weir(b, "topic", "create", "solo", "--partitions", "2")
        st = cluster_state(b)
        assert st["controller"].startswith("none"), st["text"]
        assert st["quorum"] is None, st["text"]
        assert list(st["brokers"]) == [1], st["text"]
        assert st["brokers"][1][2]
        assert len(st["partitions"]) == 2, st["text"]


if __name__ == "__main__":
    run_main([
        test_three_brokers_register_and_spread_a_topic,
        test_kill9_fails_over_and_restart_unfences,
        test_controller_restart_keeps_metadata_and_failover,
        test_sigterm_moves_leaderships_before_exit,
        test_producer_ids_come_from_the_controller,
        test_single_broker_mode_unaffected,
    ])
