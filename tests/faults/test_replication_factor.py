#!/usr/bin/env python3
"""The replication factor is never silently lowered (issue 12, item 8),
with real processes: a controller and three brokers, two of them killed
with kill -9 (and fenced) before anything is created.

- test_offsets_topic_waits_for_brokers: a consumer group's first request
  (FindCoordinator) while two of three brokers are down is answered
  COORDINATOR_NOT_AVAILABLE, again and again (each asks the controller
  anew), and __consumer_offsets does not exist; once the two are back it
  is created with replication factor 3 and the group gets a coordinator.
  Before this, the controller capped the default factor at the brokers in
  service and created the topic with one replica for ever.
- test_create_waits_for_brokers: `weir topic create --replication-factor
  3` with one broker in service fails with the retriable
  NOT_ENOUGH_REPLICAS naming both counts and creates nothing; the same
  command succeeds once the brokers are back. Before, it failed with the
  non-retriable INVALID_REPLICATION_FACTOR.

Every wait is bounded; only processes started here are signalled, by
PID."""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (connect, log, pb_int, pb_msg, pb_parse,  # noqa: E402
                      read_frame, run_main, wait_until, weir)

CREATE_TOPICS, FIND = 11, 30
E_NOT_ENOUGH_REPLICAS, E_COORD_NA = 20, 39
OFFSETS = "__consumer_offsets"
PARTS = 4


class Cluster(weirtest.Cluster):
    def __init__(self):
        super().__init__(
            args=["--offsets-topic-num-partitions", str(PARTS)],
            prefix="weir-faults-rf-")

    def two_down(self):
        """kill -9 brokers 2 and 3 and wait until both are fenced."""
        for i in (2, 3):
            self.brokers[i].kill9()

        def fenced():
            st = self.state(but=(2, 3))
            return st if not st["brokers"][2][2] and \
                not st["brokers"][3][2] else None
        wait_until("brokers 2 and 3 fenced", fenced, 20)

    def back(self):
        for i in (2, 3):
            self.brokers[i].start()
        self.wait_alive({1, 2, 3}, timeout=20)


def call(broker, field, body, timeout=20):
    """One request; the parsed body of its answer."""
    sock = connect(broker)
    try:
        hdr = pb_msg((1, 7), (2, "faults"), (field, body))
        sock.sendall(struct.pack(">II", 4 + len(hdr), len(hdr)) + hdr)
        resp, _ = read_frame(sock, timeout=timeout)
    finally:
        sock.close()
    assert pb_int(resp, 1) == 7, resp
    assert pb_int(resp, 2) == 0, resp
    return pb_parse(resp[field][0])


def find_coordinator(broker, group):
    """(error code, message) of one FindCoordinator."""
    body = call(broker, FIND, pb_msg((1, group)))
    msg = body.get(2, [b""])[-1].decode(errors="replace")
    return pb_int(body, 1), msg


def create_topic(broker, name, partitions, rf):
    """(error code, message) of one CreateTopics of one topic."""
    ct = pb_msg((1, name), (2, partitions), (3, rf))
    res = pb_parse(call(broker, CREATE_TOPICS, pb_msg((1, [ct])), 60)[1][0])
    return pb_int(res, 2), res.get(3, [b""])[-1].decode(errors="replace")


def offsets_partitions(c, but=()):
    return {p: v for (t, p), v in c.state(but)["partitions"].items()
            if t == OFFSETS}


def test_offsets_topic_waits_for_brokers():
    with Cluster() as c:
        c.two_down()
        answers = []
        for _ in range(4):  # 1 s apart: each may ask the controller again
            answers.append(find_coordinator(c.brokers[1], "g1"))
            time.sleep(1.2)
        log(f"FindCoordinator with 2 of 3 brokers down: {answers[-1]}")
        parts = offsets_partitions(c, but=(2, 3))
        assert not parts, f"{OFFSETS} created with brokers down: {parts}"
        assert all(e == E_COORD_NA for e, _ in answers), answers
        assert "replication factor 3" in answers[-1][1], answers[-1]
        c.back()

        def coordinator():
            err, msg = find_coordinator(c.brokers[1], "g1")
            return (err, msg) if err == 0 else None
        wait_until("a coordinator once the brokers are back", coordinator, 30)
        parts = offsets_partitions(c)
        log(f"{OFFSETS}: {len(parts)} partitions, replicas "
            f"{sorted({len(p['replicas']) for p in parts.values()})}")
        assert len(parts) == PARTS, parts
        for p, v in parts.items():
            assert len(v["replicas"]) == 3, (p, v)


def test_create_waits_for_brokers():
    with Cluster() as c:
        c.two_down()
        err, msg = create_topic(c.brokers[1], "rf3", 2, 3)
        log(f"create with 1 of 3 brokers in service: error {err}: {msg}")
        assert err == E_NOT_ENOUGH_REPLICAS, (err, msg)
        assert "replication factor 3" in msg and "1 of 3" in msg, msg
        p = weir(c.brokers[1], "topic", "create", "rf3", "--partitions", "2",
                 "--replication-factor", "3", check=False)
        assert p.returncode != 0, p
        assert not [k for k in c.state(but=(2, 3))["partitions"]
                    if k[0] == "rf3"]
        c.back()
        weir(c.brokers[1], "topic", "create", "rf3", "--partitions", "2",
             "--replication-factor", "3")
        parts = [v for (t, _), v in c.state()["partitions"].items()
                 if t == "rf3"]
        assert len(parts) == 2 and all(len(v["replicas"]) == 3
                                       for v in parts), parts
        log("created with replication factor 3 once the brokers are back")


if __name__ == "__main__":
    run_main([test_offsets_topic_waits_for_brokers,
              test_create_waits_for_brokers])
