#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Result collection and the markdown report for
tests/bench/bench_replicated.sh.

  bench_replicated_report.py add --raw RAW --kind K --id ID --label L
                      --size S --rep N [--file OUT] [--rc RC] [--cpu SEC]
                      [--ccpu SEC] [--wall SEC] [--expect N] [--note TEXT]
      parse one client run and append one JSON line to RAW.
      K: weir (weir bench produce --json), nats (nats_bench pub line),
         fail (no output; --note says why).
  bench_replicated_report.py table --raw RAW --meta META
      print the markdown report: medians per case, the records/s of every
      repetition, and the ratios Weir RF3 acks=all / NATS R3 and
      Weir RF3 acks=all / Weir RF1 acks=1, each paired within a repetition.

Case ids: weir.rf3.all.SIZE, weir.rf1.1.SIZE, weir.rf3.1.SIZE (optional),
nats.r3.SIZE, nats.r1.SIZE.
Standard library only.
"""
import argparse
import json
import statistics
import sys

# the number formats of the single-broker report (same folder)
from bench_report import f_mb, f_ms, f_rps, f_x

METRICS = ("rps", "mbps", "p50", "p99", "p999", "max", "cpu_pct",
           "client_cpu_pct", "top_share")


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
    return {"records": d.get("records"), "rps": d.get("records_per_sec"),
            "mbps": d.get("mb_per_sec"), "p50": d.get("p50_ms"),
            "p99": d.get("p99_ms"), "p999": d.get("p999_ms"),
            "max": d.get("max_ms"), "errors": d.get("errors", 0)}, ""


def parse_nats(text):
    line = None
    for ln in text.splitlines():
        if ln.startswith("mode=pub"):
            line = ln
    if line is None:
        return None, "no result line"
    kv = dict(t.split("=", 1) for t in line.split() if "=" in t)
    r = {"records": _num(kv.get("acked")), "rps": _num(kv.get("msgs_per_s")),
         "mbps": _num(kv.get("MB_per_s")),
         "errors": _num(kv.get("errs")) or 0}
    for k, src in (("p50", "ack_p50_us"), ("p99", "ack_p99_us"),
                   ("p999", "ack_p999_us"), ("max", "ack_max_us")):
        v = _num(kv.get(src))
        r[k] = v / 1e3 if v is not None else None
    return r, ""


def cmd_add(a):
    try:
        with open(a.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    rec = {"id": a.id, "label": a.label, "size": a.size, "rep": a.rep,
           "ok": True}
    notes = []
    try:
        if a.kind == "weir":
            r, why = parse_weir(text)
        elif a.kind == "nats":
            r, why = parse_nats(text)
        else:
            r, why = None, "failed"
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
    if a.cpu is not None and a.wall:
        rec["cpu_pct"] = 100.0 * a.cpu / a.wall
    if a.ccpu is not None and a.wall:
        rec["client_cpu_pct"] = 100.0 * a.ccpu / a.wall
    if a.top_share:
        rec["top_share"] = float(a.top_share)
    if a.note:
        notes.append(a.note)
    rec["note"] = "; ".join(n for n in notes if n)
    with open(a.raw, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    if not rec["ok"] or rec["note"]:
        print(f"bench_replicated_report: {a.id} rep {a.rep}: {rec['note']}",
              file=sys.stderr)


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
        good = [r for r in rs if r.get("ok")]
        m = {"id": i, "label": rs[0]["label"], "size": rs[0]["size"],
             "all": {r["rep"]: r for r in rs},
             "by_rep": {r["rep"]: r for r in good}, "n": len(good),
             "runs": len(rs), "ok": all(r.get("ok") for r in rs),
             "note": "; ".join(sorted({r["note"] for r in rs if r["note"]}))}
        for k in METRICS:
            vs = [r[k] for r in good if r.get(k) is not None]
            m[k] = statistics.median(vs) if vs else None
            if k == "rps" and len(vs) > 1 and m[k]:
                m["spread"] = (max(vs) - min(vs)) / m[k] * 100
        out[i] = m
    return order, out


def rep_ratios(x, y):
    """x/y records/s for each repetition in which both cases succeeded."""
    if x is None or y is None:
        return []
    rs = []
    for rep, rx in sorted(x["by_rep"].items()):
        ry = y["by_rep"].get(rep)
        if ry and rx.get("rps") and ry.get("rps"):
            rs.append(rx["rps"] / ry["rps"])
    return rs


def f_ratio(rs):
    if not rs:
        return "—"
    med = f_x(statistics.median(rs))
    if len(rs) == 1:
        return med
    return f"{med} ({f_x(min(rs))[:-1]}–{f_x(max(rs))})"


def size_label(s):
    return "1 KiB" if s == 1024 else f"{s} B"


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
    reps = max((r["runs"] for r in rows.values()), default=0)
    p = print
    p(f"## Weir replicated produce benchmark, {md.get('date', '?')}")
    p()
    for k in ("machine", "load average at start", "load average at end",
              "weir build", "versions", "settings"):
        if k in md:
            p(f"- {k}: {md[k]}")
    p(f"- repetitions: {reps} (numbers are medians over the successful "
      "ones)" if reps > 1 else "- repetitions: 1")
    p()
    p("| case | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | max ms "
      "| servers CPU % | client CPU % | fullest partition % | note |")
    p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    sizes = []
    for i in order:
        r = rows[i]
        if r["size"] not in sizes:
            sizes.append(r["size"])
    # group the rows by size, in a fixed case order
    kinds = ("weir.rf3.all", "weir.rf1.1", "weir.rf3.1", "nats.r3",
             "nats.r1")
    ids = [f"{k}.{s}" for s in sizes for k in kinds if f"{k}.{s}" in rows]
    for i in ids:
        r = rows[i]
        note = r["note"]
        if r.get("spread") is not None:
            note = (note + "; " if note else "") + \
                f"records/s spread {r['spread']:.0f}%"
        if r["n"] < r["runs"]:
            note = f"**{r['runs'] - r['n']} of {r['runs']} runs FAILED** " \
                + note
        cpu = "—" if r["cpu_pct"] is None else f"{r['cpu_pct']:.0f}"
        ccpu = "—" if r["client_cpu_pct"] is None \
            else f"{r['client_cpu_pct']:.0f}"
        top = "—" if r["top_share"] is None else f"{r['top_share']:.0f}"
        p(f"| {r['label']} | {f_rps(r['rps'])} | {f_mb(r['mbps'])} "
          f"| {f_ms(r['p50'])} | {f_ms(r['p99'])} | {f_ms(r['p999'])} "
          f"| {f_ms(r['max'])} | {cpu} | {ccpu} | {top} | {note} |")
    p()
    # ---- every repetition -------------------------------------------------
    p("records/s of each repetition:")
    p()
    p("| case | " + " | ".join(f"rep {k}" for k in range(1, reps + 1)) + " |")
    p("|---|" + "--:|" * reps)
    for i in ids:
        r = rows[i]
        cells = []
        for k in range(1, reps + 1):
            x = r["all"].get(k)
            if x is None:
                cells.append("—")
            elif not x.get("ok"):
                cells.append("failed")
            else:
                cells.append(f_rps(x.get("rps")))
        p(f"| {r['label']} | " + " | ".join(cells) + " |")
    p()
    # ---- ratios -----------------------------------------------------------
    p("Ratios of records/s (= ratios of MB/s, same record size); each pairs "
      "the two cases of one repetition, median over repetitions (range in "
      "brackets):")
    p()
    p("| record size | Weir RF3 acks=all ÷ NATS R3 | Weir RF3 acks=all ÷ "
      "Weir RF1 acks=1 | Weir RF3 acks=all ÷ Weir RF3 acks=1 "
      "| Weir RF1 acks=1 ÷ NATS R1 | NATS R3 ÷ NATS R1 |")
    p("|---|--:|--:|--:|--:|--:|")
    for s in sizes:
        g = rows.get
        p(f"| {size_label(s)} "
          f"| {f_ratio(rep_ratios(g(f'weir.rf3.all.{s}'), g(f'nats.r3.{s}')))} "
          f"| {f_ratio(rep_ratios(g(f'weir.rf3.all.{s}'), g(f'weir.rf1.1.{s}')))} "
          f"| {f_ratio(rep_ratios(g(f'weir.rf3.all.{s}'), g(f'weir.rf3.1.{s}')))} "
          f"| {f_ratio(rep_ratios(g(f'weir.rf1.1.{s}'), g(f'nats.r1.{s}')))} "
          f"| {f_ratio(rep_ratios(g(f'nats.r3.{s}'), g(f'nats.r1.{s}')))} |")
    p()
    logs = [(k, v) for k, v in meta
            if k.startswith("weir warn") or k.startswith("weir log")
            or k.startswith("weir follower")
            or k.startswith("nats [")]
    if logs:
        p("Server logs:")
        p()
        for k, v in logs:
            p(f"- {k}: {v}")
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
    ad.add_argument("--kind", required=True, choices=("weir", "nats", "fail"))
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
    ad.add_argument("--note", default="")
    ad.add_argument("--top-share", default="")
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
