"""Helpers for Weir's integration tests: real processes on loopback.

Starts weir-broker processes on free ports with their own data directories,
runs the weir CLI, and speaks the wire protocol directly (a minimal protobuf
encoder/decoder is enough for the few messages the tests forge), so tests can
send malformed frames a real client never would.
"""
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("WEIR_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BROKER_BIN = os.environ.get("WEIR_BROKER_BIN") or os.path.join(
    BUILD, "broker", "weir-broker")
CLI_BIN = os.environ.get("WEIR_CLI_BIN") or os.path.join(
    BUILD, "client", "cli", "weir")
CONTROLLER_BIN = os.environ.get("WEIR_CONTROLLER_BIN") or os.path.join(
    BUILD, "controller", "weir-controller")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


_ports_given = set()       # every port free_port handed out in this process
_port_locks = []           # open lock files: held until the process exits
_port_rng = random.Random(os.getpid() ^ time.time_ns())
_port_next = None          # next candidate (a per-process random start)


def _port_range():
    """Ports to hand out: below the kernel's ephemeral range, so the source
    port of an outgoing connection (ours, a broker's, the CLI's) cannot be
    the port a test is about to listen on. Above it when the range starts
    too low to leave room."""
    lo, hi = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        pass
    if lo - 1024 >= 2000:
        return max(1024, lo // 2), lo          # e.g. 16384..32767
    if 65535 - hi >= 2000:
        return hi + 1, 65536
    return None                                # no room: the kernel picks


def _port_lock(port):
    """Claim port for this process against other test processes on the
    machine (ctest runs two at a time): an flock on a file per port, held
    until this process exits. False if another process holds it."""
    import fcntl
    d = os.path.join(tempfile.gettempdir(), f"weirtest-ports-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    f = open(os.path.join(d, str(port)), "a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return False
    _port_locks.append(f)
    return True


def _port_bindable(port):
    """Nothing listens on the port and no socket lingers on it (no
    SO_REUSEADDR, so TIME_WAIT counts as taken)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port():
    """A TCP port on 127.0.0.1 for a test server. Never the same port twice
    in one process, never one another test process holds (per-process
    random start in the range below the ephemeral ports, an flock per port,
    and a bind check)."""
    global _port_next
    rng = _port_range()
    if rng is None:
        for _ in range(1000):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _ports_given:
                _ports_given.add(port)
                return port
        raise RuntimeError("no free port")
    lo, hi = rng
    if _port_next is None:
        _port_next = _port_rng.randrange(lo, hi)
    for _ in range(hi - lo):
        port = _port_next
        _port_next = lo if _port_next + 1 >= hi else _port_next + 1
        if port in _ports_given or not _port_bindable(port):
            continue
        if _port_lock(port):
            _ports_given.add(port)
            return port
    raise RuntimeError(f"no free port in {lo}..{hi - 1}")


class Broker:
    """One weir-broker process. Stop only what we started, by PID."""

    def __init__(self, data_dir=None, port=None, args=(), env=None):
        self.tmp = None
        if data_dir is None:
            self.tmp = tempfile.mkdtemp(prefix="weir-it-")
            data_dir = os.path.join(self.tmp, "data")
        self.data_dir = data_dir
        self.port = port or free_port()
        self.args = list(args)
        self.env = env
        self.proc = None
        self.start_mark = 0
        self.log_path = os.path.join(os.path.dirname(data_dir) or ".",
                                     f"broker-{self.port}.log")

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=60):
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.logf = open(self.log_path, "ab")
        start_mark = self.start_mark = self.logf.tell()
        self.proc = subprocess.Popen(
            [BROKER_BIN, "--listen", self.addr, "--data-dir", self.data_dir]
            + self.args, stdout=self.logf, stderr=self.logf, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"broker exited with {self.proc.returncode}:\n"
                    + self.log_text()[-3000:])
            with open(self.log_path, "rb") as f:
                f.seek(start_mark)
                if b"event=started" in f.read():
                    return self
            time.sleep(0.05)
        raise RuntimeError("broker did not start:\n" + self.log_text()[-3000:])

    def log_text(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_since_start(self):
        """What the process logged since its last start (the log file of a
        restarted process also holds its earlier runs)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.start_mark)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.logf.close()

    def stop(self, timeout=20):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise RuntimeError("broker did not stop on SIGTERM")
        if not self.logf.closed:
            self.logf.close()
        return self.proc.returncode if self.proc else None

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self):
        try:
            if self.proc and self.proc.poll() is None:
                self.kill9()
        finally:
            if self.tmp and os.environ.get("WEIR_KEEP_TMP") != "1":
                subprocess.run(["rm", "-rf", self.tmp])

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()


_format_supported = None


def controller_format(data_dir):
    """Create a new cluster in data_dir (`weir-controller --format`) unless
    it is formatted already or holds metadata. A no-op with a controller
    built before --format existed (they started on any empty dir)."""
    global _format_supported
    if _format_supported is None:
        out = subprocess.run([CONTROLLER_BIN, "--help"],
                             capture_output=True).stdout
        _format_supported = b"--format" in out
    if not _format_supported or any(
            os.path.exists(os.path.join(data_dir, f))
            for f in ("meta.properties", "snapshot")):
        return
    logp = os.path.join(data_dir, "metadata.log")
    if os.path.exists(logp) and os.path.getsize(logp) > 0:
        return
    subprocess.run([CONTROLLER_BIN, "--format", "--data-dir", data_dir],
                   check=True, capture_output=True)


class Controller(Broker):
    """One weir-controller process; same lifecycle helpers as Broker. The
    first start formats its data dir (a new cluster) unless format=False."""

    def __init__(self, data_dir=None, port=None, args=(), env=None,
                 format=True):
        super().__init__(data_dir, port, args, env)
        self.format = format
        self.log_path = os.path.join(os.path.dirname(self.data_dir) or ".",
                                     f"controller-{self.port}.log")

    def start(self, timeout=60):
        if self.format:
            controller_format(self.data_dir)
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.logf = open(self.log_path, "ab")
        start_mark = self.start_mark = self.logf.tell()
        self.proc = subprocess.Popen(
            [CONTROLLER_BIN, "--listen", self.addr, "--data-dir",
             self.data_dir] + self.args,
            stdout=self.logf, stderr=self.logf, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"controller exited with {self.proc.returncode}:\n"
                    + self.log_text()[-3000:])
            with open(self.log_path, "rb") as f:
                f.seek(start_mark)
                if b"event=started" in f.read():
                    return self
            time.sleep(0.05)
        raise RuntimeError("controller did not start:\n"
                           + self.log_text()[-3000:])


def cluster_broker(controller, broker_id, tmp, port=None, args=()):
    """A Broker joined to `controller` with its data under tmp."""
    return Broker(data_dir=os.path.join(tmp, f"broker-{broker_id}"),
                  port=port,
                  args=["--id", str(broker_id), "--controller",
                        controller.addr] + list(args))


def cluster_state(broker, timeout=30):
    """`weir cluster` parsed: {'controller', 'brokers': {id: (addr, rack,
    alive)}, 'partitions': {(topic, p): dict(leader, epoch, replicas, isr,
    elr, flags)}, 'quorum': None without a quorum section, else
    dict(term, leader, voters={id: dict(addr, state, log_end, lag)})}."""
    out = weir(broker, "cluster", timeout=timeout).stdout.decode()
    st = {"controller": None, "brokers": {}, "partitions": {}, "text": out,
          "quorum": None}
    for line in out.splitlines():
        w = line.split()
        if line.startswith("controller:"):
            st["controller"] = line.split(":", 1)[1].strip()
        elif line.startswith("quorum:"):
            kv = dict(x.split("=", 1) for x in w if "=" in x)
            st["quorum"] = {"term": int(kv["term"]),
                            "leader": int(kv["leader"]), "voters": {}}
        elif len(w) == 6 and w[0] == "voter" and st["quorum"] is not None:
            kv = dict(x.split("=", 1) for x in w[4:])
            st["quorum"]["voters"][int(w[1])] = {
                "addr": w[2], "state": w[3], "log_end": int(kv["log_end"]),
                "lag": int(kv["lag"])}
        elif len(w) >= 5 and w[0] == "broker":
            st["brokers"][int(w[1])] = (w[2], w[3][5:], w[4] == "alive")
        elif len(w) >= 6 and w[2].startswith("leader="):
            kv = dict(x.split("=", 1) for x in w[2:] if "=" in x)
            ids = lambda s: [] if s == "-" else [int(x) for x in s.split(",")]
            st["partitions"][(w[0], int(w[1]))] = {
                "leader": int(kv["leader"]), "epoch": int(kv["epoch"]),
                "replicas": ids(kv["replicas"]), "isr": ids(kv["isr"]),
                "elr": ids(kv.get("elr", "-")),
                "flags": [x for x in w[2:] if "=" not in x]}
    return st


def wait_until(what, fn, timeout, step=0.1):
    """Poll fn() until it returns something true; bounded in time."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
        except AssertionError as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}: "
                         f"{last!r}")


def weir(broker, *args, input=None, timeout=120, check=True):
    """Run the weir CLI against a broker; returns CompletedProcess."""
    cmd = [CLI_BIN, "--bootstrap", broker.addr] + [str(a) for a in args]
    p = subprocess.run(cmd, input=input, capture_output=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {p.returncode}\nstdout: "
            f"{p.stdout[-2000:]!r}\nstderr: {p.stderr[-2000:]!r}")
    return p


# ---- minimal protobuf ----------------------------------------------------

def pb_varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_field(num, value):
    """int -> varint field; bytes/str -> length-delimited; list -> repeated."""
    if isinstance(value, list):
        return b"".join(pb_field(num, v) for v in value)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return pb_varint(num << 3) + pb_varint(value)
    if isinstance(value, str):
        value = value.encode()
    return pb_varint(num << 3 | 2) + pb_varint(len(value)) + value


def pb_msg(*fields):
    return b"".join(pb_field(n, v) for n, v in fields if v is not None)


def pb_read_varint(b, i):
    shift = 0
    v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def pb_parse(b):
    """bytes -> {field: [values]} (ints or bytes)."""
    out = {}
    i = 0
    while i < len(b):
        key, i = pb_read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = pb_read_varint(b, i)
            if v >= 1 << 63:
                v -= 1 << 64
        elif wt == 2:
            n, i = pb_read_varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        else:
            raise ValueError(f"wire type {wt}")
        out.setdefault(num, []).append(v)
    return out


def pb_int(msg, num, default=0):
    v = msg.get(num)
    if not v:
        return default
    x = v[-1]
    return x - (1 << 32) if x >= 1 << 31 and x < 1 << 32 else x


# ---- frames ----------------------------------------------------------------

# Request body field numbers (proto/weir.proto)
METADATA, CREATE_TOPICS, DELETE_TOPICS, PRODUCE, FETCH, LIST_OFFSETS = \
    10, 11, 12, 13, 14, 15
INIT_PRODUCER_ID = 16


def frame(header, payload=b""):
    return struct.pack(">II", 4 + len(header) + len(payload),
                       len(header)) + header + payload


def request(corr, body_field, body, payload=b""):
    return frame(pb_msg((1, corr), (2, "it"), (body_field, body)), payload)


def read_frame(sock, timeout=10):
    """Returns (response dict, payload) or None when the peer closed."""
    sock.settimeout(timeout)
    head = recv_exact(sock, 8)
    if head is None:
        return None
    flen, hlen = struct.unpack(">II", head)
    rest = recv_exact(sock, flen - 4)
    if rest is None:
        return None
    return pb_parse(rest[:hlen]), rest[hlen:]


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def connect(broker):
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def closed_by_peer(sock, timeout=10):
    """True when the broker closes the connection within timeout."""
    sock.settimeout(timeout)
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


# ---- record batches (Kafka v2 layout), for forged produce payloads -------

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def zigzag(v):
    return pb_varint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


def record_batch(values, ts=None, corrupt_crc=False, producer_id=-1,
                 producer_epoch=-1, base_sequence=-1):
    """A v2 batch of the given values; the producer fields make it an
    idempotent producer's batch (all -1: a plain one)."""
    ts = int(time.time() * 1000) if ts is None else ts
    recs = b""
    for i, v in enumerate(values):
        body = (b"\x00" + zigzag(0) + zigzag(i) + zigzag(-1) + zigzag(len(v))
                + v + zigzag(0))
        recs += zigzag(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, ts, ts,
                            producer_id, producer_epoch, base_sequence,
                            len(values)) + recs
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 1
    after_len = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_len)) + after_len


class Cluster:
    """A controller and brokers 1..3 in a temp dir; kill -9 of everything
    left running on exit."""

    def __init__(self, args=(), prefix="weir-cluster-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.ctl = Controller(data_dir=os.path.join(self.tmp, "controller"))
        self.brokers = {i: cluster_broker(self.ctl, i, self.tmp, args=args)
                        for i in (1, 2, 3)}

    def __enter__(self):
        self.ctl.start()
        for b in self.brokers.values():
            b.start()
        self.wait_alive({1, 2, 3}, timeout=60)
        return self

    def __exit__(self, *exc):
        for b in self.brokers.values():
            if b.proc and b.proc.poll() is None:
                b.kill9()
        if self.ctl.proc and self.ctl.proc.poll() is None:
            self.ctl.kill9()
        if os.environ.get("WEIR_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def live(self, but=()):
        for i, b in self.brokers.items():
            if i not in but and b.proc and b.proc.poll() is None:
                return b
        raise AssertionError("no live broker")

    def state(self, but=()):
        return cluster_state(self.live(but))

    def wait_alive(self, ids, timeout=60, but=()):
        def ok():
            st = self.state(but)
            alive = {i for i, b in st["brokers"].items() if b[2]}
            return st if ids <= alive else None
        return wait_until(f"brokers {sorted(ids)} alive", ok, timeout)


def _descendants():
    """{pid: command line} of the live processes below this one (zombies
    left out), read from /proc."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if rest[0] not in ("Z", "X"):
            kids.setdefault(int(rest[1]), []).append(int(d))
    out = {}
    todo = [os.getpid()]
    while todo:
        for pid in kids.get(todo.pop(), []):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(
                        errors="replace").strip()
            except OSError:
                cmd = "?"
            out[pid] = cmd
            todo.append(pid)
    return out


def kill_leftovers(before, test_name):
    """SIGKILL (by PID) every process below this one that was not running
    before the test, printing a LEFTOVER line for each, and wait (bounded)
    until they are gone, so their ports and data directories are free for
    the next test. Returns how many there were."""
    left = {}
    # freeze first (SIGSTOP), rescanning until nothing new shows up, so a
    # process cannot fork a child we miss while its parent is killed
    for _ in range(20):
        new = {pid: cmd for pid, cmd in _descendants().items()
               if pid not in before and pid not in left}
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        left.update(new)
        time.sleep(0.05)
    for pid, cmd in sorted(left.items()):
        log(f"LEFTOVER {test_name}: pid {pid} still running: {cmd[:300]}")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.time() + 30
    for pid in left:
        while time.time() < deadline:
            try:
                # reap our own children; a Popen that still holds one
                # then sees it as gone
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                pass
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = f.read()
                if st[st.rindex(")") + 2] in "ZX":
                    break
            except OSError:
                break
            time.sleep(0.05)
    return len(left)


def run_main(tests):
    """Run test functions in order; exit non-zero if any failed. After
    each test, every process it started and left running is killed (a
    LEFTOVER line names it), so one failing test cannot make later ones
    fail on ports or data directories. Processes running before a test
    (a broker the whole file shares) are left alone."""
    only = sys.argv[1:]
    failed = 0
    for t in tests:
        if only and t.__name__ not in only:
            continue
        log(f"RUN  {t.__name__}")
        before = set(_descendants())
        t0 = time.time()
        try:
            t()
        except Exception:
            import traceback
            traceback.print_exc()
            log(f"FAIL {t.__name__} ({time.time() - t0:.1f}s)")
            failed += 1
            kill_leftovers(before, t.__name__)
            continue
        kill_leftovers(before, t.__name__)
        log(f"PASS {t.__name__} ({time.time() - t0:.1f}s)")
    sys.exit(1 if failed else 0)
