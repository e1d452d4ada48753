#!/usr/bin/env python3
"""Bad topic configuration is refused, not ignored (issue 12, item 13).

`weir topic create t --config retention.ms=abc` (and cleanup.policy=banana,
nosuch.key=1, min.insync.replicas above the replication factor) must exit
non-zero with the key in the message and create nothing, on a standalone
broker and in a cluster (controller + 3 brokers), where the controller
used to write any key and the brokers silently skipped what they could not
parse - a user who meant to keep data for a week got the default. A valid
config is still accepted and applied. Every wait is bounded in time."""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (Broker, Cluster, log, run_main,  # noqa: E402
                      wait_until, weir)

BAD = [
    ("retention.ms", "abc"),
    ("cleanup.policy", "banana"),
    ("nosuch.key", "1"),
    ("segment.bytes", "1k"),
    ("min.cleanable.dirty.ratio", "2"),
]


def topics(b):
    return set(weir(b, "topic", "list").stdout.decode().split())


def check_refusals(b, bad, suffix):
    """Each bad config: non-zero exit, the key in the message, no topic."""
    for i, (key, value) in enumerate(bad):
        name = f"bad{i}{suffix}"
        p = weir(b, "topic", "create", name, "--partitions", "1",
                 "--config", "delete.retention.ms=86400000",
                 "--config", f"{key}={value}", check=False)
        out = (p.stdout + p.stderr).decode(errors="replace").strip()
        log(f"  --config {key}={value}: exit {p.returncode}: {out}")
        assert p.returncode != 0, f"{key}={value} accepted: {out}"
        assert key in p.stderr.decode(), out
        assert "created topic" not in p.stdout.decode(), out
    return [f"bad{i}{suffix}" for i in range(len(bad))]


def check_nothing_created(b, names, good):
    """Once the good topic is listed, none of the refused ones are."""
    wait_until(f"topic {good} listed", lambda: good in topics(b), 20)
    listed = topics(b)
    assert not listed & set(names), f"refused topics exist: {listed}"


def test_standalone_refuses_bad_configs():
    with Broker() as b:
        names = check_refusals(b, BAD + [("min.insync.replicas", "2")], "s")
        weir(b, "topic", "create", "good", "--partitions", "1",
             "--config", "retention.ms=604800000",
             "--config", "min.insync.replicas=1")
        check_nothing_created(b, names, "good")
        d = weir(b, "topic", "describe", "good").stdout.decode()
        assert "retention.ms=604800000" in d, d


def test_cluster_refuses_bad_configs():
    with Cluster() as c:
        b = c.brokers[1]
        names = check_refusals(
            b, BAD + [("min.insync.replicas", "4"),
                      ("min.insync.replicas", "two")], "c")
        weir(b, "topic", "create", "good", "--partitions", "1",
             "--replication-factor", "3",
             "--config", "retention.ms=604800000",
             "--config", "cleanup.policy=compact,delete",
             "--config", "min.insync.replicas=2")
        check_nothing_created(b, names, "good")
        for other in c.brokers.values():
            assert not set(names) & topics(other)
        d = weir(b, "topic", "describe", "good").stdout.decode()
        log(f"  describe good: {d.strip()}")
        assert "retention.ms=604800000" in d, d
        for other in c.brokers.values():
            text = other.log_text()
            assert "topic_config_ignored" not in text, text[-2000:]


if __name__ == "__main__":
    run_main([test_standalone_refuses_bad_configs,
              test_cluster_refuses_bad_configs])
