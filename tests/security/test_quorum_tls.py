#!/usr/bin/env python3
"""The controller quorum over mutual TLS, with real processes on loopback:
three weir-controller members started with --tls (tls-cert, tls-key,
tls-ca) elect an active controller and replicate a topic created through
it to every member, over TLS links only. A TLS client without a
certificate is refused raft messages. A member restarted with a
certificate from another CA is refused in the handshake (both sides say
why) and applies nothing new; restarted as plain TCP it cannot join
either (its listener says the others speak TLS, they say it does not)."""
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import certs  # noqa: E402
import weirtest  # noqa: E402
from weirtest import (CLI_BIN, CONTROLLER_BIN, Broker, Controller,  # noqa
                      free_port, log, run_main, wait_until)

TMP = tempfile.mkdtemp(prefix="weir-qtls-")
CERTS = os.path.join(TMP, "certs")
C = certs.make(CERTS)
# a member certificate for the right address, signed by the wrong CA
certs.sign(CERTS, "rogue", "rogue", "IP:127.0.0.1,DNS:localhost",
           ca="other-ca")
C["rogue"] = os.path.join(CERTS, "rogue.pem")
C["rogue.key"] = os.path.join(CERTS, "rogue.key")


def tls_args(cert="broker"):
    return ["--tls", "--tls-cert", C[cert], "--tls-key", C[cert + ".key"],
            "--tls-ca", C["ca"]]


def cli(addr, *args, check=True):
    cmd = [CLI_BIN, "--bootstrap", addr, "--tls", "--ca", C["ca"], "--cert",
           C["alice"], "--key", C["alice.key"]] + list(args)
    p = subprocess.run(cmd, capture_output=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}: "
                             f"{p.stderr.decode()}")
    return p


def applied(text):
    """The highest raft index a member's trace says it applied."""
    ends = [int(x) for x in re.findall(r"event=applied from=\d+ to=(\d+)",
                                       text)]
    return max(ends, default=0)


class TlsQuorum:
    def __init__(self, tmp):
        self.tmp = tmp
        self.cluster_id = "t" + uuid.uuid4().hex[:20]
        ports = {i: free_port() for i in (1, 2, 3)}
        self.voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
        self.ctls = {i: Controller(
            data_dir=os.path.join(tmp, f"controller-{i}"), port=p,
            format=False, args=self.args(i)) for i, p in ports.items()}
        self.broker = None

    def args(self, i, tls=tls_args()):
        return ["--id", str(i), "--voters", self.voters, "--cluster-id",
                self.cluster_id, "--election-timeout-ms", "500",
                "--raft-heartbeat-interval-ms", "50"] + tls

    def start(self):
        for c in self.ctls.values():
            subprocess.run([CONTROLLER_BIN, "--format", "--data-dir",
                            c.data_dir, "--cluster-id", self.cluster_id],
                           check=True, capture_output=True, timeout=30)
            c.start()
        listed = ",".join(c.addr for c in self.ctls.values())
        self.broker = Broker(data_dir=os.path.join(self.tmp, "broker-1"),
                             args=["--id", "1", "--controller", listed]
                             + tls_args()).start()

    def active(self, among=(1, 2, 3)):
        ids = []
        for i in among:
            states = re.findall(r"event=member_state active=(\w+)",
                                self.ctls[i].log_text())
            if states and states[-1] == "true":
                ids.append(i)
        return ids[0] if len(ids) == 1 else None

    def create(self, topic, among=(1, 2, 3)):
        """Create topic through the active controller (retried while the
        role moves); returns (active id, the index it applied)."""
        def once():
            a = self.active(among)
            if a is None:
                return None
            p = cli(self.ctls[a].addr, "topic", "create", topic,
                    "--partitions", "1", "--replication-factor", "1",
                    check=False)
            if p.returncode != 0 and b"exists" not in p.stderr:
                log(f"create {topic} via {a}: {p.stderr.decode().strip()}")
                return None
            return a
        a = wait_until(f"{topic} created", once, 30, step=0.3)
        return a, applied(self.ctls[a].log_text())

    def cleanup(self):
        for p in list(self.ctls.values()) + [self.broker]:
            if p is not None and p.proc and p.proc.poll() is None:
                p.kill9()


def raft_without_cert(addr):
    """A TLS client that trusts the CA but has no certificate sends one
    (empty) raft message; the member must refuse it."""
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=C["ca"])
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(weirtest.request(1, 50, b""))
            time.sleep(0.3)


def test_tls_quorum_replicates_and_refuses_strangers():
    tmp = tempfile.mkdtemp(prefix="weir-qtls-run-")
    q = TlsQuorum(tmp)
    try:
        q.start()
        first = wait_until("one active controller", q.active, 20, step=0.05)
        log(f"active controller over TLS links: {first}")
        a, idx = q.create("qt1")
        for i, c in q.ctls.items():
            wait_until(f"member {i} applies index {idx}",
                       lambda: applied(c.log_text()) >= idx, 15)
        log(f"qt1 created via member {a} (index {idx}), applied by all")
        for i, c in q.ctls.items():
            text = c.log_text()
            assert text.count("event=raft_peer_connected") >= 2, text[-2000:]
            assert "raft_peer_tls_failed" not in text, text[-2000:]
            assert "event=raft_refused" not in text, text[-2000:]
        out = cli(q.ctls[a].addr, "cluster").stdout.decode()
        assert "quorum: 3 voters (3 reachable, 0 unreachable)" in out, out

        # no client certificate: connected (brokers may), raft refused
        victim = next(i for i in q.ctls if i != a)
        raft_without_cert(q.ctls[victim].addr)
        text = wait_until(
            "the refusal of a raft message without a certificate",
            lambda: (lambda t: t if "error=AUTHENTICATION" in t else None)(
                q.ctls[victim].log_text()), 10)
        line = [ln for ln in text.splitlines() if "error=AUTHENTICATION"
                in ln][-1]
        log("no certificate: " + line)
        assert "event=raft_refused peer=127.0.0.1:" in line, line

        # a member with a certificate from another CA
        others = [i for i in q.ctls if i != victim]
        v = q.ctls[victim]
        assert v.stop() == 0
        mark = len(v.log_text())
        v.args = q.args(victim, tls_args("rogue"))
        v.start()
        a, idx = q.create("qt2", among=others)
        for i in others:
            wait_until(f"member {i} applies index {idx}",
                       lambda: applied(q.ctls[i].log_text()) >= idx, 15)
        want = rf"event=raft_peer_tls_failed voter={victim} .*reason=\".*" \
               r"certificate verify failed \(unable to get local issuer"
        for i in others:
            wait_until(f"member {i} says why it refuses {victim}",
                       lambda: re.search(want, q.ctls[i].log_text()), 10)
        wait_until(f"member {victim} says why it is refused",
                   lambda: re.search(
                       r"event=raft_peer_tls_failed voter=\d .*unknown ca",
                       v.log_text()[mark:]), 10)
        time.sleep(1.5)  # time enough to replicate, were it allowed
        after = v.log_text()[mark:]
        assert applied(after) < idx, after[-2000:]
        assert "active=true" not in after, after[-2000:]
        refusals = [ln for ln in q.ctls[others[0]].log_text().splitlines()
                    if "event=tls_client_cert_refused" in ln]
        assert refusals and "unable to get local issuer" in refusals[-1] \
            and 'subject="CN=rogue"' in refusals[-1], \
            f"the listener did not say whose certificate it refused and " \
            f"why: {refusals}"
        log(f"member {victim} with another CA's certificate: refused, "
            f"applies nothing new\n  "
            + re.search(want + ".*", q.ctls[others[0]].log_text()).group(0)
            + "\n  " + refusals[-1] + "\n  "
            + [ln for ln in after.splitlines()
               if "raft_peer_tls_failed" in ln][0])

        # the same member as plain TCP
        assert v.stop() == 0
        mark = len(v.log_text())
        v.args = q.args(victim, [])
        v.start()
        a, idx = q.create("qt3", among=others)
        for i in others:
            wait_until(f"member {i} applies index {idx}",
                       lambda: applied(q.ctls[i].log_text()) >= idx, 15)
        line = wait_until(
            f"plain member {victim} says the others speak TLS",
            lambda: re.search(r".*event=bad_frame .*a TLS handshake on a "
                              r"plain-TCP listener.*", v.log_text()[mark:]),
            10).group(0)
        want = rf".*event=raft_peer_tls_failed voter={victim} .*wrong " \
               r"version number \(does the peer listen with TLS\?\).*"
        line2 = wait_until(f"member {others[0]} says {victim} is plain",
                           lambda: re.search(want,
                                             q.ctls[others[0]].log_text()),
                           10).group(0)
        time.sleep(1.5)
        after = v.log_text()[mark:]
        assert applied(after) < idx, after[-2000:]
        assert "active=true" not in after, after[-2000:]
        log(f"member {victim} as plain TCP: cannot join\n  {line}\n  "
            f"{line2}")
        codes = [q.broker.stop()] + [c.stop() for c in q.ctls.values()]
        assert codes == [0, 0, 0, 0], codes
    finally:
        q.cleanup()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


def test_tls_quorum_needs_a_ca():
    """tls in a quorum without tls-ca: a configuration error (exit 2)."""
    tmp = tempfile.mkdtemp(prefix="weir-qtls-ca-")
    try:
        p = subprocess.run(
            [CONTROLLER_BIN, "--data-dir", os.path.join(tmp, "d"), "--id", "1",
             "--voters", f"1@127.0.0.1:{free_port()}", "--tls", "--tls-cert",
             C["broker"], "--tls-key", C["broker.key"]],
            capture_output=True, timeout=30)
        err = p.stderr.decode() + p.stdout.decode()
        assert p.returncode == 2, (p.returncode, err)
        assert "tls-ca" in err, err
        log("a TLS quorum member without tls-ca: " + err.strip()[-300:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        run_main([test_tls_quorum_replicates_and_refuses_strangers,
                  test_tls_quorum_needs_a_ca])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
