#!/usr/bin/env python3
"""ACLs on real processes: a controller and three brokers with SCRAM
logins and authorization on (super users: admin and the brokers). Rules
are added over the wire and with `weir acl`, and the matrix is checked
call by call: produce (write), fetch and list offsets (read, describe),
group membership and offset commits (group read + topic read), offset
fetch, topic create and delete (cluster or prefixed topic rights),
user and ACL administration (cluster alter / describe); deny wins over
allow; with no rule nothing is allowed. A topic the caller may not
describe gets the same TOPIC_AUTHORIZATION_FAILED whether it exists or
not, and is left out of a listing. A logged-in client that forges a
follower's fetch (replica_id >= 0) is refused and reads nothing, and
controller calls from a client are refused."""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import scram  # noqa: E402
from weirtest import (CLI_BIN, Controller, cluster_broker, connect,  # noqa
                      log, pb_int, pb_msg, pb_parse, read_frame,
                      record_batch, request, wait_until,
                      METADATA, CREATE_TOPICS, DELETE_TOPICS, PRODUCE, FETCH,
                      LIST_OFFSETS)

E = {"TOPIC": 53, "GROUP": 54, "CLUSTER": 55, "UNKNOWN_TOPIC": 8}
FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH = 30, 35, 36
REGISTER_BROKER, FETCH_METADATA = 20, 22
ALTER_USERS, CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS = 42, 44, 45, 46
RES = {"topic": 1, "group": 2, "cluster": 3}
OPS = {"read": 1, "write": 2, "create": 3, "delete": 4, "describe": 5,
       "alter": 6, "cluster-action": 7, "all": 8}
MECHS = "SCRAM-SHA-256,SCRAM-SHA-512"
PW = {u: u + "-pw" for u in ("admin", "broker", "alice", "carol", "eve",
                              "dave")}

TMP = tempfile.mkdtemp(prefix="weir-acl-")
ST = {}
_corr = [0]


def corr():
    _corr[0] += 1
    return _corr[0]


def sess(broker, user):
    s = connect(broker)
    code, principal = scram.login(s, "SCRAM-SHA-256", user, PW[user])
    assert code == 0, f"{user} cannot log in: {code}"
    return s


def call(s, field, body, payload=b""):
    c = corr()
    s.sendall(request(c, field, body, payload))
    got = read_frame(s)
    assert got is not None, "connection closed"
    env, data = got
    assert pb_int(env, 1) == c
    inner = pb_parse(env[field][0]) if field in env else None
    return env, inner, data


def binding(principal, res, name, op, deny=False, prefixed=False):
    return pb_msg((1, principal), (2, RES[res]), (3, 2 if prefixed else 1),
                  (4, name), (5, OPS[op]), (6, 2 if deny else 1))


def acl(s, *rules, remove=False):
    env, body, _ = call(s, DELETE_ACLS if remove else CREATE_ACLS,
                        pb_msg((1, list(rules))))
    code = pb_int(env, 2)
    if code:
        return code
    codes = [pb_int(pb_parse(r), 1) for r in body.get(3, [])]
    assert len(codes) == len(rules)
    return max(codes) if codes else 0


def meta(s, topics=None):
    """-> ({name: (error, {partition: leader})}, {id: port})"""
    body = pb_msg((1, topics)) if topics else pb_msg((2, 1))
    env, md, _ = call(s, METADATA, body)
    assert pb_int(env, 2) == 0, env
    ports = {pb_int(pb_parse(b), 1): pb_int(pb_parse(b), 3)
             for b in md.get(3, [])}
    out = {}
    for raw in md.get(4, []):
        ti = pb_parse(raw)
        parts = {pb_int(pb_parse(p), 1): pb_int(pb_parse(p), 3)
                 for p in ti.get(4, [])}
        out[ti[1][0].decode()] = (pb_int(ti, 2), parts)
    return out, ports


def leader_broker(topic, p=0):
    s = sess(ST["brokers"][1], "admin")
    try:
        def find():
            md, ports = meta(s, [topic])
            lid = md.get(topic, (0, {}))[1].get(p, -1)
            return lid if lid >= 0 else None
        lid = wait_until(f"leader of {topic}", find, 15)
    finally:
        s.close()
    return ST["brokers"][lid]


def create_topic(s, name, parts=1):
    t = pb_msg((1, name), (2, parts), (3, 3))
    env, body, _ = call(s, CREATE_TOPICS, pb_msg((1, [t])))
    if pb_int(env, 2):
        return pb_int(env, 2)
    return pb_int(pb_parse(body[1][0]), 2)


def produce(s, topic, vals=(b"x",)):
    batch = record_batch(list(vals))
    part = pb_msg((1, topic), (2, 0), (3, len(batch)))
    env, body, _ = call(s, PRODUCE, pb_msg((1, -1), (2, 10000), (3, [part])),
                        batch)
    if pb_int(env, 2):
        return pb_int(env, 2), ""
    r = pb_parse(body[1][0])
    return pb_int(r, 3), (r.get(4) or [b""])[0].decode()


def fetch(s, topic, replica_id=-1):
    body = pb_msg((1, 0), (2, 0), (3, 1 << 20),
                  (4, [pb_msg((1, topic), (2, 0), (3, 0), (4, 1 << 20))]),
                  (5, replica_id), (6, 1))
    env, resp, data = call(s, FETCH, body)
    if pb_int(env, 2):
        return pb_int(env, 2), data
    return pb_int(pb_parse(resp[1][0]), 3), data


def list_offsets(s, topic):
    env, body, _ = call(s, LIST_OFFSETS, pb_msg(
        (1, [pb_msg((1, topic), (2, 0), (3, -1))])))
    return pb_int(env, 2) or pb_int(pb_parse(body[1][0]), 3)


def commit(s, group, topic, offset=1):
    p = pb_msg((1, topic), (2, 0), (3, offset), (4, -1))
    body = pb_msg((1, group), (2, -1), (3, ""), (4, [p]))
    env, b, _ = call(s, OFFSET_COMMIT, body)
    if pb_int(env, 2):
        return pb_int(env, 2)
    return pb_int(b, 1) or max([pb_int(pb_parse(r), 3)
                                for r in b.get(3, [])] or [0])


def coordinator(s, group):
    env, b, _ = call(s, FIND_COORDINATOR, pb_msg((1, group)))
    if pb_int(env, 2):
        return pb_int(env, 2), None
    return pb_int(b, 1), pb_int(b, 3)


def start():
    users = os.path.join(TMP, "users")
    with open(users, "w") as f:
        f.writelines(f"{u} {p}\n" for u, p in PW.items())
    os.chmod(users, 0o600)
    sec = ["--sasl-mechanisms", MECHS, "--authorizer", "true",
           "--super-users", "User:admin;User:broker"]
    ctl = Controller(data_dir=os.path.join(TMP, "controller"),
                     args=sec + ["--bootstrap-users-file", users])
    ctl.start()
    brokers = {}
    for i in (1, 2, 3):
        b = cluster_broker(ctl, i, TMP, args=sec + ["--sasl-username",
                                                    "broker"])
        b.env = {"WEIR_SASL_PASSWORD": PW["broker"]}
        b.start()
        brokers[i] = b
    ST.update(ctl=ctl, brokers=brokers)
    s = sess(brokers[1], "admin")

    def three():
        _, ports = meta(s)
        return len(ports) == 3
    wait_until("three brokers", three, 30, step=0.3)
    for t in ("orders", "secret", "orders-audit"):
        wait_until(f"create {t}", lambda: create_topic(s, t) in (0, 10), 20)
    # alice writes orders*, except orders-audit; carol reads orders in
    # group g1; dave may read orders but has no group; eve has nothing
    assert acl(s,
               binding("User:alice", "topic", "orders", "write",
                       prefixed=True),
               binding("User:alice", "topic", "orders-audit", "write",
                       deny=True),
               binding("User:carol", "topic", "orders", "read"),
               binding("User:carol", "group", "g1", "read"),
               binding("User:dave", "topic", "orders", "read")) == 0
    s.close()
    time.sleep(0.5)  # brokers apply the new records from the controller


def test_produce_matrix():
    lb = leader_broker("orders")
    a = sess(lb, "alice")
    wait_until("alice may write orders",
               lambda: produce(a, "orders", [b"a1", b"a2"])[0] == 0, 60)
    code, msg = produce(a, "orders-audit")
    assert code == E["TOPIC"], (code, "deny must win over the prefix allow")
    assert produce(a, "secret")[0] == E["TOPIC"]
    code_ghost, _ = produce(a, "no-such-topic")
    assert code_ghost == E["TOPIC"], code_ghost  # same as an existing one
    e = sess(lb, "eve")
    assert produce(e, "orders")[0] == E["TOPIC"]
    c = sess(lb, "carol")
    assert produce(c, "orders")[0] == E["TOPIC"], "read does not give write"
    for x in (a, e, c):
        x.close()
    log("produce: allow, prefix allow, deny wins, no rule, unknown topic")


def test_consume_and_describe_matrix():
    lb = leader_broker("orders")
    c = sess(lb, "carol")
    code, data = fetch(c, "orders")
    assert code == 0 and b"a1" in data, (code, data[:80])
    assert list_offsets(c, "orders") == 0  # read implies describe
    assert fetch(c, "secret")[0] == E["TOPIC"]
    e = sess(lb, "eve")
    code, data = fetch(e, "orders")
    assert code == E["TOPIC"] and b"a1" not in data
    assert list_offsets(e, "orders") == E["TOPIC"]
    # metadata: eve sees no topic in a listing; named ones, existing or
    # not, answer the same way
    md, _ = meta(e)
    assert md == {}, md
    md, _ = meta(e, ["secret", "no-such-topic"])
    assert md["secret"][0] == md["no-such-topic"][0] == E["TOPIC"], md
    assert md["secret"][1] == {}, "partitions of a hidden topic leaked"
    md, _ = meta(c)
    assert set(md) == {"orders"}, md
    md, _ = meta(c, ["orders", "no-such-topic"])
    assert md["orders"][0] == 0
    assert md["no-such-topic"][0] == E["TOPIC"]
    c.close()
    e.close()
    log("fetch, list offsets and metadata follow read/describe rights")


def test_group_matrix():
    b = ST["brokers"][1]
    c = sess(b, "carol")
    code, node = wait_until("a coordinator for g1",
                            lambda: (lambda r: r if r[0] == 0 else None)(
                                coordinator(c, "g1")), 30, step=0.3)
    coord = sess(ST["brokers"][node], "carol")
    assert commit(coord, "g1", "orders", 2) == 0
    assert commit(coord, "g2", "orders") == E["GROUP"]
    assert commit(coord, "g1", "secret") == E["TOPIC"]
    assert coordinator(c, "g2")[0] == E["GROUP"]
    d = sess(ST["brokers"][node], "dave")
    assert commit(d, "g1", "orders") == E["GROUP"], "topic read alone"
    env, _, _ = call(d, OFFSET_FETCH, pb_msg((1, "g1")))
    assert pb_int(env, 2) == E["GROUP"]
    for x in (c, coord, d):
        x.close()
    log("group: commit needs group read and topic read")


def test_admin_matrix():
    b = ST["brokers"][2]
    a = sess(b, "alice")
    assert create_topic(a, "alice-t") == E["TOPIC"]
    env, _, _ = call(a, DELETE_TOPICS, pb_msg((1, ["orders"])))
    assert pb_int(env, 2) == E["TOPIC"]
    assert acl(a, binding("User:alice", "cluster", "", "all")) == \
        E["CLUSTER"], "a client granted itself rights"
    env, _, _ = call(a, ALTER_USERS, pb_msg())
    assert pb_int(env, 2) == E["CLUSTER"]
    env, _, _ = call(a, DESCRIBE_ACLS, pb_msg())
    assert pb_int(env, 2) == E["CLUSTER"]
    adm = sess(b, "admin")
    assert acl(adm, binding("User:alice", "topic", "alice-", "create",
                            prefixed=True)) == 0
    wait_until("alice may create alice-*",
               lambda: create_topic(a, "alice-t") in (0, 10), 60)
    assert create_topic(a, "bob-t") == E["TOPIC"]
    # removing the rule takes the right away again
    assert acl(adm, binding("User:alice", "topic", "alice-", "create",
                            prefixed=True), remove=True) == 0
    wait_until("alice may no longer create alice-*",
               lambda: create_topic(a, "alice-u") == E["TOPIC"], 60)
    a.close()
    adm.close()
    log("admin: topic create/delete, users and ACLs need their rights")


def test_forged_follower_fetch():
    lb = leader_broker("orders")
    for user in ("carol", "alice", "eve"):
        s = sess(lb, user)
        code, data = fetch(s, "orders", replica_id=2)
        assert code == E["CLUSTER"], (user, code)
        assert b"a1" not in data
        s.close()
    ctl = ST["ctl"]
    s = connect(ctl)
    assert scram.login(s, "SCRAM-SHA-256", "carol", PW["carol"])[0] == 0
    env, _, _ = call(s, REGISTER_BROKER, pb_msg((1, 9), (2, "127.0.0.1"),
                                                  (3, 1)))
    assert pb_int(env, 2) == E["CLUSTER"], env
    env, _, _ = call(s, FETCH_METADATA, pb_msg((1, 1), (2, 1), (3, 0)))
    assert pb_int(env, 2) == E["CLUSTER"], env
    s.close()
    log("forged follower fetch and client controller calls refused")


def weir(user, *args, inp=None, check=True):
    env = dict(os.environ, WEIR_USER=user, WEIR_PASSWORD=PW[user])
    p = subprocess.run([CLI_BIN, "--bootstrap", ST["brokers"][3].addr]
                       + list(args), input=inp, capture_output=True,
                       timeout=120, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"weir {' '.join(args)}: {p.returncode} "
                             f"{p.stderr.decode()[-1500:]}")
    return p


def test_cli_acl_and_consumer_group():
    weir("admin", "acl", "add", "--principal", "User:eve", "--resource",
         "topic", "--name", "orders", "--operation", "read")
    weir("admin", "acl", "add", "--principal", "User:eve", "--resource",
         "group", "--name", "eve-", "--pattern", "prefixed", "--operation",
         "read")
    listing = weir("admin", "acl", "list", "--principal",
                   "User:eve").stdout.decode()
    assert "orders" in listing and "eve-" in listing, listing
    assert "prefixed" in listing, listing
    denied = weir("eve", "acl", "list", check=False)
    assert denied.returncode != 0 and b"not authorized" in \
        denied.stderr, denied.stderr
    # brokers apply the new rules from the controller: wait for them
    def eve_reads():
        p = weir("eve", "consume", "orders", "--group", "eve-1",
                 "--from-beginning", "--max-messages", "2",
                 "--timeout-ms", "15000", check=False)
        return p.stdout.decode() if p.returncode == 0 else None
    out = wait_until("eve may read orders", eve_reads, 60, step=0.5)
    assert "a1" in out and "a2" in out, out
    weir("admin", "acl", "remove", "--principal", "User:eve", "--resource",
         "topic", "--name", "orders", "--operation", "read")
    def eve_refused():
        p = weir("eve", "consume", "orders", "--from-beginning",
                 "--max-messages", "1", "--timeout-ms", "3000", check=False)
        return p if p.returncode != 0 else None
    p = wait_until("eve refused on orders", eve_refused, 60, step=0.5)
    assert b"not authorized" in p.stderr, p.stderr
    log("weir acl add/list/remove; a group consumer under prefixed rules")


def main():
    scram.run_cluster_tests(start, [test_produce_matrix, test_consume_and_describe_matrix,
         test_group_matrix, test_admin_matrix, test_forged_follower_fetch,
         test_cli_acl_and_consumer_group], ST, TMP)


if __name__ == "__main__":
    main()
