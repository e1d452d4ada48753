#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the seed corpora for the fuzz targets in tests/fuzz/.

    python3 tests/fuzz/make_corpus.py [OUT_DIR]   (default: tests/fuzz/corpus)

Each target gets a directory of small files: valid inputs built here from
the specs (Kafka RecordBatch v2, proto/weir.proto, the frame prefix), plus
inputs aimed at each check. The output is deterministic; the generated
files are committed, because they are test inputs. Files whose names start
with "crash-" or "regress-" are kept here too (regression inputs for bugs
found by fuzzing or review); this script only writes "seed-" files and
removes stale "seed-" files, so it never touches the others.
"""

import os
import struct
import sys

# ---- primitives --------------------------------------------------------


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def uvarint(n):
    """Unsigned LEB128 (protobuf varint); negative ints as 64-bit."""
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n):
    """Kafka varint/varlong: zigzag then LEB128."""
    return uvarint((n << 1) ^ (n >> 63))


# ---- protobuf (proto/weir.proto) ----------------------------------------


def pb_varint(field, value):
    return uvarint(field << 3) + uvarint(value)


def pb_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return uvarint(field << 3 | 2) + uvarint(len(data)) + data


def request(corr, body_field, body, client="seed"):
    return pb_varint(1, corr) + pb_bytes(2, client) + pb_bytes(body_field, body)


def response(corr, body_field=None, body=b"", error=0, msg=""):
    out = pb_varint(1, corr)
    if error:
        out += pb_varint(2, error) + pb_bytes(3, msg)
    if body_field is not None:
        out += pb_bytes(body_field, body)
    return out


def envelope(payload_len, header):
    return struct.pack(">I", payload_len) + header


def envelope_seeds():
    config = pb_bytes(1, "cleanup.policy") + pb_bytes(2, "compact")
    metadata = pb_bytes(1, "orders") + pb_bytes(1, "payments") + pb_varint(3, 1)
    create = pb_bytes(1, pb_bytes(1, "events") + pb_varint(2, 6) +
                      pb_varint(3, 3) + pb_bytes(4, config)) + pb_varint(2, 1)
    delete = pb_bytes(1, "old")

    def produce(acks, sizes):
        body = pb_varint(1, acks) + pb_varint(2, 3000)
        for i, n in enumerate(sizes):
            body += pb_bytes(3, pb_bytes(1, "t") + pb_varint(2, i) +
                             pb_varint(3, n))
        return body

    fetch = (pb_varint(1, 500) + pb_varint(2, 1) + pb_varint(3, 1 << 20) +
             pb_bytes(4, pb_bytes(1, "t") + pb_varint(2, 0) +
                      pb_varint(3, 42) + pb_varint(4, 65536) +
                      pb_varint(5, -1)) + pb_varint(5, -1))
    lo = pb_bytes(1, pb_bytes(1, "t") + pb_varint(2, 0) + pb_varint(3, -2))

    broker = pb_varint(1, 1) + pb_bytes(2, "localhost") + pb_varint(3, 9092)
    part = (pb_varint(1, 0) + pb_varint(3, 1) + pb_varint(4, 7) +
            pb_varint(5, 1) + pb_varint(5, 2) + pb_varint(6, 1) +
            pb_varint(8, 100))
    topic = pb_bytes(1, "orders") + pb_bytes(4, part) + pb_bytes(5, config)
    md_resp = pb_bytes(1, "cluster-1") + pb_varint(2, 1) + pb_bytes(
        3, broker) + pb_bytes(4, topic)
    fetch_resp = pb_bytes(1, pb_bytes(1, "t") + pb_varint(5, 12) +
                          pb_varint(7, 700)) + pb_bytes(
                              1, pb_bytes(1, "t") + pb_varint(2, 1) +
                              pb_varint(3, 18))
    prod_resp = pb_bytes(1, pb_bytes(1, "t") + pb_varint(5, 1000))
    lo_resp = pb_bytes(1, pb_bytes(1, "t") + pb_varint(4, 5) +
                       pb_varint(5, 1700000000000))
    topic_res = pb_bytes(1, pb_bytes(1, "events") + pb_varint(2, 10) +
                         pb_bytes(3, "topic already exists"))

    return {
        "req-metadata": envelope(0, request(1, 10, metadata)),
        "req-create-topics": envelope(0, request(2, 11, create)),
        "req-delete-topics": envelope(0, request(3, 12, delete)),
        "req-produce": envelope(150, request(4, 13, produce(-1, [100, 50]))),
        "req-produce-acks0": envelope(7, request(5, 13, produce(0, [7]))),
        "req-produce-bad-acks": envelope(7, request(6, 13, produce(2, [7]))),
        "req-produce-sum-mismatch": envelope(
            149, request(7, 13, produce(1, [100, 50]))),
        "req-fetch": envelope(0, request(8, 14, fetch)),
        "req-list-offsets": envelope(0, request(9, 15, lo)),
        "req-unknown-call": envelope(0, pb_varint(1, 42) + pb_bytes(99, b"")),
        "req-empty": envelope(0, b""),
        "req-payload-on-metadata": envelope(1, request(10, 10, metadata)),
        "garbage": envelope(0, b"\xff" * 12),
        "truncated-string": envelope(0, b"\x08\x01\x12\x05a"),
        "resp-error": envelope(0, response(11, error=7, msg="unknown call")),
        "resp-metadata": envelope(0, response(12, 10, md_resp)),
        "resp-create-topics": envelope(0, response(13, 11, topic_res)),
        "resp-produce": envelope(0, response(14, 13, prod_resp)),
        "resp-fetch": envelope(700, response(15, 14, fetch_resp)),
        "resp-fetch-mismatch": envelope(699, response(16, 14, fetch_resp)),
        "resp-list-offsets": envelope(0, response(17, 15, lo_resp)),
        "short": b"\x08",
    }


# ---- frames -------------------------------------------------------------


def prefix(frame_len, header_len):
    return struct.pack(">II", frame_len, header_len)


def frame(header, payload):
    return prefix(4 + len(header) + len(payload), len(header)) + header + payload


def frame_seeds():
    # first byte picks the limits in fuzz_frame.c: 0 default, 1 tiny (64/16),
    # 2 unlimited, 3 (4/0)
    hdr = request(1, 10, pb_bytes(1, "t"))
    return {
        "one-frame": b"\x00" + frame(hdr, b""),
        "two-frames": b"\x00" + frame(hdr, b"\x01" * 5) + frame(hdr, b""),
        "empty-frame": b"\x03" + frame(b"", b"") + frame(b"", b""),
        "tiny-limit-ok": b"\x01" + frame(b"h" * 16, b"p" * 44),
        "tiny-limit-frame": b"\x01" + frame(b"h" * 16, b"p" * 45),
        "tiny-limit-header": b"\x01" + frame(b"h" * 17, b""),
        "frame-over-default": b"\x00" + prefix(8 * 1024 * 1024 + 1, 0),
        "header-over-default": b"\x00" + prefix(2 * 1024 * 1024,
                                                1024 * 1024 + 1),
        "header-beyond-frame": b"\x00" + prefix(10, 7),
        "frame-below-4": b"\x00" + prefix(3, 0),
        "max-unlimited": b"\x02" + prefix(0xFFFFFFFF, 0xFFFFFFFB),
        "cut-prefix": b"\x00" + prefix(20, 4)[:6],
    }


# ---- record batches (Kafka RecordBatch v2) -----------------------------


def record(ts_delta, off_delta, key, value, headers=()):
    def blob(b):
        return zigzag(-1) if b is None else zigzag(len(b)) + b

    body = b"\x00" + zigzag(ts_delta) + zigzag(off_delta) + blob(key) + blob(
        value) + zigzag(len(headers))
    for hk, hv in headers:
        body += zigzag(len(hk)) + hk + blob(hv)
    return zigzag(len(body)) + body


def batch(records, count=None, last_delta=None, base=0, epoch=-1,
          base_ts=1000, max_ts=None, attrs=0, pid=-1, magic=2, crc=None,
          length=None):
    recs = b"".join(records)
    count = len(records) if count is None else count
    last_delta = count - 1 if last_delta is None else last_delta
    max_ts = base_ts if max_ts is None else max_ts
    after_crc = struct.pack(">hiqqqhii", attrs, last_delta, base_ts, max_ts,
                            pid, -1, -1, count) + recs
    crc = crc32c(after_crc) if crc is None else crc
    length = 4 + 1 + 4 + len(after_crc) if length is None else length
    return struct.pack(">qiibI", base, length, epoch, magic, crc) + after_crc


def batch_seeds():
    r_plain = [record(0, 0, b"k", b"v"),
               record(5, 1, None, b"xy", [(b"h", b"1")])]
    plain = batch(r_plain, max_ts=1005)
    headers = batch([record(0, 0, b"key", b"value",
                            [(b"a", None), (b"", b"e"), (b"c", b"")])])
    nulls = batch([record(0, 0, None, None), record(-3, 1, b"", b"")])
    big_ts = batch([record(0, 0, b"k", b"v"),
                    record(-(1 << 62), 1, b"k", b"v")], base_ts=1 << 62)
    compressed = batch([b"\x28\xb5\x2f\xfd"], count=3, attrs=4)
    produced = batch(r_plain, base=1000, epoch=7, pid=42)
    bad_crc = bytearray(plain)
    bad_crc[-1] ^= 1
    over_long = batch([b"\x1a\x00\x00\x80\x80\x80\x80\x80\x00\x02k\x02v\x00"])
    many_headers = batch([b"\x1a\x00\x00\x00\x02k\x02v\xd0\x0f\x02a\x02b"])
    trailing = batch(r_plain + [b"\x00"], count=2)
    return {
        "one-batch": plain,
        "three-batches": plain + produced + headers,
        "headers": headers,
        "null-key-value": nulls,
        "extreme-timestamps": big_ts,
        "compressed": compressed,
        "partial-tail": plain + plain[:40],
        "partial-tail-header": plain + plain[:70],
        "bad-crc": bytes(bad_crc),
        "bad-magic": batch(r_plain, magic=1),
        "length-too-small": batch(r_plain, length=48),
        "length-too-large": batch(r_plain, length=1 << 24),
        "count-mismatch": batch(r_plain, count=3),
        "last-delta-mismatch": batch(r_plain, last_delta=5),
        "over-long-varint": over_long,
        "header-count-beyond": many_headers,
        "trailing-bytes": trailing,
        "negative-key-len": batch([b"\x10\x00\x00\x00\x03k\x02v\x00"]),
        "empty": b"",
        # topic configs as CreateTopics carries them (key=value)
        "topic-retention-bad": b"retention.ms=abc",
        "topic-retention-ok": b"retention.ms=604800000",
        "topic-cleanup-bad": b"cleanup.policy=banana",
        "topic-cleanup-both": b"cleanup.policy=compact,delete",
        "topic-unknown": b"nosuch.key=1",
        "topic-min-isr": b"min.insync.replicas=3",
        "topic-ratio": b"min.cleanable.dirty.ratio=0.25",
        "topic-flush": b"flush.policy=never",
        "topic-min-int": b"retention.bytes=-9223372036854775808",
    }


def regress_seeds():
    """Inputs for bugs fixed in common/ (kept as regression cases)."""
    r2 = [record(0, 0, b"k", b"v"), record(0, 1, b"k", b"v")]
    return {
        "batch": {
            # base_offset + last_offset_delta overflowed int64 (UB)
            "regress-last-offset-overflow": batch(r2, base=(1 << 63) - 1),
            # a record offset delta of INT32_MAX overflowed base + delta
            "regress-offset-delta-overflow": batch(
                [record(0, 0, b"k", b"v"),
                 record(0, (1 << 31) - 1, b"k", b"v")],
                base=(1 << 63) - 2),
        },
    }


# ---- configuration -----------------------------------------------------


def config_seeds():
    return {
        "full": b"; broker\n[broker]\ndata_dir = /data\nport = 19092\n"
                b"segment-bytes = 64m\nverbose = yes\nrack = r1\n",
        "suffixes": b"segment-bytes=1GiB\nport=9k\n",
        "bad-int": b"port = 12x\n",
        "out-of-range": b"port = 70000\n",
        "unknown-key": b"bogus = 1\n",
        "no-equals": b"port\n",
        "config-key": b"config = other.ini\n",
        "bool-bad": b"verbose = maybe\n",
        "colon-and-quotes": b"rack: \"r 2\"  ; comment\n",
        "sections": b"[a]\n[b]\nport=1\n[",
        "set-style": b"data_dir=/x",
        "big-number": b"segment-bytes = 9223372036854775807\n",
        "overflow": b"segment-bytes = 8589934592g\n",
        "empty": b"",
        # topic configs as CreateTopics carries them (key=value)
        "topic-retention-bad": b"retention.ms=abc",
        "topic-retention-ok": b"retention.ms=604800000",
        "topic-cleanup-bad": b"cleanup.policy=banana",
        "topic-cleanup-both": b"cleanup.policy=compact,delete",
        "topic-unknown": b"nosuch.key=1",
        "topic-min-isr": b"min.insync.replicas=3",
        "topic-ratio": b"min.cleanable.dirty.ratio=0.25",
        "topic-flush": b"flush.policy=never",
        "topic-min-int": b"retention.bytes=-9223372036854775808",
    }


# ---- controller snapshot file: chain values (controller/ctl_chain.h) ----


def chain_head(base, values, magic=0x574D4353, version=0):
    body = struct.pack(">IBqI", magic, version, base, len(values))
    body += b"".join(struct.pack(">q", v) for v in values)
    return body + struct.pack(">I", crc32c(body))


def chain_seeds():
    three = chain_head(7, [1, 2, 8570882025441300474])
    snap = b"WMSN" + b"\0" * 20  # what follows in a snapshot file
    return {
        "three": three + snap,
        "one": chain_head(0, [0]),
        "bad-crc": three[:-1] + bytes([three[-1] ^ 1]),
        "negative": chain_head(0, [-5]),
        "count-past-end": chain_head(0, [1])[:17] + b"\0" * 4,
        "legacy": b"WMSN\0" + b"\0" * 16,
        "zero-values": struct.pack(">IBqI", 0x574D4353, 0, 0, 0) + b"\0" * 8,
    }


# ---- controller metadata.log frames (controller/ctl_log_frame.h) -------


def log_frame(body):
    return struct.pack(">II", len(body), crc32c(body)) + body


def log_batch(first, records):
    body = struct.pack(">qI", first, len(records))
    return body + b"".join(struct.pack(">I", len(r)) + r for r in records)


def log_entry(index, term, etype, data=b""):
    return log_frame(struct.pack(">BBQQ", 0x81, etype, index, term) + data)


def snap_head(index, term, admitted=(0,) * 7):
    body = struct.pack(">IBQQB", 0x574D5253, 0, index, term, len(admitted))
    body += b"".join(struct.pack(">Q", a) for a in admitted)
    return body + struct.pack(">I", crc32c(body))


def log_frame_seeds():
    batch = log_batch(5, [b"\x09\x00\x01", b"\x02\x00"])
    v0 = log_frame(batch)
    normal = log_entry(7, 2, 1, batch)
    readmit = log_entry(8, 2, 3, struct.pack(">IQ", 3, 0x1234567890ABCDEF))
    return {
        "v0-batch": v0,
        "v1-normal": normal,
        "v1-noop": log_entry(1, 1, 2),
        "v1-readmit": readmit,
        "v1-readmit-zero-nonce": log_entry(8, 2, 3, struct.pack(">IQ", 3, 0)),
        "v1-bad-type": log_entry(1, 1, 9),
        "v1-index-zero": log_entry(0, 1, 2),
        "v1-noop-with-data": log_entry(1, 1, 2, b"x"),
        "v0-bad-crc": v0[:-1] + bytes([v0[-1] ^ 1]),
        "v0-count-too-big": log_frame(struct.pack(">qI", 0, 9) + b"\0" * 8),
        "v0-negative-first": log_frame(log_batch(-1, [b"\x01"])),
        "v1-short": normal[:-3],
        "snap-head": snap_head(42, 3, (0, 99, 0, 0, 0, 0, 0)),
        "snap-head-two": snap_head(1, 1, (5, 6)),
        "snap-head-term-no-index": snap_head(0, 2),
        "snap-head-bad-crc": snap_head(4, 1)[:-1] + b"\0",
    }


# ---- controller raft-state (controller/ctl_hardstate.h) ----------------


def hard_state(term, vote, nonce, magic=0x574D4853, version=0, readmit=0):
    body = struct.pack(">IBQIQQ", magic, version, term, vote, nonce, readmit)
    return body + struct.pack(">I", crc32c(body))


def hardstate_seeds():
    ok = hard_state(7, 2, 0)
    return {
        "ok": ok,
        "nonce": hard_state(1, 0, 0xDEADBEEF),
        "readmitted": hard_state(5, 0, 0xDEADBEEF, readmit=4),
        "readmit-without-nonce": hard_state(5, 0, 0, readmit=4),
        "readmit-after-term": hard_state(5, 0, 9, readmit=6),
        "zeros": hard_state(0, 0, 0),
        "vote-at-term-0": hard_state(0, 3, 0),
        "bad-crc": ok[:-1] + bytes([ok[-1] ^ 1]),
        "bad-version": hard_state(1, 1, 0, version=1),
        "short": ok[:-1],
        "long": ok + b"\0",
    }


# ---- controller quorum: RaftMessage frames, --voters text -------------


def raft_frame(typ, fields=(), entries=(), payload=b"", cluster="c1",
               voter=1, to=2, admitted=()):
    """A Request frame with body raft (50); fields: (number, value)."""
    body = pb_bytes(1, cluster) + pb_varint(2, voter) + pb_varint(3, to)
    body += pb_varint(4, typ)
    for num, val in fields:
        body += pb_varint(num, val)
    for idx, term, etype, n in entries:
        body += pb_bytes(15, pb_varint(1, idx) + pb_varint(2, term) +
                         pb_varint(3, etype) + pb_varint(4, n))
    for a in admitted:
        body += pb_varint(19, a)
    return frame(request(0, 50, body, client="raft"), payload)


def raft_codec_seeds():
    limit = 1 << 62
    app = [(11, 3, 1, 4), (12, 3, 2, 0), (13, 3, 3, 12)]
    app_bytes = b"abcd" + b"\0\0\0\x02" + b"\0" * 7 + b"\x09"
    return {
        "vote": raft_frame(1, [(5, 3), (6, 1), (8, 77), (9, 10), (10, 2)]),
        "vote-resp": raft_frame(2, [(5, 3), (7, 1)], voter=2, to=1),
        "append": raft_frame(3, [(5, 3), (9, 10), (10, 2), (11, 9)], app,
                             app_bytes),
        "heartbeat": raft_frame(3, [(5, 3), (9, 13), (10, 3), (11, 13)]),
        "append-resp": raft_frame(4, [(5, 3), (8, 5), (12, 1), (13, 13),
                                      (14, 13)], voter=3, to=1),
        "snapshot": raft_frame(5, [(5, 4), (9, 100), (10, 4), (16, 0),
                                   (17, 1), (18, 6)], payload=b"image!",
                               admitted=(0, 9)),
        "snapshot-resp": raft_frame(6, [(5, 4), (12, 1), (13, 100)]),
        "bad-type": raft_frame(7, [(5, 1)]),
        "type-zero": raft_frame(0, [(5, 1)]),
        "term-at-limit": raft_frame(1, [(5, limit)]),
        "commit-at-limit": raft_frame(3, [(5, 1), (11, limit)]),
        "self-addressed": raft_frame(1, [(5, 1)], voter=2, to=2),
        "voter-zero": raft_frame(1, [(5, 1)], voter=0),
        "voter-too-big": raft_frame(1, [(5, 1)], voter=1 << 31),
        "no-cluster": raft_frame(1, [(5, 1)], cluster=""),
        "long-cluster": raft_frame(1, [(5, 1)], cluster="x" * 65),
        "sizes-short": raft_frame(3, [(5, 3), (9, 10)], app, app_bytes[:-1]),
        "sizes-long": raft_frame(3, [(5, 3), (9, 10)], app, app_bytes + b"!"),
        "entries-not-dense": raft_frame(3, [(5, 3), (9, 10)],
                                        [(11, 3, 1, 0), (13, 3, 1, 0)]),
        "entry-type-bad": raft_frame(3, [(5, 3), (9, 10)], [(11, 3, 4, 0)]),
        "entry-too-big": raft_frame(3, [(5, 3), (9, 10)],
                                    [(11, 3, 1, 64 * 1024 * 1024 + 1)]),
        "too-many-entries": raft_frame(3, [(5, 3), (9, 0)],
                                       [(i + 1, 3, 1, 0) for i in range(257)]),
        "batch-of-256": raft_frame(3, [(5, 3), (9, 0)],
                                   [(i + 1, 3, 2, 0) for i in range(256)]),
        "entries-on-vote": raft_frame(1, [(5, 3), (9, 10)], [(11, 3, 1, 0)]),
        "payload-on-vote": raft_frame(1, [(5, 3)], payload=b"x"),
        "chunk-too-big": raft_frame(5, [(5, 4), (18, 1024 * 1024 + 1)]),
        "chunk-on-append": raft_frame(3, [(5, 4), (18, 2)], payload=b"xy"),
        "admitted-8": raft_frame(5, [(5, 4)], admitted=range(1, 9)),
        "admitted-on-vote": raft_frame(1, [(5, 4)], admitted=(3,)),
        "chunk-past-limit": raft_frame(5, [(5, 4), (16, limit - 1),
                                           (18, 2)], payload=b"xy"),
        "not-raft": frame(request(1, 10, pb_bytes(1, "t")), b""),
        "not-protobuf": frame(b"\xff\xff\xff", b""),
    }


def raft_voters_seeds():
    return {
        "three": b"1@10.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093",
        "names": b"1@ctl-a.example:9093,2@ctl-b.example:9093,"
                 b"3@ctl-c:9093",
        "ipv6": b"1@[::1]:9093,2@[fe80::1]:9093,3@[2001:db8::7]:1",
        "one": b"7@localhost:65535",
        "seven": b",".join(b"%d@h%d:9" % (i, i) for i in range(1, 8)),
        "eight": b",".join(b"%d@h%d:9" % (i, i) for i in range(1, 9)),
        "dup-id": b"1@a:1,1@b:1",
        "dup-addr": b"1@a:1,2@A:1",
        "port-zero": b"1@a:0",
        "port-big": b"1@a:65536",
        "id-zero": b"0@a:1",
        "id-big": b"2147483648@a:1",
        "id-max": b"2147483647@a:1",
        "leading-zero": b"01@a:1",
        "empty": b"",
        "empty-elem": b"1@a:1,,2@b:1",
        "trailing-comma": b"1@a:1,",
        "space": b"1@a:1, 2@b:1",
        "no-at": b"1a:1",
        "no-port": b"1@a",
        "v6-no-brackets": b"1@::1:9",
        "v6-bad": b"1@[::g]:9",
        "bad-ipv4": b"1@256.1.1.1:9",
        "bad-label": b"1@-a.b:9",
        "underscore": b"1@a_b:9",
    }


# ---- partition log checkpoints (broker/storage/plog_ckpt.h) ------------


def plog_ckpt_seeds():
    return {
        "offset": b"0\n1234\n",
        "offset-zero": b"0\n0\n",
        "offset-max": b"0\n9223372036854775807\n",
        "offset-overflow": b"0\n9223372036854775808\n",
        "offset-plus": b"0\n+5\n",
        "offset-space": b"0\n 5\n",
        "offset-junk": b"0\n5\nx",
        "offset-nul": b"0\n5\0\n",
        "offset-no-newline": b"0\n5",
        "offset-version": b"1\n5\n",
        "empty": b"",
        "cleaner": b"0\n40\n2\n10 1000\n40 -5\n",
        "cleaner-none": b"0\n0\n0\n",
        "cleaner-full": b"0\n99\n32\n" + b"".join(
            b"%d %d\n" % (i * 3, 1700000000000 + i) for i in range(32)),
        "cleaner-too-many": b"0\n99\n33\n" + b"".join(
            b"%d 1\n" % i for i in range(33)),
        "cleaner-descending": b"0\n40\n2\n10 1\n9 2\n",
        "cleaner-wall-overflow": b"0\n4\n1\n1 -9223372036854775809\n",
        "cleaner-short": b"0\n40\n2\n10 1\n",
    }


# ---- topic manifest (broker/storage/logmgr_manifest.c) -----------------


def logmgr_manifest_seeds():
    head = b"weir-topics 1\n"
    return {
        "empty-cluster": head + b"end 0\n",
        "two": head + b"topic a 3 2 1 id=77\nconfig retention.ms 1000\n"
               b"topic b 1 1 0\nend 2\n",
        "configs": head + b"topic orders 4 3 3 id=5\n"
                   b"config cleanup.policy compact\n"
                   b"config segment.bytes 1048576\n"
                   b"config min.insync.replicas 2\nend 1\n",
        "no-final-newline": head + b"topic t 1 1 0\nend 1",
        "plus": head + b"topic t +1 1 0\nend 1\n",
        "space": head + b"topic t  1 1 0\nend 1\n",
        "junk": head + b"topic t 1 1 0\nend 1\nextra\n",
        "nul": head + b"topic t 1\0 1 0\nend 1\n",
        "overflow": head + b"topic t 1 1 0 id=9223372036854775808\nend 1\n",
        "count": head + b"topic t 1 1 0\nend 2\n",
        "twice": head + b"topic t 1 1 0\ntopic t 1 1 0\nend 2\n",
        "bad-name": head + b"topic a/b 1 1 0\nend 1\n",
        "bad-config": head + b"topic t 1 1 1\nconfig nope 1\nend 1\n",
        "truncated": head + b"topic t 1 1 2\nconfig retention.ms 5\n",
        "empty": b"",
    }


# ---- output ------------------------------------------------------------


def write_dir(path, seeds, regress):
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if name.startswith("seed-") and name[5:] not in seeds:
            os.remove(os.path.join(path, name))
    files = {"seed-" + k: v for k, v in seeds.items()}
    files.update(regress)
    for name, data in sorted(files.items()):
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    assert crc32c(b"123456789") == 0xE3069283
    regress = regress_seeds()
    for target, seeds in (("frame", frame_seeds()),
                          ("envelope", envelope_seeds()),
                          ("batch", batch_seeds()),
                          ("config", config_seeds()),
                          ("ctl_chain", chain_seeds()),
                          ("ctl_log_frame", log_frame_seeds()),
                          ("ctl_hardstate", hardstate_seeds()),
                          ("raft_codec", raft_codec_seeds()),
                          ("raft_voters", raft_voters_seeds()),
                          ("plog_ckpt", plog_ckpt_seeds()),
                          ("logmgr_manifest", logmgr_manifest_seeds())):
        write_dir(os.path.join(out, target), seeds, regress.get(target, {}))


if __name__ == "__main__":
    main()
