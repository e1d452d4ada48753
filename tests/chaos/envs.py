"""Where the chaos harness runs its cluster, and how it injects faults.

ProcessEnv: a quorum of three weir-controllers and three weir-brokers as
local processes. Run as root with iproute2, each broker and each controller
gets its own network namespace on a private bridge, so "cut a broker off"
is its link going down (the same fault as `docker network disconnect`) and
"cut a controller off from the other controllers" is blackhole routes to
their addresses in its namespace and to its address in theirs (brokers
still reach it); without namespaces those scenarios are skipped and said
so. Kill is SIGKILL, stop is SIGTERM, pause SIGSTOP.

ComposeEnv: deploy/docker-compose.yml (started by deploy/compose-up.sh,
which formats the controllers once), with the image built from this build;
faults are docker kill / stop / pause / unpause / network disconnect and
connect, and for a controller cut off from the others the same blackhole
routes inside the containers' network namespaces (nsenter): a member's
voter address is also the one brokers are sent to, so a compose network
cut would cut brokers off too. Both give the harness the same methods.

With TLS + SCRAM the controller runs alone (no SASL between quorum
members). With TLS alone both environments run the quorum over mutual
TLS (docker-compose.tls.yml for compose)."""
import re
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import weirtest  # noqa: E402
from weirtest import (BROKER_BIN, BUILD, CLI_BIN, CONTROLLER_BIN,  # noqa: E402
                      controller_format,
                      log, wait_until)

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
IDS = (1, 2, 3)
CIDS = (1, 2, 3)  # controller quorum members


def applied_history(text):
    """{index: term} from a member's `event=applied from= to= term=` lines
    (an index applied twice with two terms -> the pair in .conflicts)."""
    hist, conflicts = {}, []
    for a, b, t in re.findall(r"event=applied from=(\d+) to=(\d+) term=(\d+)",
                              text):
        for i in range(int(a), int(b) + 1):
            if hist.setdefault(i, int(t)) != int(t):
                conflicts.append((i, hist[i], int(t)))
    return hist, conflicts


def compare_histories(texts):
    """Every member's applied history must agree on the term of every
    index any two applied: returns (indexes compared, [problems])."""
    hs, problems = {}, []
    for j, text in texts.items():
        h, c = applied_history(text)
        hs[j] = h
        problems += [f"controller {j} applied index {i} at terms {a} and "
                     f"{b}" for i, a, b in c[:5]]
    seen = {}
    for j, h in hs.items():
        for i, t in h.items():
            if i in seen and seen[i][1] != t:
                if len(problems) < 20:
                    problems.append(f"index {i}: term {seen[i][1]} on "
                                    f"controller {seen[i][0]}, term {t} on "
                                    f"controller {j}")
            else:
                seen.setdefault(i, (j, t))
    return len(seen), problems


def run(*cmd, timeout=120, check=True, env=None):
    p = subprocess.run([str(c) for c in cmd], capture_output=True,
                       timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited "
                           f"{p.returncode}: {p.stderr.decode()[-1500:]}")
    return p


class Addr:
    """What weirtest.cluster_state needs: an .addr to bootstrap from."""

    def __init__(self, addr):
        self.addr = addr


class Env:
    session_ms = 3000  # the controller's broker session timeout
    problems = ()      # what went wrong in the daemons themselves
    tls_dir = None     # certificates, when the cluster runs TLS

    def make_certs(self, specs=()):
        """A CA and certificates (deploy/tls/make-certs.sh) in a fresh
        directory; every weir CLI started from now on trusts the CA and
        presents the client certificate (mutual TLS)."""
        self.tls_dir = tempfile.mkdtemp(prefix="weir-chaos-certs-")
        run(os.path.join(ROOT, "deploy", "tls", "make-certs.sh"),
            self.tls_dir, *specs)
        os.environ.update(WEIR_CA=os.path.join(self.tls_dir, "ca.pem"),
                          WEIR_CERT=os.path.join(self.tls_dir, "client.pem"),
                          WEIR_KEY=os.path.join(self.tls_dir, "client.key"))

    def drop_certs(self):
        for k in ("WEIR_CA", "WEIR_CERT", "WEIR_KEY", "WEIR_USER",
                  "WEIR_PASSWORD", "WEIR_SASL_PASSWORD"):
            os.environ.pop(k, None)
        if self.tls_dir:
            shutil.rmtree(self.tls_dir, ignore_errors=True)
        if self.scram_dir:
            shutil.rmtree(self.scram_dir, ignore_errors=True)

    scram = False      # SASL/SCRAM logins and ACLs (with TLS, no client
    scram_dir = None   # certificates), users from deploy/scram

    def make_users(self):
        """Users admin and broker with random passwords
        (deploy/scram/make-users.sh); every weir CLI started from now on
        logs in as admin."""
        self.scram_dir = tempfile.mkdtemp(prefix="weir-chaos-users-")
        run(os.path.join(ROOT, "deploy", "scram", "make-users.sh"),
            self.scram_dir)
        with open(os.path.join(self.scram_dir, "admin.env")) as f:
            env = dict(ln.strip().split("=", 1) for ln in f if "=" in ln)
        os.environ.update(env)
        os.environ.pop("WEIR_CERT", None)  # no client certificates
        os.environ.pop("WEIR_KEY", None)

    def tls_args(self, name):
        if not self.tls_dir:
            return []
        d = self.tls_dir
        return ["--tls", "--tls-cert", os.path.join(d, f"{name}.pem"),
                "--tls-key", os.path.join(d, f"{name}.key"), "--tls-ca",
                os.path.join(d, "ca.pem"), "--tls-client-auth",
                "none" if self.scram else "required"]

    def scram_args(self, broker):
        """SASL options of a process (brokers log in as `broker`)."""
        if not self.scram:
            return []
        a = ["--sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512",
             "--authorizer", "true", "--super-users",
             "User:admin;User:broker"]
        if broker:
            return a + ["--sasl-username", "broker"]
        return a + ["--bootstrap-users-file",
                    os.path.join(self.scram_dir, "users")]

    quorum = True

    def controller_ids(self):
        return CIDS if self.quorum else (1,)

    def member_states(self, j):
        """The member_state values ("true"/"false") member j logged since
        its last start, in order (a member starts inactive)."""
        text = self.ctl_log(j)
        start = text.rfind("event=quorum_start")
        return re.findall(r"event=member_state active=(\w+)",
                          text[max(start, 0):])

    def active_controllers(self):
        """Running members whose last member_state line says active."""
        ids = []
        for j in self.controller_ids():
            if not self.controller_running(j):
                continue
            st = self.member_states(j)
            if (st and st[-1] == "true") or not self.quorum:
                ids.append(j)
        return ids

    def active_controller(self):
        ids = self.active_controllers()
        return ids[0] if len(ids) == 1 else None

    def applied_max(self, j):
        """Highest index member j applied or installed (its log)."""
        text = self.ctl_log(j)
        ends = [int(x) for x in re.findall(r"event=applied from=\d+ to=(\d+)",
                                           text)]
        ends += [int(x) for x in re.findall(
            r"event=snapshot_installed index=(\d+)", text)]
        return max(ends, default=0)

    def variant(self):
        if self.scram:
            return "TLS + SCRAM logins and ACLs everywhere"
        return "mutual TLS everywhere" if self.tls else ""

    def cli(self):
        return [CLI_BIN, "--bootstrap", self.bootstrap()]

    def state(self, but=()):
        """`weir cluster` parsed (weirtest.cluster_state), asked of the
        brokers not in `but`."""
        try:
            return weirtest.cluster_state(Addr(self.bootstrap(but)),
                                          timeout=20)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"weir cluster: {e}") from e

    def weir(self, *args, timeout=60, check=True):
        return run(*self.cli(), *args, timeout=timeout, check=check)

    # -- partial partitions: one link cut, the rest up ----------------
    # A node is "b<i>" (broker i), "c<j>" (controller member j) or
    # "clients" (the harness's own CLI processes, on the host's address on
    # the cluster's bridge). Rules are iptables DROP rules inside the first
    # node's own network namespace (never the host's), so their packet
    # counters show that the cut really drops. Subclasses give
    # _node_ip(node) and _in_ns(node) (a command prefix that runs a
    # command in that node's namespace).
    def _ipt(self, n, *args, check=True):
        return run(*self._in_ns(n), "iptables", "-w", *args, check=check)

    def cut_link(self, a, b, one_way=False):
        """Packets between a and b dropped (with one_way, only a -> b:
        b -> a still delivered, and counted by an ACCEPT rule). a must not
        be "clients". Returns the cut, for heal_link and link_counts."""
        ip = self._node_ip(b)
        rules = [("OUTPUT", "-d", ip, "DROP"),
                 ("INPUT", "-s", ip, "ACCEPT" if one_way else "DROP")]
        cut = {"node": a, "ip": ip, "rules": [], "healed": False}
        for chain, flag, addr, target in rules:
            self._ipt(a, "-I", chain, flag, f"{addr}/32", "-j", target)
            cut["rules"].append((chain, flag, addr, target))
        return cut

    def heal_link(self, cut):
        """The cut's rules deleted, and seen gone (once; again is a
        no-op)."""
        if cut["healed"]:
            return
        cut["healed"] = True
        for chain, flag, addr, target in cut["rules"]:
            self._ipt(cut["node"], "-D", chain, flag, f"{addr}/32", "-j",
                      target, check=False)
        left = self.link_counts(cut)
        if left:
            raise AssertionError(f"rules of the cut {cut['node']} -> "
                                 f"{cut['ip']} still there after the heal: "
                                 f"{left}")

    def link_counts(self, cut):
        """{(chain, target): packets} of a cut's rules so far."""
        a, ip, rules = cut["node"], cut["ip"], cut["rules"]
        out = {}
        for chain, _, _, target in rules:
            text = self._ipt(a, "-L", chain, "-v", "-x", "-n").stdout.decode()
            for ln in text.splitlines():
                w = ln.split()
                if len(w) >= 9 and w[2] == target and ip in (w[7], w[8]):
                    out[(chain, target)] = out.get((chain, target), 0) + \
                        int(w[0])
        return out


class ProcessEnv(Env):
    name = "process"

    def __init__(self, tls=False, scram=False):
        self.tls = tls or scram
        self.scram = scram
        self.tmp = tempfile.mkdtemp(prefix="weir-chaos-")
        self.netns = os.geteuid() == 0 and shutil.which("ip") is not None \
            and os.environ.get("WEIR_CHAOS_NETNS", "1") == "1"
        self.procs = {}
        self.logs = {}
        self.problems = []
        self.quorum = not self.scram
        self.cluster_id = f"chaos{os.getpid()}"
        self.cuts = {}
        self.tag = f"wc{os.getpid() % 100000}"
        self.fwd_rule = None
        if self.netns:
            try:
                self._net_up()
            except (RuntimeError, OSError) as e:
                log(f"no network namespaces ({e}); the partition scenario "
                    f"will be skipped")
                self._net_down()
                self.netns = False
        if not self.netns:
            self.host = "127.0.0.1"
            self.ctl_addrs = {j: f"127.0.0.1:{weirtest.free_port()}"
                              for j in self.controller_ids()}
            self.addrs = {i: f"127.0.0.1:{weirtest.free_port()}" for i in IDS}

    def _ns_up(self, ns, h, ip):
        run("ip", "netns", "add", ns)
        run("ip", "link", "add", h, "type", "veth", "peer", "name",
            "eth0", "netns", ns)
        run("ip", "link", "set", h, "master", self.br, "up")
        run("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        run("ip", "-n", ns, "link", "set", "lo", "up")

    # a bridge in this namespace; one namespace and one veth pair per
    # broker and per controller (a single controller, with SCRAM, stays
    # here on the bridge's address)
    def _net_up(self):
        sub = f"10.{random.randint(64, 127)}.{random.randint(0, 255)}"
        self.br = f"{self.tag}br"
        run("ip", "link", "add", self.br, "type", "bridge")
        run("ip", "addr", "add", f"{sub}.1/24", "dev", self.br)
        run("ip", "link", "set", self.br, "up")
        self.host = f"{sub}.1"
        self.addrs = {}
        for i in IDS:
            self._ns_up(f"{self.tag}n{i}", f"{self.tag}h{i}",
                        f"{sub}.{10 + i}")
            self.addrs[i] = f"{sub}.{10 + i}:9092"
        if not self.quorum:
            self.ctl_addrs = {1: f"{sub}.1:{weirtest.free_port()}"}
        else:
            self.ctl_addrs = {}
            for j in CIDS:
                self._ns_up(f"{self.tag}c{j}", f"{self.tag}k{j}",
                            f"{sub}.{20 + j}")
                self.ctl_addrs[j] = f"{sub}.{20 + j}:9090"
        # a Docker engine sets FORWARD to DROP and may filter bridged
        # traffic: let this bridge's own traffic through while we run
        if shutil.which("iptables"):
            rule = ["FORWARD", "-i", self.br, "-o", self.br, "-j", "ACCEPT"]
            if run("iptables", "-I", *rule, check=False).returncode == 0:
                self.fwd_rule = rule

    def _net_down(self):
        if self.fwd_rule:
            run("iptables", "-D", *self.fwd_rule, check=False)
        for i in IDS:
            run("ip", "netns", "del", f"{self.tag}n{i}", check=False)
            run("ip", "link", "del", f"{self.tag}h{i}", check=False)
        for j in CIDS:
            run("ip", "netns", "del", f"{self.tag}c{j}", check=False)
            run("ip", "link", "del", f"{self.tag}k{j}", check=False)
        run("ip", "link", "del", f"{self.tag}br", check=False)

    def bootstrap(self, but=()):
        return ",".join(a for i, a in self.addrs.items() if i not in but)

    def can_isolate(self):
        return self.netns

    def can_cut_controllers(self):
        return self.netns and self.quorum

    def describe(self):
        return ("local processes, " + (
            "three controllers in a quorum" if self.quorum else
            "one controller") + ", " + (
                "a network namespace per broker and controller"
                if self.netns else "loopback")
                + (", " + self.variant() if self.tls else ""))

    def _spawn(self, key, cmd, ns=None):
        logf = open(os.path.join(self.tmp, f"{key}.log"), "ab")
        start = logf.tell()
        if ns:
            cmd = ["ip", "netns", "exec", ns] + cmd
        p = subprocess.Popen(cmd, stdout=logf, stderr=logf)
        self.procs[key], self.logs[key] = p, logf
        path = logf.name
        deadline = time.time() + 20
        while time.time() < deadline:
            if p.poll() is not None:
                raise RuntimeError(f"{key} exited {p.returncode}")
            with open(path, "rb") as f:
                f.seek(start)
                if b"event=started" in f.read():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"{key} did not start")

    def ctl_addr_seen(self, j):
        return self.ctl_addrs[j]

    def ctl_dir(self, j):
        return os.path.join(self.tmp, f"controller{j}")

    def ctl_log(self, j):
        try:
            with open(os.path.join(self.tmp, f"controller{j}.log"),
                      errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def format_controllers(self):
        """Once, before the first start: every member, one cluster id."""
        for j in self.controller_ids():
            if self.quorum:
                run(CONTROLLER_BIN, "--format", "--data-dir", self.ctl_dir(j),
                    "--cluster-id", self.cluster_id)
            else:
                controller_format(self.ctl_dir(j))

    def start_controller(self, j=1):
        args = []
        if self.quorum:
            voters = ",".join(f"{k}@{a}" for k, a in self.ctl_addrs.items())
            args = ["--id", str(j), "--voters", voters, "--cluster-id",
                    self.cluster_id]
        ns = f"{self.tag}c{j}" if self.netns and self.quorum else None
        self._spawn(f"controller{j}", [
            CONTROLLER_BIN, "--listen", self.ctl_addrs[j], "--data-dir",
            self.ctl_dir(j),
            "--session-timeout-ms", str(self.session_ms)] + args
            + self.tls_args("controller") + self.scram_args(False), ns=ns)

    def start(self, i):
        ns = f"{self.tag}n{i}" if self.netns else None
        self._spawn(f"broker{i}", [
            BROKER_BIN, "--id", str(i), "--listen", self.addrs[i],
            "--controller", ",".join(self.ctl_addrs.values()), "--data-dir",
            os.path.join(self.tmp, f"broker{i}"),
            "--replica-lag-time-max-ms", "2000"]
            + self.tls_args(f"broker{i}") + self.scram_args(True), ns=ns)

    def up(self):
        if self.tls:
            def san(addr):
                return f"IP:{addr.rsplit(':', 1)[0]}"
            # one certificate for every member, naming each one's address
            ctl_sans = sorted({san(a) for a in self.ctl_addrs.values()})
            self.make_certs([f"controller={','.join(ctl_sans)}"]
                            + [f"broker{i}={san(a)}"
                               for i, a in self.addrs.items()]
                            + ["client="])
        if self.scram:
            self.make_users()
            with open(os.path.join(self.scram_dir, "broker.env")) as f:
                for ln in f:
                    if ln.startswith("WEIR_SASL_PASSWORD="):
                        os.environ["WEIR_SASL_PASSWORD"] = \
                            ln.strip().split("=", 1)[1]
        self.format_controllers()
        for j in self.controller_ids():
            self.start_controller(j)
        for i in IDS:
            self.start(i)

    def _signal(self, key, sig, wait=True):
        p = self.procs.get(key)
        if p is None or p.poll() is not None:
            return False
        p.send_signal(sig)
        if wait:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
                self.problems.append(f"{key} did not exit within 30 s of "
                                     f"signal {sig}")
            self.logs[key].close()
            if sig == signal.SIGTERM and p.returncode != 0:
                self.problems.append(f"{key} exited {p.returncode} on "
                                     f"SIGTERM (see {key}.log)")
        return True

    def running(self, i):
        p = self.procs.get(f"broker{i}")
        return p is not None and p.poll() is None

    def controller_running(self, j=1):
        p = self.procs.get(f"controller{j}")
        return p is not None and p.poll() is None

    def kill(self, i):
        return self._signal(f"broker{i}", signal.SIGKILL)

    def stop(self, i):
        return self._signal(f"broker{i}", signal.SIGTERM)

    def pause(self, i):
        return self._signal(f"broker{i}", signal.SIGSTOP, wait=False)

    def unpause(self, i):
        return self._signal(f"broker{i}", signal.SIGCONT, wait=False)

    def isolate(self, i):
        run("ip", "link", "set", f"{self.tag}h{i}", "down")

    def heal(self, i):
        run("ip", "link", "set", f"{self.tag}h{i}", "up")

    def kill_controller(self, j=1):
        return self._signal(f"controller{j}", signal.SIGKILL)

    def wipe_controller(self, j):
        """The member's data dir lost (it is down): emptied."""
        shutil.rmtree(self.ctl_dir(j))
        os.makedirs(self.ctl_dir(j))

    def _ctl_ip(self, j):
        return self.ctl_addrs[j].rsplit(":", 1)[0]

    def cut_controller(self, j):
        """Member j cut off from the other members, not from brokers:
        blackhole routes both ways, in their namespaces."""
        self.cuts[j] = []
        for k in CIDS:
            if k == j:
                continue
            for ns, ip in ((f"{self.tag}c{j}", self._ctl_ip(k)),
                           (f"{self.tag}c{k}", self._ctl_ip(j))):
                run("ip", "-n", ns, "route", "add", "blackhole", f"{ip}/32")
                self.cuts[j].append((ns, ip))

    def heal_controller(self, j):
        for ns, ip in self.cuts.pop(j, []):
            run("ip", "-n", ns, "route", "del", "blackhole", f"{ip}/32",
                check=False)

    # -- partial partitions (Env.cut_link) --------------------------------
    def can_cut_links(self):
        return self.netns and self.quorum and shutil.which("iptables") \
            is not None

    def _node_ip(self, n):
        if n == "clients":
            return self.host  # the bridge's address, where the CLIs run
        i = int(n[1:])
        if n[0] == "b":
            return self.addrs[i].rsplit(":", 1)[0]
        return self._ctl_ip(i)

    def _in_ns(self, n):
        i = int(n[1:])
        return ["ip", "netns", "exec",
                f"{self.tag}{'n' if n[0] == 'b' else 'c'}{i}"]

    def restart(self, i):
        self.start(i)

    def down(self):
        """SIGTERM for every daemon still running (a clean stop must exit
        0, leak checks included in a sanitizer build), then the logs are
        searched for sanitizer reports."""
        # brokers first: their controlled shutdown needs the controller
        for key in sorted(self.procs,
                          key=lambda k: k.startswith("controller")):
            p = self.procs[key]
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                self._signal(key, signal.SIGTERM)
        for f in self.logs.values():
            f.close()
        for key, f in self.logs.items():
            with open(f.name, "rb") as fh:
                text = fh.read()
            for mark in (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer",
                         b"runtime error:"):
                if mark in text:
                    self.problems.append(f"{key}.log holds "
                                         f"'{mark.decode()}'")
        if self.netns:
            self._net_down()
        self.drop_certs()
        if os.environ.get("WEIR_KEEP_TMP") != "1" and not self.problems:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            log(f"logs kept in {self.tmp}")


class ComposeEnv(Env):
    """deploy/docker-compose.yml under its own project name."""
    name = "compose"
    compose_file = os.path.join(ROOT, "deploy", "docker-compose.yml")

    def __init__(self, tls=False, scram=False):
        self.tls = tls or scram
        self.scram = scram
        self.project = f"weirchaos{os.getpid()}"
        self.image = f"weir-chaos:{os.getpid()}"
        self.addrs = {i: f"127.0.0.1:{9091 + i}" for i in IDS}
        self.ips = {i: f"172.28.0.{10 + i}" for i in IDS}
        self.network = f"{self.project}_weir"
        self.problems = []
        self.quorum = not self.scram
        self.ctl_ips = {j: f"172.28.0.{10 * j}" for j in CIDS}
        self.cuts = {}

    @staticmethod
    def available():
        """None if a Docker engine and docker-compose answer, else why
        not."""
        if shutil.which("docker") is None or \
                shutil.which("docker-compose") is None:
            return "docker or docker-compose not installed"
        if run("docker", "info", check=False, timeout=30).returncode != 0:
            return "no Docker engine answers"
        ldd = run("ldd", os.path.join(BUILD, "broker", "weir-broker")).stdout
        if b"libasan" in ldd or b"libubsan" in ldd:
            return "sanitizer build (the image holds plain binaries)"
        return None

    def describe(self):
        return ("docker-compose (deploy/docker-compose.yml, " +
                ("three controllers in a quorum" if self.quorum else
                 "one controller") +
                (" + docker-compose.tls.yml" if self.tls else "") +
                (" + docker-compose.scram.yml" if self.scram else "") +
                (": " + self.variant() + ")" if self.tls else ")"))

    def bootstrap(self, but=()):
        return ",".join(a for i, a in self.addrs.items() if i not in but)

    def can_isolate(self):
        return True

    def can_cut_controllers(self):
        return self.quorum and shutil.which("nsenter") is not None

    def can_cut_links(self):
        return self.quorum and shutil.which("nsenter") is not None and \
            shutil.which("iptables") is not None

    def _node_ip(self, n):
        if n == "clients":
            # the host's address on the compose network: brokers advertise
            # their container addresses and the host reaches them directly
            p = self.docker("network", "inspect", "-f",
                            "{{(index .IPAM.Config 0).Gateway}}",
                            self.network)
            gw = p.stdout.decode().strip()
            return gw or "172.28.0.1"
        i = int(n[1:])
        return self.ips[i] if n[0] == "b" else self.ctl_ips[i]

    def _in_ns(self, n):
        i = int(n[1:])
        name = self.container(i) if n[0] == "b" else self.ctl_container(i)
        pid = self.docker("inspect", "-f", "{{.State.Pid}}",
                          name).stdout.decode().strip()
        return ["nsenter", "-t", pid, "-n"]

    def compose(self, *args, timeout=300, check=True):
        env = dict(os.environ, WEIR_IMAGE=self.image)
        files = ["-f", self.compose_file]
        if self.tls:
            files += ["-f", self.compose_file.replace(".yml", ".tls.yml")]
            env["WEIR_TLS_DIR"] = self.tls_dir
        if self.scram:
            files += ["-f", self.compose_file.replace(".yml", ".scram.yml")]
            env["WEIR_SCRAM_DIR"] = self.scram_dir
        return run("docker-compose", "-p", self.project, *files, *args,
                   timeout=timeout, check=check, env=env)

    def container(self, i):
        return f"{self.project}_broker{i}_1"

    def up(self):
        log("building the image")
        env = dict(os.environ, NO_BUILD="1", BUILD_DIR=BUILD, IMAGE=self.image)
        run(os.path.join(ROOT, "deploy", "image", "build-image.sh"), env=env,
            timeout=600)
        if self.tls:
            self.make_certs()
        if self.scram:
            self.make_users()
        # formats the controllers once, then `up -d` (with TLS: controller1
        # alone and the brokers)
        env = dict(os.environ, WEIR_IMAGE=self.image,
                   COMPOSE_PROJECT_NAME=self.project,
                   WEIR_CLUSTER_ID=self.project)
        args = []
        if self.tls:
            env["WEIR_TLS_DIR"] = self.tls_dir
            args = ["--tls"]
        if self.scram:
            env["WEIR_SCRAM_DIR"] = self.scram_dir
            args = ["--scram"]
        run(os.path.join(ROOT, "deploy", "compose-up.sh"), *args, env=env,
            timeout=300)

    def docker(self, *args, check=True):
        return run("docker", *args, check=check, timeout=60)

    def _state(self, name):
        p = self.docker("inspect", "-f",
                        "{{.State.Running}} {{.State.Paused}}", name,
                        check=False)
        return p.stdout.decode().split() if p.returncode == 0 else []

    def running(self, i):
        return self._state(self.container(i))[:1] == ["true"]

    def ctl_addr_seen(self, j):
        return f"{self.ctl_ips[j]}:9090"

    def ctl_container(self, j):
        return f"{self.project}_controller{j}_1"

    def controller_running(self, j=1):
        return self._state(self.ctl_container(j))[:1] == ["true"]

    def ctl_log(self, j):
        p = self.docker("logs", self.ctl_container(j), check=False)
        return (p.stdout + p.stderr).decode(errors="replace")

    def kill(self, i):
        self.docker("kill", self.container(i))
        return True

    def _exit_code(self, name):
        p = self.docker("inspect", "-f", "{{.State.ExitCode}}", name,
                        check=False)
        return p.stdout.decode().strip()

    def stop(self, i):
        self.docker("stop", "-t", "20", self.container(i))
        rc = self._exit_code(self.container(i))
        if rc != "0":
            self.problems.append(f"{self.container(i)} exited {rc} on "
                                 f"docker stop")
        return True

    def pause(self, i):
        self.docker("pause", self.container(i))
        return True

    def unpause(self, i):
        self.docker("unpause", self.container(i))
        return True

    def isolate(self, i):
        self.docker("network", "disconnect", self.network, self.container(i))

    def heal(self, i):
        self.docker("network", "connect", "--ip", self.ips[i], self.network,
                    self.container(i))

    def kill_controller(self, j=1):
        self.docker("kill", self.ctl_container(j))
        return True

    def start_controller(self, j=1):
        self.docker("start", self.ctl_container(j))

    def wipe_controller(self, j):
        """The member's volume lost (it is down): emptied in place, from
        the host."""
        p = self.docker("volume", "inspect", "-f", "{{.Mountpoint}}",
                        f"{self.project}_controller{j}-data")
        mnt = p.stdout.decode().strip()
        for name in os.listdir(mnt):
            path = os.path.join(mnt, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)

    def _nsenter(self, j, *cmd, check=True):
        pid = self.docker("inspect", "-f", "{{.State.Pid}}",
                          self.ctl_container(j)).stdout.decode().strip()
        return run("nsenter", "-t", pid, "-n", *cmd, check=check)

    def cut_controller(self, j):
        """Member j cut off from the other members, not from brokers:
        blackhole routes both ways inside the containers' namespaces."""
        self.cuts[j] = []
        for k in CIDS:
            if k == j:
                continue
            for c, ip in ((j, self.ctl_ips[k]), (k, self.ctl_ips[j])):
                self._nsenter(c, "ip", "route", "add", "blackhole",
                              f"{ip}/32")
                self.cuts[j].append((c, ip))

    def heal_controller(self, j):
        for c, ip in self.cuts.pop(j, []):
            self._nsenter(c, "ip", "route", "del", "blackhole", f"{ip}/32",
                          check=False)

    def restart(self, i):
        self.docker("start", self.container(i))

    def down(self):
        if os.environ.get("WEIR_KEEP_TMP") == "1":
            for s in [f"controller{j}" for j in self.controller_ids()] + [
                    "broker1", "broker2", "broker3"]:
                p = self.compose("logs", "--no-color", "--tail", "200", s,
                                 check=False)
                log(f"--- {s} ---\n{p.stdout.decode()[-20000:]}")
        # a clean stop of everything (brokers before the controller they
        # depend on) must exit 0
        self.compose("stop", "-t", "20", *[f"broker{i}" for i in IDS],
                     check=False)
        self.compose("stop", "-t", "20", check=False)
        for name in [self.container(i) for i in IDS] + [
                self.ctl_container(j) for j in self.controller_ids()]:
            rc = self._exit_code(name)
            if rc != "0":
                self.problems.append(f"{name} exited {rc} on docker-compose "
                                     f"stop")
        self.compose("down", "-v", check=False)
        run("docker", "image", "rm", self.image, check=False)
        self.drop_certs()


def wait_alive(env, ids, timeout):
    def ok():
        st = env.state()
        alive = {i for i, b in st["brokers"].items() if b[2]}
        return st if set(ids) <= alive else None
    return wait_until(f"brokers {sorted(ids)} alive", ok, timeout, step=0.5)
