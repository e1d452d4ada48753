#!/usr/bin/env python3
"""SASL/SCRAM on real processes. A controller creates its first users from
bootstrap-users-file; three brokers log in to it and to each other as
`broker`, and every listener requires a login. Over the wire:
SCRAM-SHA-256 and SCRAM-SHA-512 with the right password authenticate; a
wrong password, an unknown user and a replayed final message are refused
with the same SASL_AUTHENTICATION_FAILED and the connection is closed; an
unknown mechanism is answered with the enabled ones; a call before the
login is refused and closed; a frame above the pre-login limit is
refused. With the CLI: `weir user create` (password from stdin) makes a
user that can produce and consume at RF 3, `weir user list` shows it
without any secret, `weir user delete` removes it and its next login
fails; a broker with a wrong password never joins."""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import scram  # noqa: E402
from weirtest import (CLI_BIN, Controller, cluster_broker, connect,  # noqa
                      closed_by_peer, log, pb_int, pb_msg, pb_parse, read_frame,
                      request, wait_until, METADATA)

ERR = {"SASL_AUTHENTICATION_FAILED": 50, "UNSUPPORTED_SASL_MECHANISM": 51,
       "ILLEGAL_SASL_STATE": 52, "FRAME_TOO_LARGE": 6}
MECHS = "SCRAM-SHA-256,SCRAM-SHA-512"
PASSWORDS = {"admin": "admin-secret", "broker": "broker-secret",
             "alice": "alice-secret"}

TMP = tempfile.mkdtemp(prefix="weir-scram-")
STATE = {}


def users_file():
    path = os.path.join(TMP, "users")
    with open(path, "w") as f:
        for u, p in PASSWORDS.items():
            f.write(f"{u} {p}\n")
    os.chmod(path, 0o600)
    return path


def cli(broker, *args, user="admin", password=None, inp=None, check=True,
        mech="SCRAM-SHA-256"):
    env = dict(os.environ)
    env.pop("WEIR_TLS", None)
    if user:
        env["WEIR_USER"] = user
        env["WEIR_PASSWORD"] = password or PASSWORDS[user]
        env["WEIR_SASL_MECHANISM"] = mech
    p = subprocess.run([CLI_BIN, "--bootstrap", broker.addr] + list(args),
                       input=inp, capture_output=True, timeout=120, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"weir {' '.join(args)} exited "
                             f"{p.returncode}: {p.stderr.decode()[-1500:]}")
    return p


def start():
    ctl = Controller(data_dir=os.path.join(TMP, "controller"),
                     args=["--sasl-mechanisms", MECHS,
                           "--bootstrap-users-file", users_file()])
    ctl.start()
    brokers = {}
    for i in (1, 2, 3):
        b = cluster_broker(ctl, i, TMP, args=["--sasl-mechanisms", MECHS,
                                              "--sasl-username", "broker"])
        b.env = {"WEIR_SASL_PASSWORD": PASSWORDS["broker"]}
        b.start()
        brokers[i] = b
    STATE.update(ctl=ctl, brokers=brokers)

    wait_until("three brokers unfenced behind SCRAM",
               lambda: unfenced(brokers[1]) >= {1, 2, 3}, 30, step=0.3)


def unfenced(broker):
    """Broker ids unfenced in a Metadata answer, asked as admin."""
    s = connect(broker)
    try:
        if scram.login(s, "SCRAM-SHA-256", "admin", PASSWORDS["admin"])[0]:
            return set()
        s.sendall(request(9, METADATA, pb_msg((2, 1))))
        got = read_frame(s)
        if got is None or METADATA not in got[0]:
            return set()
        md = pb_parse(got[0][METADATA][0])
        ids = set()
        for raw in md.get(3, []):
            bi = pb_parse(raw)
            if not pb_int(bi, 5):
                ids.add(pb_int(bi, 1))
        return ids
    finally:
        s.close()


def b1():
    return STATE["brokers"][1]


def test_bootstrap_users_and_broker_logins():
    ctl = STATE["ctl"]
    text = ctl.log_text()
    for u in PASSWORDS:
        assert f"event=bootstrap_user name={u} mech=SCRAM-SHA-256" in text
        assert f"event=bootstrap_user name={u} mech=SCRAM-SHA-512" in text
    assert 'principal="User:broker"' in text, "brokers did not log in"
    for u, p in PASSWORDS.items():
        assert p not in text, "a password reached the controller's log"


def test_right_password_both_mechanisms():
    for mech in MECHS.split(","):
        s = connect(b1())
        code, principal = scram.login(s, mech, "alice", PASSWORDS["alice"])
        assert code == 0, f"{mech}: login failed with {code}"
        assert principal == "User:alice", principal
        # now an ordinary call is served
        s.sendall(request(7, METADATA, pb_msg((2, 1))))
        env, _ = read_frame(s)
        assert pb_int(env, 2) == 0 and METADATA in env, env
        s.close()
        log(f"{mech}: alice authenticated and served")


def test_wrong_password_and_unknown_user():
    for user, pw in (("alice", "not-her-password"), ("mallory", "x")):
        s = connect(b1())
        code, _ = scram.login(s, "SCRAM-SHA-256", user, pw)
        assert code == ERR["SASL_AUTHENTICATION_FAILED"], (user, code)
        assert closed_by_peer(s, 5), "connection left open after a failure"
        s.close()
    text = b1().log_text()
    assert 'event=sasl_failed' in text and 'user="mallory"' in text
    log("wrong password and unknown user: same error, connection closed")


def test_replayed_final_message():
    # a complete, successful exchange whose final message is captured
    s = connect(b1())
    assert scram.handshake(s, "SCRAM-SHA-256")[0] == 0
    a = scram.Scram("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    code, server_first, _ = scram.authenticate(s, a.first())
    assert code == 0
    captured = a.final(server_first)
    code, server_final, _ = scram.authenticate(s, captured)
    assert code == 0 and a.verify(server_final)
    s.close()
    # the same client-first (same client nonce) on a new connection, then
    # the captured final: the server's nonce differs, so it must fail
    s = connect(b1())
    assert scram.handshake(s, "SCRAM-SHA-256")[0] == 0
    b = scram.Scram("SCRAM-SHA-256", "alice", PASSWORDS["alice"],
                    nonce=a.nonce)
    code, server_first2, _ = scram.authenticate(s, b.first())
    assert code == 0 and server_first2 != server_first
    r = scram.authenticate(s, captured)
    assert r is not None and r[0] == ERR["SASL_AUTHENTICATION_FAILED"], r
    assert closed_by_peer(s, 5)
    s.close()
    log("replayed final message refused")


def test_unknown_mechanism():
    s = connect(b1())
    code, mechs = scram.handshake(s, "PLAIN")
    assert code == ERR["UNSUPPORTED_SASL_MECHANISM"], code
    assert mechs == ["SCRAM-SHA-256", "SCRAM-SHA-512"], mechs
    # the connection stays usable for a supported mechanism
    code, principal = scram.login(s, "SCRAM-SHA-512", "alice",
                                  PASSWORDS["alice"])
    assert code == 0 and principal == "User:alice"
    s.close()
    log(f"unknown mechanism refused, enabled ones listed: {mechs}")


def test_calls_before_login_refused():
    for target in (b1(), STATE["ctl"]):
        s = connect(target)
        s.sendall(request(3, METADATA, pb_msg((2, 1))))
        got = read_frame(s)
        assert got is not None
        assert pb_int(got[0], 2) == ERR["ILLEGAL_SASL_STATE"], got[0]
        assert closed_by_peer(s, 5)
        s.close()
        # a frame above the pre-login limit is refused unread
        s = connect(target)
        s.sendall(struct.pack(">II", 4 + 100000, 100))
        got = read_frame(s)
        assert got is not None and pb_int(got[0], 2) == ERR["FRAME_TOO_LARGE"]
        assert closed_by_peer(s, 5)
        s.close()
    log("calls and large frames before the login refused (broker and "
        "controller)")


def test_user_admin_with_cli():
    brokers = STATE["brokers"]
    p = cli(b1(), "user", "create", "bob", "--mechanism", "SCRAM-SHA-512",
            "--iterations", "8192", inp=b"bob-secret\n")
    log(p.stdout.decode().strip())
    listing = cli(b1(), "user", "list").stdout.decode()
    assert "bob" in listing and "SCRAM-SHA-512" in listing and \
        "8192" in listing, listing
    assert "bob-secret" not in listing

    def bob_logs_in():
        s = connect(brokers[2])
        code, _ = scram.login(s, "SCRAM-SHA-512", "bob", "bob-secret")
        s.close()
        return code == 0
    wait_until("bob known on broker 2", bob_logs_in, 60)
    cli(b1(), "topic", "create", "scram-t", "--partitions", "2",
        "--replication-factor", "3")
    vals = "".join(f"v{i}\n" for i in range(200)).encode()
    bob = dict(user="bob", password="bob-secret", mech="SCRAM-SHA-512")
    cli(brokers[2], "produce", "scram-t", "--acks", "all", inp=vals, **bob)
    out = cli(brokers[3], "consume", "scram-t", "--from-beginning",
              "--max-messages", "200", "--timeout-ms", "10000",
              **bob).stdout.decode()
    assert sorted(out.split()) == sorted(vals.decode().split()), out[:300]
    bad = cli(brokers[2], "topic", "list", user="bob", password="wrong",
              mech="SCRAM-SHA-512", check=False)
    assert bad.returncode != 0
    assert b"auth" in bad.stderr.lower(), bad.stderr
    cli(b1(), "user", "delete", "bob", "--mechanism", "SCRAM-SHA-512")

    def bob_refused():
        s = connect(brokers[3])
        code, _ = scram.login(s, "SCRAM-SHA-512", "bob", "bob-secret")
        s.close()
        return code == ERR["SASL_AUTHENTICATION_FAILED"]
    wait_until("bob refused after delete", bob_refused, 60)
    log("weir user create/list/delete; bob produced and consumed at RF 3")


def test_broker_with_wrong_password_stays_out():
    ctl = STATE["ctl"]
    b = cluster_broker(ctl, 4, TMP, args=["--sasl-mechanisms", MECHS,
                                          "--sasl-username", "broker"])
    b.env = {"WEIR_SASL_PASSWORD": "guess"}
    b.start()
    try:
        wait_until("broker 4 login refused",
                   lambda: "event=sasl_login_failed" in b.log_text(), 15)
        time.sleep(1)
        assert 4 not in unfenced(b1()), "broker 4 joined"
    finally:
        b.kill9()
    log("a broker with a wrong password never registered")


def main():
    scram.run_cluster_tests(start, [test_bootstrap_users_and_broker_logins,
         test_right_password_both_mechanisms,
         test_wrong_password_and_unknown_user, test_replayed_final_message,
         test_unknown_mechanism, test_calls_before_login_refused,
         test_user_admin_with_cli, test_broker_with_wrong_password_stays_out], STATE, TMP)


if __name__ == "__main__":
    main()
