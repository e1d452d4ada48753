#!/usr/bin/env python3
"""TLS on real processes: a broker with a good certificate serves `weir
--tls`; a client that trusts another CA, a certificate for another host,
an expired certificate, TLS 1.0 and 1.1, plain text on the TLS port and,
under mutual TLS, a client without a certificate or with one from another
CA are all refused, while a valid client beside them keeps working. A
controller and three brokers with mutual TLS everywhere replicate and
serve acks=all writes (broker-controller and broker-broker links over
TLS)."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import certs  # noqa: E402
import weirtest  # noqa: E402
from weirtest import (CLI_BIN, Broker, Controller, connect, log,  # noqa: E402
                      read_frame, run_main, wait_until)

TMP = tempfile.mkdtemp(prefix="weir-tls-")
C = certs.make(os.path.join(TMP, "certs"))


def server_args(cert="broker", auth="none"):
    return ["--tls", "--tls-cert", C[cert], "--tls-key", C[cert + ".key"],
            "--tls-ca", C["ca"], "--tls-client-auth", auth]


def cli(addr, *args, ca="ca", cert=None, tls=True, inp=None, check=True):
    cmd = [CLI_BIN, "--bootstrap", addr]
    if tls:
        cmd += ["--tls", "--ca", C[ca]]
    if cert:
        cmd += ["--cert", C[cert], "--key", C[cert + ".key"]]
    p = subprocess.run(cmd + list(args), input=inp, capture_output=True,
                       timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd + list(args)} exited {p.returncode}: "
                             f"{p.stderr.decode()}")
    return p


def refused(addr, why, **kw):
    """The CLI fails to reach the broker, saying why."""
    p = cli(addr, "topic", "list", check=False, **kw)
    err = p.stderr.decode()
    assert p.returncode != 0, f"expected a refusal ({why}), got success"
    assert why in err, f"expected '{why}' in: {err}"
    return err


def round_trip(addr, topic, n=3, **kw):
    vals = [f"{topic}-{i}" for i in range(n)]
    cli(addr, "produce", topic, "--acks", "all",
        inp=("\n".join(vals) + "\n").encode(), **kw)
    out = cli(addr, "consume", topic, "--from-beginning", "--max-messages",
              str(n), "--timeout-ms", "5000", **kw).stdout.decode().split()
    assert out[-n:] == vals or sorted(out) == sorted(vals), (out, vals)


def s_client(addr, *opts):
    host, port = addr.rsplit(":", 1)
    p = subprocess.run(["openssl", "s_client", "-connect", f"{host}:{port}",
                        *opts], input=b"", capture_output=True, timeout=20)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def test_tls_listener():
    with Broker(args=server_args()) as b:
        cli(b.addr, "topic", "create", "t", "--partitions", "2")
        round_trip(b.addr, "t")
        log("good certificate and CA: produce and consume work")
        log("wrong CA: " + refused(b.addr, "certificate verify failed",
                                   ca="other-ca").strip())
        # plain text to the TLS port: the CLI without --tls, and a raw frame
        p = cli(b.addr, "topic", "list", tls=False, check=False)
        assert p.returncode != 0, p.stdout
        s = connect(b)
        s.sendall(weirtest.request(1, 3, b""))
        try:
            got = read_frame(s, timeout=5)
        except (ConnectionError, OSError, AssertionError):
            got = None
        assert got is None, f"a plain-text frame was answered: {got!r}"
        s.close()
        log("plain text to the TLS port: refused")
        for ver in ("-tls1", "-tls1_1"):
            rc, out = s_client(b.addr, ver, "-cipher", "DEFAULT@SECLEVEL=0")
            assert rc != 0 and "alert protocol version" in out, out[-800:]
            log(f"{ver}: the broker answers 'protocol version' and closes")
        rc, out = s_client(b.addr, "-CAfile", C["ca"])
        assert "Protocol  : TLSv1.3" in out or "TLSv1.3" in out, out[-800:]
        log("a default client gets TLS 1.3")
        round_trip(b.addr, "t")
        assert b.proc.poll() is None
        log("the valid client still works after every refusal")


def test_wrong_hostname_and_expired():
    with Broker(args=server_args("wrong-host")) as b:
        err = refused(b.addr, "certificate verify failed")
        assert "mismatch" in err, err
        log("certificate for another host: " + err.strip())
    with Broker(args=server_args("expired")) as b:
        err = refused(b.addr, "certificate has expired")
        log("expired certificate: " + err.strip())


def test_mutual_tls_cluster():
    tmp = tempfile.mkdtemp(prefix="weir-mtls-")
    ctl = Controller(data_dir=os.path.join(tmp, "controller"),
                     args=server_args(auth="required"))
    brokers = {}
    try:
        ctl.start()
        for i in (1, 2, 3):
            brokers[i] = Broker(
                data_dir=os.path.join(tmp, f"broker-{i}"),
                args=["--id", str(i), "--controller", ctl.addr,
                      "--replica-lag-time-max-ms", "2000"]
                + server_args(auth="required")).start()
        addr = brokers[1].addr

        def three_alive():
            p = cli(addr, "cluster", cert="alice", check=False)
            out = p.stdout.decode()
            return out if p.returncode == 0 and "(3 alive" in out else None
        out = wait_until("three brokers alive over mutual TLS", three_alive,
                         20, step=0.5)
        log("controller and brokers joined over mutual TLS:\n" + out)
        cli(addr, "topic", "create", "m", "--partitions", "3",
            "--replication-factor", "3", cert="alice")

        def full_isr():
            out = cli(addr, "cluster", cert="alice").stdout.decode()
            rows = [ln for ln in out.splitlines() if ln.split()[:1] == ["m"]]
            return len(rows) == 3 and all("isr=" in r and len(r.split(
                "isr=")[1].split()[0].split(",")) == 3 for r in rows)
        wait_until("topic m with full ISRs", full_isr, 20, step=0.5)
        round_trip(addr, "m", n=50, cert="alice")
        log("acks=all writes replicated to three brokers over TLS")
        err = refused(addr, "TLS", cert=None)
        log("no client certificate: " + err.strip())
        err = refused(addr, "TLS", cert="mallory")
        log("certificate from another CA: " + err.strip())
        round_trip(addr, "m", n=5, cert="alice")
        log("the valid client still works")
        # a clean stop over TLS links exits 0 (leak checks included in a
        # sanitizer build)
        codes = [brokers[i].stop() for i in (3, 2, 1)] + [ctl.stop()]
        assert codes == [0, 0, 0, 0], codes
        log("brokers and controller stopped cleanly")
    finally:
        for b in brokers.values():
            b.cleanup()
        ctl.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def test_tls_beside_plaintext():
    """Brokers with a plain listener and a TLS one beside it (tls-listen):
    plain clients use the plain addresses, TLS clients learn the brokers'
    TLS addresses from metadata (and the group coordinator's from
    FindCoordinator) and never touch a plain port."""
    tmp = tempfile.mkdtemp(prefix="weir-tlsb-")
    ctl_tls = f"127.0.0.1:{weirtest.free_port()}"
    ctl = Controller(data_dir=os.path.join(tmp, "controller"),
                     args=["--tls-listen", ctl_tls, "--tls-cert", C["broker"],
                           "--tls-key", C["broker.key"]])
    brokers = {}
    tls_addr = {}
    try:
        ctl.start()
        for i in (1, 2, 3):
            tls_addr[i] = f"127.0.0.1:{weirtest.free_port()}"
            brokers[i] = Broker(
                data_dir=os.path.join(tmp, f"broker-{i}"),
                args=["--id", str(i), "--controller", ctl.addr,
                      "--tls-listen", tls_addr[i], "--tls-cert", C["broker"],
                      "--tls-key", C["broker.key"]]).start()
        plain = brokers[1].addr

        def three_alive():
            p = cli(plain, "cluster", tls=False, check=False)
            out = p.stdout.decode()
            return out if p.returncode == 0 and "(3 alive" in out else None
        wait_until("three brokers alive", three_alive, 20, step=0.5)
        cli(plain, "topic", "create", "b", "--partitions", "3",
            "--replication-factor", "3", tls=False)
        round_trip(plain, "b", n=20, tls=False)
        log("plain clients on the plain listeners: produce and consume")
        round_trip(tls_addr[2], "b", n=20)
        log("a TLS client bootstrapped on a TLS listener: produce and "
            "consume through every broker's TLS address")
        got = cli(tls_addr[3], "consume", "b", "--group", "g",
                  "--from-beginning", "--max-messages", "40",
                  "--timeout-ms", "30000").stdout.split()
        assert len(got) >= 40, got
        log(f"a TLS group member read {len(got)} records (coordinator "
            f"found over TLS)")
        out = cli(ctl_tls, "cluster").stdout.decode()
        assert "(3 alive" in out, out
        log("the controller's TLS listener beside its plain one answers "
            "`weir cluster` over TLS")
        p = cli(tls_addr[1], "topic", "list", tls=False, check=False)
        assert p.returncode != 0
        p = cli(ctl_tls, "cluster", tls=False, check=False)
        assert p.returncode != 0
        p = cli(plain, "topic", "list", check=False)
        assert p.returncode != 0
        log("plain text to a TLS listener, and TLS to a plain one: refused")
        assert "tls=beside" in brokers[1].log_text()
    finally:
        for b in brokers.values():
            b.cleanup()
        ctl.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        run_main([test_tls_listener, test_wrong_hostname_and_expired,
                  test_mutual_tls_cluster, test_tls_beside_plaintext])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
