#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Result collection and the markdown report for tests/bench/bench.sh.

  bench_report.py add --raw RAW --kind K --id ID --label L --size S --rep N
                      --file OUT [--rc RC] [--cpu SEC] [--wall SEC]
                      [--expect N] [--no-lat]
      parse one tool's output and append one JSON line to RAW.
      K: weir (weir bench --json), redis (redis-benchmark text output),
         nats (nats_bench key=value line), iperf (iperf3 -J), fail.
  bench_report.py table --raw RAW --meta META
      print the markdown report: every case (median over repetitions),
      Weir divided by the peers measured in the same run, memory, notes.

Standard library only.
"""
import argparse
import json
import re
import statistics
import sys

METRICS = ("rps", "mbps", "p50", "p99", "p999", "max", "cpu_pct",
           "client_cpu_pct")


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def parse_weir(text):
    line = None
    for ln in text.splitlines():
        if ln.startswith('{"bench"'):
            line = ln
    if line is None:
        return None, "no summary line"
    d = json.loads(line)
    r = {"records": d.get("records"), "rps": d.get("records_per_sec"),
         "mbps": d.get("mb_per_sec"), "p50": d.get("p50_ms"),
         "p99": d.get("p99_ms"), "p999": d.get("p999_ms"),
         "max": d.get("max_ms"), "lat_kind": d.get("latency"),
         "errors": d.get("errors", 0)}
    return r, ""


def parse_redis(text, size):
    # redis-benchmark prints progress with \r; keep the final report only
    lines = re.split(r"[\r\n]+", text)
    rps = None
    p50 = p99 = mx = p999 = None
    for i, ln in enumerate(lines):
        m = re.search(r"throughput summary:\s*([\d.]+)\s*requests per second",
                      ln)
        if m:
            rps = float(m.group(1))
        if "latency summary" in ln and i + 2 < len(lines):
            hdr = lines[i + 1].split()
            val = lines[i + 2].split()
            if len(hdr) == len(val):
                row = dict(zip(hdr, val))
                p50 = _num(row.get("p50"))
                p99 = _num(row.get("p99"))
                mx = _num(row.get("max"))
    # p99.9: first percentile line at or above 99.9 % in the
    # "Latency by percentile distribution" section (an upper bound,
    # the next reported percentile is 99.902 %)
    in_pct = False
    for ln in lines:
        if ln.startswith("Latency by percentile distribution"):
            in_pct = True
            continue
        if in_pct:
            m = re.match(r"\s*([\d.]+)% <= ([\d.]+) milliseconds", ln)
            if not m:
                if ln.strip() == "":
                    continue
                break
            if float(m.group(1)) >= 99.9:
                p999 = float(m.group(2))
                break
    if rps is None:
        return None, "no throughput summary"
    return {"rps": rps, "mbps": rps * size / 1e6, "p50": p50, "p99": p99,
            "p999": p999, "max": mx, "lat_kind": "reply (pipelined)"}, ""


def parse_nats(text):
    line = None
    for ln in text.splitlines():
        if ln.startswith("mode="):
            line = ln
    if line is None:
        return None, "no result line"
    kv = dict(t.split("=", 1) for t in line.split() if "=" in t)
    r = {"records": _num(kv.get("acked", kv.get("msgs"))),
         "rps": _num(kv.get("msgs_per_s")), "mbps": _num(kv.get("MB_per_s")),
         "errors": _num(kv.get("errs")) or 0}
    if kv.get("mode") == "pub":
        for k, src in (("p50", "ack_p50_us"), ("p99", "ack_p99_us"),
                       ("p999", "ack_p999_us"), ("max", "ack_max_us")):
            v = _num(kv.get(src))
            r[k] = v / 1e3 if v is not None else None
        r["lat_kind"] = "ack"
    return r, ""


def parse_iperf(text):
    d = json.loads(text)
    bps = d["end"]["sum_received"]["bits_per_second"]
    return {"mbps": bps / 8 / 1e6}, ""


def cmd_add(a):
    try:
        with open(a.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    rec = {"id": a.id, "label": a.label, "size": a.size, "rep": a.rep,
           "group": a.id.split(".")[0], "ok": True, "note": ""}
    notes = []
    r = None
    try:
        if a.kind == "weir":
            r, why = parse_weir(text)
        elif a.kind == "redis":
            r, why = parse_redis(text, a.size)
        elif a.kind == "nats":
            r, why = parse_nats(text)
        elif a.kind == "iperf":
            r, why = parse_iperf(text)
        else:
            r, why = None, a.note or "failed"
    except (ValueError, KeyError, IndexError) as e:
        r, why = None, f"unparsable output ({e.__class__.__name__})"
    if r is None:
        rec["ok"] = False
        notes.append(why)
    else:
        rec.update(r)
    if a.rc not in (None, 0):
        rec["ok"] = False
        notes.append("timed out" if a.rc in (124, 137) else f"exit {a.rc}")
    if a.expect and r is not None and r.get("records") is not None \
            and r["records"] < a.expect:
        rec["ok"] = False
        notes.append(f"only {int(r['records'])} of {a.expect} records")
    if r is not None and r.get("errors"):
        rec["ok"] = False
        notes.append(f"{int(r['errors'])} errors")
    if a.no_lat:
        for k in ("p50", "p99", "p999", "max"):
            rec[k] = None
    if a.cpu is not None and a.wall:
        rec["cpu_pct"] = 100.0 * a.cpu / a.wall
    if a.ccpu is not None and a.wall:
        rec["client_cpu_pct"] = 100.0 * a.ccpu / a.wall
    if a.note and a.kind != "fail":
        notes.append(a.note)
    rec["note"] = "; ".join(n for n in notes if n)
    with open(a.raw, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    if not rec["ok"]:
        print(f"bench_report: {a.id}: {rec['note']}", file=sys.stderr)


def load(raw):
    order, rows = [], {}
    with open(raw, encoding="utf-8") as f:
        for ln in f:
            ln = ln.strip()
            if not ln:
                continue
            r = json.loads(ln)
            if r["id"] not in rows:
                order.append(r["id"])
                rows[r["id"]] = []
            rows[r["id"]].append(r)
    out = {}
    for i in order:
        rs = rows[i]
        good = [r for r in rs if r.get("ok")] or rs
        m = {"id": i, "label": rs[0]["label"], "size": rs[0]["size"],
             "by_rep": {r["rep"]: r for r in good},
             "group": rs[0]["group"], "n": len(good),
             "ok": all(r.get("ok") for r in rs),
             "note": "; ".join(sorted({r["note"] for r in rs if r["note"]}))}
        for k in METRICS:
            vs = [r[k] for r in good if r.get(k) is not None]
            m[k] = statistics.median(vs) if vs else None
            if k == "rps" and len(vs) > 1 and m[k]:
                m["spread"] = (max(vs) - min(vs)) / m[k] * 100
        out[i] = m
    return order, out


def f_rps(v):
    return "—" if v is None else f"{v:,.0f}"


def f_mb(v):
    return "—" if v is None else (f"{v:,.0f}" if v >= 1000 else f"{v:.1f}")


def f_ms(v):
    if v is None:
        return "—"
    if v < 10:
        return f"{v:.2f}"
    if v < 100:
        return f"{v:.1f}"
    return f"{v:.0f}"


def f_x(x):
    if x is None:
        return "—"
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×"


def rep_ratio(x, y, key="rps"):
    """Median over repetitions of x/y, each pair from the same repetition
    (falls back to the ratio of the medians)."""
    if x is None or y is None:
        return None
    rs = []
    for rep, rx in x["by_rep"].items():
        ry = y["by_rep"].get(rep)
        if ry and rx.get(key) and ry.get(key):
            rs.append(rx[key] / ry[key])
    if rs:
        return statistics.median(rs)
    if x.get(key) and y.get(key):
        return x[key] / y[key]
    return None


def cmd_table(a):
    meta = []
    try:
        with open(a.meta, encoding="utf-8") as f:
            for ln in f:
                ln = ln.rstrip("\n")
                if "\t" in ln:
                    meta.append(tuple(ln.split("\t", 1)))
    except OSError:
        pass
    md = dict(meta)
    order, rows = load(a.raw)
    reps = max((r["n"] for r in rows.values()), default=0)
    p = print
    p(f"## Weir benchmark, {md.get('date', '?')}")
    p()
    for k in ("machine", "versions", "weir build", "settings"):
        if k in md:
            p(f"- {k}: {md[k]}")
    p(f"- repetitions: {reps} (numbers are medians over them)" if reps > 1
      else "- repetitions: 1")
    p()
    p("| case | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | max ms "
      "| server CPU % | client CPU % | note |")
    p("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for i in order:
        r = rows[i]
        note = r["note"]
        if r.get("spread") is not None:
            note = (note + "; " if note else "") + \
                f"records/s spread {r['spread']:.0f}%"
        if not r["ok"]:
            note = "**FAILED** " + note
        cpu = "—" if r["cpu_pct"] is None else f"{r['cpu_pct']:.0f}"
        if r["client_cpu_pct"] is not None:
            cpu += f" | {r['client_cpu_pct']:.0f}"
        else:
            cpu += " | —"
        p(f"| {r['label']} | {f_rps(r['rps'])} | {f_mb(r['mbps'])} "
          f"| {f_ms(r['p50'])} | {f_ms(r['p99'])} | {f_ms(r['p999'])} "
          f"| {f_ms(r['max'])} | {cpu} | {note} |")
    p()
    # ---- Weir divided by the peers of the same run ----
    loop = rows.get("net.loopback")
    p("Weir ÷ peer, records/s (MB/s for the loopback column); each ratio "
      "pairs cases of the same repetition, median over repetitions:")
    p()
    p("| Weir case | ÷ Redis XADD, no persistence | ÷ Redis XADD, "
      "appendfsync always | ÷ NATS JetStream R1 | MB/s ÷ loopback TCP |")
    p("|---|--:|--:|--:|--:|")
    for i in order:
        r = rows[i]
        if r["group"] != "weir" or ".lat." in i:
            continue
        s = r["size"]
        cons = ".consume." in i
        rm = rows.get(f"redis.mem.{s}")
        ra = rows.get(f"redis.always.{s}")
        nt = rows.get(f"nats.{'sub' if cons else 'pub'}.{s}")
        p(f"| {r['label']} "
          f"| {'—' if cons else f_x(rep_ratio(r, rm))} "
          f"| {'—' if cons else f_x(rep_ratio(r, ra))} "
          f"| {f_x(rep_ratio(r, nt))} "
          f"| {f_x(rep_ratio(r, loop, 'mbps'))} |")
    p()
    # ---- ratios inside Weir ----
    def ratio_line(txt, x, y):
        if x in rows and y in rows:
            p(f"- {txt}: {f_x(rep_ratio(rows[x], rows[y]))}")
    p("Inside Weir (records/s):")
    p()
    ratio_line("acks=all ÷ acks=1 (100 B, 6 partitions)",
               "weir.produce.100.6p.all", "weir.produce.100.6p.1")
    ratio_line("flush-policy=never ÷ ack (100 B, 6 partitions, acks=1)",
               "weir.never.produce.100.6p.1", "weir.produce.100.6p.1")
    ratio_line("6 ÷ 1 partitions (100 B, acks=1)",
               "weir.produce.100.6p.1", "weir.produce.100.1p.1")
    ratio_line("6 ÷ 1 partitions (1 KiB, acks=1)",
               "weir.produce.1024.6p.1", "weir.produce.1024.1p.1")
    p()
    mem = [(k, v) for k, v in meta if k.startswith("rss")]
    if mem:
        p("Broker memory:")
        p()
        for k, v in mem:
            p(f"- {k[4:]}: {v}")
        p()
    notes = [v for k, v in meta if k == "note"]
    if notes:
        p("Notes:")
        p()
        for n in notes:
            p(f"- {n}")


def main():
    ap = argparse.ArgumentParser()
    sp = ap.add_subparsers(dest="cmd", required=True)
    ad = sp.add_parser("add")
    ad.add_argument("--raw", required=True)
    ad.add_argument("--kind", required=True,
                    choices=("weir", "redis", "nats", "iperf", "fail"))
    ad.add_argument("--id", required=True)
    ad.add_argument("--label", required=True)
    ad.add_argument("--size", type=int, default=0)
    ad.add_argument("--rep", type=int, default=1)
    ad.add_argument("--file", default="/dev/null")
    ad.add_argument("--rc", type=int)
    ad.add_argument("--cpu", type=float)
    ad.add_argument("--ccpu", type=float)
    ad.add_argument("--wall", type=float)
    ad.add_argument("--expect", type=int, default=0)
    ad.add_argument("--no-lat", action="store_true")
    ad.add_argument("--note", default="")
    tb = sp.add_parser("table")
    tb.add_argument("--raw", required=True)
    tb.add_argument("--meta", required=True)
    a = ap.parse_args()
    if a.cmd == "add":
        cmd_add(a)
    else:
        cmd_table(a)


if __name__ == "__main__":
    main()
