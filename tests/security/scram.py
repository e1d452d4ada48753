"""A small SCRAM client (RFC 5802 / RFC 7677) and the SASL calls of the
Weir protocol over a raw socket, for the security tests: it lets a test
send exactly the messages it wants (a wrong proof, a replayed final
message, an unknown mechanism)."""
import base64
import hashlib
import hmac
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from weirtest import (log, pb_int, pb_msg, pb_parse, read_frame,  # noqa
                      request, run_main)

SASL_HANDSHAKE, SASL_AUTHENTICATE = 40, 41
HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


class Scram:
    def __init__(self, mech, user, password, nonce=None):
        self.h = HASHES[mech]
        self.user = user
        self.password = password
        self.nonce = nonce or base64.b64encode(os.urandom(18)).decode()
        self.first_bare = f"n={user},r={self.nonce}"

    def first(self):
        return ("n,," + self.first_bare).encode()

    def final(self, server_first):
        sf = server_first.decode()
        attrs = dict(kv.split("=", 1) for kv in sf.split(","))
        assert attrs["r"].startswith(self.nonce), "server dropped our nonce"
        salt = base64.b64decode(attrs["s"])
        it = int(attrs["i"])
        salted = hashlib.pbkdf2_hmac(self.h().name, self.password.encode(),
                                     salt, it)
        client_key = hmac.new(salted, b"Client Key", self.h).digest()
        stored = self.h(client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.first_bare},{sf},{without_proof}".encode()
        sig = hmac.new(stored, auth, self.h).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        server_key = hmac.new(salted, b"Server Key", self.h).digest()
        self.server_sig = hmac.new(server_key, auth, self.h).digest()
        return (without_proof + ",p="
                + base64.b64encode(proof).decode()).encode()

    def verify(self, server_final):
        v = server_final.decode()
        return v.startswith("v=") and \
            base64.b64decode(v[2:]) == self.server_sig


_corr = [1000]


def call(sock, field, body):
    """One request; returns (envelope dict, body dict) or None if closed."""
    _corr[0] += 1
    sock.sendall(request(_corr[0], field, body))
    got = read_frame(sock)
    if got is None:
        return None
    env, _ = got
    inner = pb_parse(env[field][0]) if field in env else {}
    return env, inner


def handshake(sock, mech):
    """-> (error_code, [mechanisms]) or None when closed."""
    r = call(sock, SASL_HANDSHAKE, pb_msg((1, mech)))
    if r is None:
        return None
    env, body = r
    code = pb_int(body, 1) or pb_int(env, 2)
    return code, [m.decode() for m in body.get(3, [])]


def authenticate(sock, data):
    """-> (error_code, auth_bytes, principal) or None when closed."""
    r = call(sock, SASL_AUTHENTICATE, pb_msg((1, data)))
    if r is None:
        return None
    env, body = r
    code = pb_int(body, 1) or pb_int(env, 2)
    return (code, (body.get(3) or [b""])[0],
            (body.get(4) or [b""])[0].decode())


def login(sock, mech, user, password):
    """A whole exchange; -> (error_code, principal)."""
    code, _ = handshake(sock, mech)
    if code:
        return code, ""
    s = Scram(mech, user, password)
    r = authenticate(sock, s.first())
    if r is None or r[0]:
        return (r[0] if r else -1), ""
    r = authenticate(sock, s.final(r[1]))
    if r is None or r[0]:
        return (r[0] if r else -1), ""
    assert s.verify(r[1]), "server signature does not verify"
    return 0, r[2]


def run_cluster_tests(start, tests, state, tmp):
    """start() the cluster (filling state["brokers"] and state["ctl"]), run
    the tests, then stop every daemon cleanly (stop_all) and remove tmp
    (unless WEIR_KEEP_TMP=1); an unclean stop fails the run."""
    try:
        start()
        run_main(tests)
    finally:
        daemons = list(state.get("brokers", {}).values())
        daemons += [state["ctl"]] if "ctl" in state else []
        problems = stop_all(daemons)
        for d in daemons:
            d.cleanup()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
        if problems:
            log("daemons did not stop cleanly: " + "; ".join(problems))
            sys.exit(1)


def stop_all(daemons):
    """SIGTERM every daemon still running (brokers first) and read its exit
    code: a clean stop is 0, so a leak or a sanitizer report (under ASan)
    or a hang fails the test. Returns the problems found."""
    problems = []
    for d in daemons:
        try:
            rc = d.stop(timeout=30)
        except (RuntimeError, AttributeError) as e:
            problems.append(f"{d.addr}: {e}")
            continue
        if rc not in (0, None, -9):
            problems.append(f"{d.addr} exited {rc}: {d.log_text()[-1500:]}")
    return problems
