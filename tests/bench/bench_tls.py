#!/usr/bin/env python3
"""Plain text against TLS, in the same run: two standalone brokers on
loopback, one with a TLS listener; the same produce (acks=1) and the same
fetch of the whole log from each, interleaved, several times; medians and
the TLS/plain ratio. Over TLS a fetch maps the segment and encrypts in
user space (no kernel TLS yet); over plain text it is sendfile.

    tests/bench/bench_tls.py [--records N] [--size B] [--reps R] [--json F]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "security"))
import certs  # noqa: E402
from weirtest import CLI_BIN, Broker, log  # noqa: E402


def cpu_s(b):
    """User + system CPU seconds the broker process has used."""
    with open(f"/proc/{b.proc.pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")


def bench(b, tls, *args):
    cmd = [CLI_BIN, "--bootstrap", b.addr] + tls + ["bench", *args, "--json"]
    p = subprocess.run(cmd, capture_output=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode()[-2000:])
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="weir-bench-tls-")
    c = certs.make(os.path.join(tmp, "certs"))
    tls_srv = ["--tls", "--tls-cert", c["broker"], "--tls-key",
               c["broker.key"]]
    tls_cli = ["--tls", "--ca", c["ca"]]
    runs = {"plain": {"produce": [], "fetch": [], "fetch_cpu_s_per_gb": []},
            "tls": {"produce": [], "fetch": [], "fetch_cpu_s_per_gb": []}}
    try:
        with Broker(args=["--segment-bytes", "1073741824"]) as plain, \
                Broker(args=["--segment-bytes", "1073741824"]
                       + tls_srv) as tls:
            sides = {"plain": (plain, []), "tls": (tls, tls_cli)}
            for rep in range(a.reps):
                for name, (b, opt) in sides.items():
                    topic = f"b{rep}"
                    subprocess.run([CLI_BIN, "--bootstrap", b.addr] + opt
                                   + ["topic", "create", topic,
                                      "--partitions", "1"], check=True,
                                   capture_output=True, timeout=60)
                    p = bench(b, opt, "produce", "--topic", topic,
                              "--records", str(a.records), "--record-size",
                              str(a.size), "--acks", "1")
                    c0 = cpu_s(b)
                    f = bench(b, opt, "consume", "--topic", topic,
                              "--records", str(a.records))
                    gb = a.records * a.size / 1e9
                    cpu = (cpu_s(b) - c0) / gb
                    runs[name]["produce"].append(p["mb_per_sec"])
                    runs[name]["fetch"].append(f["mb_per_sec"])
                    runs[name]["fetch_cpu_s_per_gb"].append(cpu)
                    log(f"rep {rep + 1} {name}: produce {p['mb_per_sec']} "
                        f"MB/s, fetch {f['mb_per_sec']} MB/s, broker CPU "
                        f"{cpu:.2f} s per GB fetched")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {n: {k: statistics.median(v) for k, v in r.items()}
           for n, r in runs.items()}
    print(f"\n{a.records} records of {a.size} B, {a.reps} repetitions, "
          f"medians:\n")
    print("| path | produce acks=1 (MB/s) | fetch whole log (MB/s) | broker "
          "CPU per GB fetched (s) |")
    print("|---|---|---|---|")
    for n in ("plain", "tls"):
        print(f"| {n} | {med[n]['produce']:.1f} | {med[n]['fetch']:.1f} | "
              f"{med[n]['fetch_cpu_s_per_gb']:.2f} |")
    r = {k: med["tls"][k] / med["plain"][k] if med["plain"][k] else 0
         for k in med["tls"]}
    print(f"| TLS / plain | {r['produce']:.2f} | {r['fetch']:.2f} | "
          f"{r['fetch_cpu_s_per_gb']:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"records": a.records, "size": a.size, "runs": runs,
                       "medians": med}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
