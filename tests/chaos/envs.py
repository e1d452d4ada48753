"""Where the chaos harness runs its cluster, and how it injects faults.

ProcessEnv: a weir-controller and three weir-brokers as local processes.
Run as root with iproute2, each broker gets its own network namespace on a
private bridge, so "cut a broker off" is its link going down (the same
fault as `docker network disconnect`); without that the partition scenario
is skipped and said so. Kill is SIGKILL, stop is SIGTERM, pause SIGSTOP.

ComposeEnv: deploy/docker-compose.yml, with the image built from this
build; faults are docker kill / stop / pause / unpause / network disconnect
and connect. Both give the harness the same methods."""
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
            self.ctl_addr = f"127.0.0.1:{weirtest.free_port()}"
            self.addrs = {i: f"127.0.0.1:{weirtest.free_port()}" for i in IDS}

    # a bridge in this namespace with the controller on it; one namespace
    # and one veth pair per broker
    def _net_up(self):
        sub = f"10.{random.randint(64, 127)}.{random.randint(0, 255)}"
        self.br = f"{self.tag}br"
        run("ip", "link", "add", self.br, "type", "bridge")
        run("ip", "addr", "add", f"{sub}.1/24", "dev", self.br)
        run("ip", "link", "set", self.br, "up")
        self.host = f"{sub}.1"
        self.ctl_addr = f"{sub}.1:{weirtest.free_port()}"
        self.addrs = {}
        for i in IDS:
            ns, h = f"{self.tag}n{i}", f"{self.tag}h{i}"
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", h, "type", "veth", "peer", "name",
                "eth0", "netns", ns)
            run("ip", "link", "set", h, "master", self.br, "up")
            run("ip", "-n", ns, "addr", "add", f"{sub}.{10 + i}/24", "dev",
                "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            self.addrs[i] = f"{sub}.{10 + i}:9092"
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
        run("ip", "link", "del", f"{self.tag}br", check=False)

    def bootstrap(self, but=()):
        return ",".join(a for i, a in self.addrs.items() if i not in but)

    def can_isolate(self):
        return self.netns

    def describe(self):
        return ("local processes, " + ("a network namespace per broker"
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

    def start_controller(self):
        controller_format(os.path.join(self.tmp, "controller"))
        self._spawn("controller", [
            CONTROLLER_BIN, "--listen", self.ctl_addr, "--data-dir",
            os.path.join(self.tmp, "controller"),
            "--session-timeout-ms", str(self.session_ms)]
            + self.tls_args("controller") + self.scram_args(False))

    def start(self, i):
        ns = f"{self.tag}n{i}" if self.netns else None
        self._spawn(f"broker{i}", [
            BROKER_BIN, "--id", str(i), "--listen", self.addrs[i],
            "--controller", self.ctl_addr, "--data-dir",
            os.path.join(self.tmp, f"broker{i}"),
            "--replica-lag-time-max-ms", "2000"]
            + self.tls_args(f"broker{i}") + self.scram_args(True), ns=ns)

    def up(self):
        if self.tls:
            def san(addr):
                return f"IP:{addr.rsplit(':', 1)[0]}"
            self.make_certs([f"controller={san(self.ctl_addr)}"]
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
        self.start_controller()
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

    def controller_running(self):
        p = self.procs.get("controller")
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

    def kill_controller(self):
        return self._signal("controller", signal.SIGKILL)

    def restart(self, i):
        self.start(i)

    def down(self):
        """SIGTERM for every daemon still running (a clean stop must exit
        0, leak checks included in a sanitizer build), then the logs are
        searched for sanitizer reports."""
        # brokers first: their controlled shutdown needs the controller
        for key in sorted(self.procs, key=lambda k: k == "controller"):
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
        return ("docker-compose (deploy/docker-compose.yml" +
                (" + docker-compose.tls.yml" if self.tls else "") +
                (" + docker-compose.scram.yml" if self.scram else "") +
                (": " + self.variant() + ")" if self.tls else ")"))

    def bootstrap(self, but=()):
        return ",".join(a for i, a in self.addrs.items() if i not in but)

    def can_isolate(self):
        return True

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
        self.compose("up", "-d")

    def docker(self, *args, check=True):
        return run("docker", *args, check=check, timeout=60)

    def _state(self, name):
        p = self.docker("inspect", "-f",
                        "{{.State.Running}} {{.State.Paused}}", name,
                        check=False)
        return p.stdout.decode().split() if p.returncode == 0 else []

    def running(self, i):
        return self._state(self.container(i))[:1] == ["true"]

    def controller_running(self):
        return self._state(f"{self.project}_controller_1")[:1] == ["true"]

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

    def kill_controller(self):
        self.docker("kill", f"{self.project}_controller_1")
        return True

    def start_controller(self):
        self.docker("start", f"{self.project}_controller_1")

    def restart(self, i):
        self.docker("start", self.container(i))

    def down(self):
        if os.environ.get("WEIR_KEEP_TMP") == "1":
            for s in ("controller", "broker1", "broker2", "broker3"):
                p = self.compose("logs", "--no-color", "--tail", "200", s,
                                 check=False)
                log(f"--- {s} ---\n{p.stdout.decode()[-20000:]}")
        # a clean stop of everything (brokers before the controller they
        # depend on) must exit 0
        self.compose("stop", "-t", "20", check=False)
        for name in [self.container(i) for i in IDS] + [
                f"{self.project}_controller_1"]:
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
