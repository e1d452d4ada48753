"""weir-controller quorum options (--id, --voters, election-timeout-ms,
raft-heartbeat-interval-ms): bad combinations are configuration errors
(exit 2, a message naming the option or the bad element) found before the
data dir is touched; without --voters the controller starts as before and
answers a RaftMessage with UNSUPPORTED_API."""
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from weirtest import (CONTROLLER_BIN, Controller, connect, frame, pb_int,
                      pb_msg, read_frame, run_main, wait_until)

RAFT = 50  # Request body: RaftMessage (proto/weir.proto)
UNSUPPORTED_API = 7
VOTERS = "1@127.0.0.1:19301,2@127.0.0.1:19302,3@127.0.0.1:19303"


def run(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("WEIR_")}
    e.update(env or {})
    # a data dir that does not exist: the options are refused before it
    # would be looked at
    missing = os.path.join(tempfile.mkdtemp(prefix="weir-it-"), "absent")
    return subprocess.run([CONTROLLER_BIN, "--data-dir", missing]
                          + list(args), capture_output=True, env=e,
                          timeout=30)


def refused(p, *needles):
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, (p.returncode, err)
    for n in needles:
        assert n in err, (n, err)


def test_help_lists_the_quorum_options():
    out = subprocess.run([CONTROLLER_BIN, "--help"], capture_output=True,
                         timeout=30).stdout.decode()
    for opt, env, default in (
            ("--id", "WEIR_ID", "default: 0"),
            ("--voters", "WEIR_VOTERS", None),
            ("--election-timeout-ms", "WEIR_ELECTION_TIMEOUT_MS",
             "default: 1000"),
            ("--raft-heartbeat-interval-ms",
             "WEIR_RAFT_HEARTBEAT_INTERVAL_MS", "default: 100")):
        assert opt in out and env in out, (opt, out)
        if default:
            i = out.index(opt + " ")
            assert default in out[i:i + 400], (opt, default)


def test_voters_without_id_is_refused():
    refused(run("--voters", VOTERS), "voters is set but id is not")
    refused(run(env={"WEIR_VOTERS": VOTERS}), "voters is set but id is not")


def test_id_not_among_voters_is_refused():
    refused(run("--id", "4", "--voters", VOTERS),
            "id 4 is not one of the voters")
    refused(run(env={"WEIR_ID": "9", "WEIR_VOTERS": VOTERS}),
            "id 9 is not one of the voters")


def test_bad_voters_name_the_element():
    refused(run("--id", "1", "--voters", "1@127.0.0.1:1,2@127.0.0.1:0"),
            "element 2 '2@127.0.0.1:0'", "port")
    refused(run("--id", "1", "--voters", "1@h:1,1@g:2"),
            "element 2", "id given twice")
    refused(run("--id", "1", "--voters", "1@h:1,2@h:1"),
            "address given twice")
    refused(run("--id", "1", "--voters", "1@::1:9"), "brackets")
    refused(run("--id", "1", "--voters",
                ",".join(f"{i}@h:{i}" for i in range(1, 9))),
            "more than 7")
    refused(run("--id", "x", "--voters", VOTERS), "id")
    refused(run("--id", "2147483648", "--voters", VOTERS), "id")


def test_timeouts_are_validated():
    refused(run("--raft-heartbeat-interval-ms", "600"),
            "raft-heartbeat-interval-ms (600) must be at most half of "
            "election-timeout-ms (1000)")
    refused(run("--election-timeout-ms", "150",
                "--raft-heartbeat-interval-ms", "100"),
            "at most half")
    refused(run("--election-timeout-ms", "0"), "election-timeout-ms")
    refused(run("--raft-heartbeat-interval-ms", "0"),
            "raft-heartbeat-interval-ms")


def raft_request():
    body = pb_msg((1, "some-cluster"), (2, 2), (3, 1), (4, 1), (5, 3))
    return frame(pb_msg((1, 77), (2, "it"), (RAFT, body)))


def test_without_voters_works_as_before_and_refuses_raft():
    # WEIR_ID alone (the broker's variable too) changes nothing
    with Controller(env={"WEIR_ID": "3"}) as c:
        s = connect(c)
        try:
            s.sendall(raft_request())
            resp, _ = read_frame(s)
        finally:
            s.close()
        assert pb_int(resp, 1) == 77, resp
        assert pb_int(resp, 2) == UNSUPPORTED_API, resp
        assert b"no --voters" in resp[3][0], resp
        assert "quorum_not_running" not in c.log_text()


def test_valid_quorum_options_start():
    # a member runs the quorum: a raft message of another cluster is
    # refused (one-way: no answer), naming the peer
    with Controller(args=["--id", "2", "--voters", VOTERS,
                          "--election-timeout-ms", "500",
                          "--raft-heartbeat-interval-ms", "50"]) as c:
        assert "event=quorum_start kind=new id=2 voters=3" in c.log_text()
        s = connect(c)
        try:
            s.sendall(raft_request())
            wait_until("the message refused",
                       lambda: "event=raft_refused" in c.log_text(), 30)
        finally:
            s.close()
        assert "some-cluster" in c.log_text()


if __name__ == "__main__":
    run_main([test_help_lists_the_quorum_options,
              test_voters_without_id_is_refused,
              test_id_not_among_voters_is_refused,
              test_bad_voters_name_the_element,
              test_timeouts_are_validated,
              test_without_voters_works_as_before_and_refuses_raft,
              test_valid_quorum_options_start])
