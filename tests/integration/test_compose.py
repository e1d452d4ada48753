#!/usr/bin/env python3
"""The container image and the docker-compose cluster: build the image from
the binaries of this build (no registry), start deploy/docker-compose.yml
with deploy/compose-up.sh (which formats the three controllers once), and
from the host see an active controller and three live brokers with `weir
cluster` within 30 s, produce and consume through a consumer group, then a
`docker kill` of a broker fences it and its partitions keep a leader, and a
`docker kill` of the active controller moves the role to another member.
Skipped (exit 0, said on stdout) without a Docker engine, without
docker-compose, or in a sanitizer build (its binaries expect the sanitizer
runtime's environment). Every wait is bounded in time."""
import os
import shutil
import subprocess
import sys
import time

import weirtest
from weirtest import BUILD, CLI_BIN, log, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMPOSE = os.path.join(ROOT, "deploy", "docker-compose.yml")
PROJECT = f"weirit{os.getpid()}"
IMAGE = f"weir-it:{os.getpid()}"


def skip(why):
    log(f"SKIP compose test: {why}")
    sys.exit(0)


def run(*cmd, timeout=300, check=True, env=None):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\n"
                             f"{p.stdout[-2000:]!r}\n{p.stderr[-2000:]!r}")
    return p


def weir(*args, check=True, timeout=60):
    return run(CLI_BIN, "--bootstrap", "127.0.0.1:9092", *args, check=check,
               timeout=timeout)


def compose(*args, check=True, timeout=300):
    env = dict(os.environ, WEIR_IMAGE=IMAGE)
    return run("docker-compose", "-p", PROJECT, "-f", COMPOSE, *args,
               check=check, timeout=timeout, env=env)


def main():
    if shutil.which("docker") is None or shutil.which("docker-compose") is None:
        skip("docker or docker-compose not installed")
    if run("docker", "info", check=False, timeout=30).returncode != 0:
        skip("no Docker engine answers")
    ldd = run("ldd", os.path.join(BUILD, "broker", "weir-broker")).stdout
    if b"libasan" in ldd or b"libubsan" in ldd:
        skip("sanitizer build")
    env = dict(os.environ, NO_BUILD="1", BUILD_DIR=BUILD, IMAGE=IMAGE)
    log("building the image")
    run(os.path.join(ROOT, "deploy", "image", "build-image.sh"), env=env)
    try:
        t0 = time.time()
        run(os.path.join(ROOT, "deploy", "compose-up.sh"),
            env=dict(os.environ, WEIR_IMAGE=IMAGE,
                     COMPOSE_PROJECT_NAME=PROJECT))

        def three_alive():
            p = weir("cluster", check=False, timeout=20)
            out = p.stdout.decode()
            return out if p.returncode == 0 and "(3 alive" in out else None
        out = wait_until("three live brokers seen from the host", three_alive,
                         30, step=0.5)
        log(f"cluster up {time.time() - t0:.1f} s after docker-compose up:\n"
            f"{out}")
        weir("topic", "create", "dc", "--partitions", "6",
             "--replication-factor", "3")
        data = "".join(f"v{i}\n" for i in range(1000)).encode()
        p = subprocess.run([CLI_BIN, "--bootstrap", "127.0.0.1:9093",
                            "produce", "dc", "--acks", "all"], input=data,
                           capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        got = weir("consume", "dc", "--group", "dg", "--from-beginning",
                   "--timeout-ms", "3000").stdout.decode().split()
        assert sorted(got) == sorted(f"v{i}" for i in range(1000)), len(got)
        run("docker", "kill", f"{PROJECT}_broker1_1")

        def fenced():
            p = run(CLI_BIN, "--bootstrap", "127.0.0.1:9093", "cluster",
                    check=False, timeout=20)
            out = p.stdout.decode()
            ok = ("broker 1 172.28.0.11:9092 rack=- fenced" in out and
                  "leader=-1" not in out)
            return out if ok else None
        wait_until("broker 1 fenced, every partition led", fenced, 20)
        log("docker kill of broker 1: fenced, every partition has a leader")
        ctl = {"172.28.0.10:9090": 1, "172.28.0.20:9090": 2,
               "172.28.0.30:9090": 3}

        def active():
            p = run(CLI_BIN, "--bootstrap", "127.0.0.1:9093", "cluster",
                    check=False, timeout=20)
            for ln in p.stdout.decode().splitlines():
                if ln.startswith("controller:"):
                    return ctl.get(ln.split(":", 1)[1].strip())
            return None
        first = wait_until("an active controller", active, 20)
        run("docker", "kill", f"{PROJECT}_controller{first}_1")
        new = wait_until("another active controller",
                         lambda: (lambda a: a if a not in (None, first)
                                  else None)(active()), 30, step=0.5)
        log(f"docker kill of active controller {first}: {new} is active")
    finally:
        compose("down", "-v", check=False)
        run("docker", "image", "rm", IMAGE, check=False)


if __name__ == "__main__":
    weirtest.run_main([main])
