"""Helpers for the storage fault tests (full disk, failing fsync, flipped
bytes): a producer feeding one partition, waiting for broker trace lines,
segment files read back and CRC-checked, tmpfs mounts, the faultfs shim.

WEIR_FAULTS_BROKER_SIDE_ONLY=1 skips (and says so) the end-to-end steps
that need the controller to act on the offline replicas brokers report
(leadership moving away from an offline log); every broker-side step runs.
"""
import os
import re
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import CLI_BIN, log, wait_until, weir  # noqa: E402

FAULTFS = os.environ.get("WEIR_FAULTFS_LIB") or os.path.join(
    weirtest.BUILD, "tests", "libweir_faultfs.so")
BROKER_SIDE_ONLY = os.environ.get("WEIR_FAULTS_BROKER_SIDE_ONLY") == "1"
SKIP = 77  # ctest SKIP_RETURN_CODE of the faults tier


_HELP = []


def broker_args(*args):
    """Broker options, minus those this build's broker does not have (so
    the same test runs against an older build and shows what it does)."""
    if not _HELP:
        p = subprocess.run([weirtest.BROKER_BIN, "--help"],
                           capture_output=True)
        _HELP.append((p.stdout + p.stderr).decode())
    out, i = [], 0
    while i < len(args):
        opt, val = args[i], args[i + 1]
        if f"--{opt.lstrip('-')}" in _HELP[0]:
            out += [opt, val]
        else:
            log(f"this broker has no {opt}: left out")
        i += 2
    return out


def end_to_end(what):
    """True when the end-to-end step `what` should run."""
    if BROKER_SIDE_ONLY:
        log(f"SKIPPED (needs the controller side): {what}")
        return False
    return True


class Producer:
    """`weir produce --report` of v0, v1, ... (another prefix than v if
    given) to one partition at a steady
    pace; report lines are kept with the time they came."""

    def __init__(self, bootstrap, topic, partition, acks="all", rate=200,
                 chunk=10, timeout_ms=120000, prefix="v"):
        self.prefix = prefix
        self.proc = subprocess.Popen(
            [CLI_BIN, "--bootstrap", bootstrap, "produce", topic,
             "--partition", str(partition), "--acks", acks, "--report",
             "--linger-ms", "2", "--delivery-timeout-ms", str(timeout_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.sent = 0
        self.lines = []  # (time, "P O" | "ERROR NAME")
        self.errors = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.rate, self.chunk = rate, chunk
        self.threads = [threading.Thread(target=f, daemon=True) for f in
                        (self._write, self._read, self._read_err)]
        for t in self.threads:
            t.start()

    def _write(self):
        try:
            while not self.stopping.is_set() and self.sent < 1_000_000:
                data = "".join(f"{self.prefix}{i}\n" for i in range(
                    self.sent, self.sent + self.chunk)).encode()
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
                with self.lock:
                    self.sent += self.chunk
                time.sleep(self.chunk / self.rate)
        except (BrokenPipeError, ValueError):
            pass

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.decode().strip()))

    def _read_err(self):
        for line in self.proc.stderr:
            self.errors.append(line.decode().strip())

    def acks(self, since=0.0):
        """Times of the acknowledgements that came after `since`."""
        return [t for t, ln in list(self.lines)
                if t >= since and not ln.startswith("ERROR")]

    def wait_acks(self, n, timeout=30, since=None):
        since = time.time() if since is None else since
        return wait_until(f"{n} acknowledgements",
                          lambda: len(self.acks(since)) >= n, timeout)

    def acked(self):
        """{value: offset} of every acknowledged record."""
        out = {}
        for i, (_, ln) in enumerate(list(self.lines)):
            if not ln.startswith("ERROR"):
                out[f"{self.prefix}{i}"] = int(ln.split()[1])
        return out

    def error_names(self):
        return sorted({ln.split()[1] for _, ln in self.lines
                       if ln.startswith("ERROR")})

    def stop(self, timeout=150):
        self.stopping.set()
        self.threads[0].join(10)
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for t in self.threads[1:]:
            t.join(10)


class LogWatch:
    """Trace lines a process writes from now on."""

    def __init__(self, proc):
        self.proc = proc
        self.mark = len(proc.log_text())

    def lines(self, pattern):
        text = self.proc.log_text()[self.mark:]
        return [ln for ln in text.splitlines() if re.search(pattern, ln)]

    def wait(self, what, pattern, timeout):
        got = wait_until(what, lambda: self.lines(pattern), timeout, step=0.1)
        return got[0]


def partition_state(c, topic, part, but=()):
    return c.state(but)["partitions"][(topic, part)]


def wait_isr(c, topic, part, broker, inside, timeout, but=()):
    what = "in" if inside else "out of"
    return wait_until(
        f"broker {broker} {what} the ISR of {topic}-{part}",
        lambda: (lambda st: st if (broker in st["isr"]) == inside else None)(
            partition_state(c, topic, part, but)), timeout, step=0.25)


def read_partition(c, topic, part, expect, but=(), timeout_ms=5000):
    """{offset: value} read below the high watermark by a client."""
    p = weir(c.live(but), "consume", topic, "--partition", str(part),
             "--from-beginning", "--max-messages", str(expect),
             "--timeout-ms", str(timeout_ms), "--format", r"%o %v\n",
             timeout=300, check=False)
    got = {}
    for line in p.stdout.decode().splitlines():
        if line:
            off, val = line.split(" ", 1)
            got[int(off)] = val
    return got, p


# ---- segment files ------------------------------------------------------

_CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(b, i):
    shift = v = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        if not x & 0x80:
            break
        shift += 7
    return (v >> 1) ^ -(v & 1), i


def batches(path):
    """(position, base offset, header+body bytes) of each batch of a
    segment file, as framed (no checks)."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if length < 49 or end > len(data):
            break
        yield pos, base, data[pos:end]
        pos = end


def batch_values(raw):
    """Record values of an uncompressed batch."""
    count = struct.unpack_from(">i", raw, 57)[0]
    i = 61
    out = []
    for _ in range(count):
        _, i = _varint(raw, i)  # record length
        i += 1  # attributes
        _, i = _varint(raw, i)  # timestamp delta
        _, i = _varint(raw, i)  # offset delta
        klen, i = _varint(raw, i)
        i += max(klen, 0)
        vlen, i = _varint(raw, i)
        out.append(raw[i:i + vlen].decode(errors="replace"))
        i += max(vlen, 0)
        nh, i = _varint(raw, i)
        for _ in range(nh):
            hk, i = _varint(raw, i)
            i += hk
            hv, i = _varint(raw, i)
            i += max(hv, 0)
    return out


def read_log_dir(part_dir):
    """({offset: value}, [bad batch descriptions]) of a partition
    directory's segments, every batch's CRC-32C checked."""
    values, bad = {}, []
    for name in sorted(os.listdir(part_dir)):
        if not name.endswith(".log"):
            continue
        path = os.path.join(part_dir, name)
        for pos, base, raw in batches(path):
            crc = struct.unpack_from(">I", raw, 17)[0]
            if crc32c(raw[21:]) != crc:
                bad.append(f"{name} at {pos} (offset {base})")
                continue
            for k, v in enumerate(batch_values(raw)):
                values[base + k] = v
    return values, bad


def flip_byte_in_closed_segment(part_dir, which=0, batch=None):
    """Flip one byte inside a record value of a batch in the middle of the
    `which`-th segment (by name order; never the last, active one).
    Returns (segment file, position, base offset of the batch)."""
    segs = sorted(n for n in os.listdir(part_dir) if n.endswith(".log"))
    assert len(segs) >= 2, f"no closed segment in {part_dir}: {segs}"
    path = os.path.join(part_dir, segs[which])
    found = list(batches(path))
    pos, base, raw = found[len(found) // 2 if batch is None else batch]
    at = pos + len(raw) - 3  # inside the last record's value
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x20]))
    return path, pos, base


# ---- mounts and the shim -------------------------------------------------

def is_root():
    return os.geteuid() == 0


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                    path], check=True)


def umount(path):
    for _ in range(20):
        if subprocess.run(["umount", path]).returncode == 0:
            return
        time.sleep(0.5)
    subprocess.run(["umount", "-l", path])


def fill(path, name="filler"):
    """Fill the file system of path with a file; returns its path."""
    out = os.path.join(path, name)
    chunk = b"\0" * (1 << 20)
    with open(out, "wb") as f:
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
    return out


def _preload():
    """The shim, after the sanitizer runtime when the daemons have one
    (ASan insists on coming first)."""
    libs = subprocess.run(["ldd", weirtest.BROKER_BIN], capture_output=True,
                          text=True).stdout
    for ln in libs.splitlines():
        if "libasan" in ln and "=>" in ln:
            return ln.split("=>")[1].split()[0] + ":" + FAULTFS
    return FAULTFS


class FaultCtl:
    """The control file of the faultfs shim for one process."""

    def __init__(self, path):
        self.path = path
        self.set([])

    def env(self):
        return {"LD_PRELOAD": _preload(), "WEIR_FAULTFS_CTL": self.path}

    def set(self, rules):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            for r in rules:
                f.write(" ".join(r) + "\n")
        os.replace(tmp, self.path)

    def hits(self):
        try:
            with open(self.path + ".hits") as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []
