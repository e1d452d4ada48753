"""Test certificates made with the openssl command: a CA, a second CA that
signs nothing the brokers use, a broker certificate for 127.0.0.1 and
localhost, one for another host name only, an expired one, and a client
certificate for mutual TLS. EC P-256 keys, so it takes well under a
second."""
import os
import subprocess


def _run(*args, cwd):
    p = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True,
                       timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {p.stderr.decode()}")


def _key_and_csr(d, name, cn):
    _run("req", "-new", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)


def _ca(d, name):
    _run("req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key",
         "-out", f"{name}.pem", "-days", "3", "-subj", f"/CN=Weir test {name}",
         cwd=d)


def _sign(d, name, cn, san, ca="ca", days="3"):
    _key_and_csr(d, name, cn)
    ext = os.path.join(d, f"{name}.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n")
        if san:
            f.write(f"subjectAltName={san}\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey",
         f"{ca}.key", "-CAcreateserial", "-out", f"{name}.pem", "-days", days,
         "-extfile", ext, cwd=d)


def sign(d, name, cn, san, ca="ca"):
    """Another certificate under d (name.pem, name.key) signed by ca."""
    _sign(d, name, cn, san, ca=ca)


def _expired(d, name, cn, san):
    """Signed through `openssl ca`, which takes explicit dates."""
    _key_and_csr(d, name, cn)
    db = os.path.join(d, "cadb")
    os.makedirs(db, exist_ok=True)
    open(os.path.join(db, "index.txt"), "w").close()
    with open(os.path.join(db, "serial"), "w") as f:
        f.write("1000\n")
    cnf = os.path.join(d, "ca.cnf")
    with open(cnf, "w") as f:
        f.write(f"""[ca]
default_ca = test
[test]
dir = {db}
database = $dir/index.txt
serial = $dir/serial
new_certs_dir = $dir
default_md = sha256
policy = any
copy_extensions = none
x509_extensions = ext
[any]
commonName = supplied
[ext]
basicConstraints = CA:FALSE
subjectAltName = {san}
""")
    _run("ca", "-batch", "-config", cnf, "-cert", "ca.pem", "-keyfile",
         "ca.key", "-in", f"{name}.csr", "-out", f"{name}.pem", "-startdate",
         "20200101000000Z", "-enddate", "20200102000000Z", "-notext", cwd=d)


def make(d):
    """All certificates under d; returns {name: path}."""
    os.makedirs(d, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "other-ca")
    _sign(d, "broker", "broker", "IP:127.0.0.1,DNS:localhost")
    _sign(d, "wrong-host", "broker", "DNS:other.example")
    _expired(d, "expired", "broker", "IP:127.0.0.1,DNS:localhost")
    _sign(d, "alice", "alice", None)
    _sign(d, "mallory", "mallory", None, ca="other-ca")
    out = {}
    for n in ("ca", "other-ca", "broker", "wrong-host", "expired", "alice",
              "mallory"):
        out[n] = os.path.join(d, f"{n}.pem")
        out[n + ".key"] = os.path.join(d, f"{n}.key")
    return out
