"""weir-broker configuration: every option is a flag, a config-file key and
a WEIR_<OPTION> variable, with the documented precedence."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from weirtest import Broker, BROKER_BIN, weir, run_main, free_port


def run(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([BROKER_BIN] + list(args), capture_output=True,
                          env=e, timeout=30)


def test_help_lists_every_option_with_env_and_default():
    p = run("--help")
    assert p.returncode == 0
    out = p.stdout.decode()
    flags = re.findall(r"^  --([a-z0-9-]+)", out, re.M)
    for must in ["config", "listen", "data-dir", "flush-policy",
                 "segment-bytes", "retention-ms", "retention-bytes",
                 "max-frame-bytes"]:
        assert must in flags, must
    for f in flags:
        if f == "config":
            continue
        env = "WEIR_" + f.upper().replace("-", "_")
        assert env in out, env
    assert "127.0.0.1:9092" in out and "./data" in out


def test_bad_options_are_refused_clearly():
    p = run("--no-such-option", "1")
    assert p.returncode == 2 and b"no-such-option" in p.stderr, p
    p = run("--segment-bytes", "lots")
    assert p.returncode == 2 and b"segment-bytes" in p.stderr, p
    p = run("--flush-policy", "sometimes", "--data-dir",
            tempfile.mkdtemp(prefix="weir-it-"))
    assert p.returncode != 0 and b"flush-policy" in p.stderr, p


def test_config_file_env_and_flag_precedence():
    tmp = tempfile.mkdtemp(prefix="weir-it-")
    port_file, port_env, port_flag = free_port(), free_port(), free_port()
    cfg = os.path.join(tmp, "broker.ini")
    with open(cfg, "w") as f:
        f.write(f"[broker]\nlisten = 127.0.0.1:{port_file}\n"
                f"data-dir = {tmp}/data\nflush_policy = interval\n")
    # file alone
    b = Broker(data_dir=f"{tmp}/data", port=port_file)
    b.args = []
    proc = subprocess.Popen([BROKER_BIN, "--config", cfg],
                            stderr=subprocess.PIPE)
    try:
        line = b""
        for _ in range(50):
            line = proc.stderr.readline()
            if b"event=started" in line:
                break
        assert f"port={port_file}".encode() in line, line
        assert b"flush_policy=interval" in line, line
    finally:
        proc.terminate()
        proc.wait(10)
    # environment beats the file, a flag beats the environment
    env = dict(os.environ, WEIR_LISTEN=f"127.0.0.1:{port_env}",
               WEIR_FLUSH_POLICY="never")
    proc = subprocess.Popen([BROKER_BIN, "--config", cfg, "--flush-policy",
                             "ack"], stderr=subprocess.PIPE, env=env)
    try:
        for _ in range(50):
            line = proc.stderr.readline()
            if b"event=started" in line:
                break
        assert f"port={port_env}".encode() in line, line
        assert b"flush_policy=ack" in line, line
    finally:
        proc.terminate()
        proc.wait(10)
    del port_flag


def test_second_broker_on_same_data_dir_refused():
    with Broker() as b:
        p = run("--data-dir", b.data_dir, "--listen",
                f"127.0.0.1:{free_port()}")
        assert p.returncode != 0 and b"in use" in p.stderr, p
        weir(b, "topic", "list")


def main():
    run_main([test_help_lists_every_option_with_env_and_default,
              test_bad_options_are_refused_clearly,
              test_config_file_env_and_flag_precedence,
              test_second_broker_on_same_data_dir_refused])


if __name__ == "__main__":
    main()
