#!/usr/bin/env python3
"""Cluster identity (docs/operations.md, "Cluster identity"): a controller
starts only on a formatted data dir (or with auto-format on an empty one, or
on a metadata log from before cluster ids, which it adopts); --format makes
a new cluster and refuses a dir that holds metadata. Every wait is bounded
in time; only processes started here are stopped, by PID."""
import os
import subprocess
import tempfile

from weirtest import (CONTROLLER_BIN, Controller, cluster_broker, free_port,
                      run_main, wait_until)


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


if __name__ == "__main__":
    run_main([test_empty_dir_without_format_is_refused,
              test_format_then_start,
              test_auto_format_creates_a_cluster,
              test_metadata_log_without_identity_is_adopted])
