"""test_daemon_lib.py — shared by tests/integration/test_daemon and test_hotload
(not executable itself, so tests/run.sh does not run it).

Makes exports with the exporter API through the small C helper
`$BUILD/tests/test_srv_models --write-export SPEC BASE VERSION SEED`, starts
build/predictd on a free 127.0.0.1 port, talks real HTTP with http.client,
prints TAP lines, and kills only the daemons it started.
"""
import atexit
import base64
import http.client
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.environ.get("PREDICTD_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BUILD_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
PREDICTD = os.path.join(BUILD_DIR, "predictd")
HELPER = os.path.join(BUILD_DIR, "tests", "test_srv_models")
CENSUS_SPEC = os.path.join(ROOT, "conf", "census.json")
TEST_JSON = os.path.join(ROOT, "data", "census", "test.json")


class Tap:
    """TAP output: ok N - name / not ok N - name, plan at the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        print(("ok" if cond else "not ok") + " %d - %s" % (self.n, name), flush=True)
        if not cond:
            self.failed += 1
            for line in str(detail).splitlines()[:20]:
                print("#   " + line, flush=True)
        return cond

    def comment(self, text):
        print("# " + text, flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


_PORTS_GIVEN = set()


def free_port():
    """A loopback port nothing listens on, never one this test was given before
    (two daemons of one test, or REST and gRPC of one daemon, never collide)."""
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in _PORTS_GIVEN:
            _PORTS_GIVEN.add(port)
            return port


def write_export(spec, base, version, seed):
    """Writes an export (random weights from seed) into base/version."""
    out = subprocess.run([HELPER, "--write-export", spec, base, str(version), str(seed)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError("export helper failed: " + out.stderr)
    return out.stdout.strip()


def stage_export(spec, base, stage, version, seed, edit=None):
    """Writes an export into stage, lets edit(path) change it, renames it
    into base (atomically, as the exporter does)."""
    path = write_export(spec, stage, version, seed)
    if edit:
        edit(path)
    dst = os.path.join(base, str(version))
    os.rename(path, dst)
    return dst


def corrupt_variables(path):
    with open(os.path.join(path, "variables.bin"), "r+b") as f:
        f.truncate(100)


def write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.rename(tmp, path)


class Client:
    """One keep-alive HTTP/1.1 connection to the daemon."""

    def __init__(self, port, timeout=30):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        """Returns (status, headers dict lower-case, body bytes). Reconnects
        once if the server closed a kept-alive connection."""
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                       timeout=self.timeout)
            try:
                data = body
                if isinstance(body, (dict, list)):
                    data = json.dumps(body)
                if isinstance(data, str):
                    data = data.encode()
                self.conn.request(method, path, body=data, headers=headers or {})
                r = self.conn.getresponse()
                payload = r.read()
                hdrs = {k.lower(): v for k, v in r.getheaders()}
                if hdrs.get("connection", "").lower() == "close":
                    self.close()
                return r.status, hdrs, payload
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 1:
                    raise
        raise RuntimeError("unreachable")

    def json(self, method, path, body=None):
        st, h, payload = self.request(method, path, body)
        try:
            doc = json.loads(payload) if payload else None
        except ValueError:
            doc = None
        return st, h, doc

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Daemon:
    """build/predictd on 127.0.0.1:<free port>; stopped at exit."""

    def __init__(self, workdir, args, port=None, env=None):
        self.port = port or free_port()
        self.log_path = os.path.join(workdir, "predictd-%d.log" % self.port)
        self.log = open(self.log_path, "w")
        cmd = [PREDICTD, "--rest_api_host=127.0.0.1", "--rest_api_port=%d" % self.port] + args
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        atexit.register(self.stop)

    def wait_ready(self, timeout=60):
        c = Client(self.port, timeout=5)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                st, _, _ = c.request("GET", "/readyz")
                if st == 200:
                    c.close()
                    return True
            except OSError:
                c.close()
            time.sleep(0.05)
        return False

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL after a generous wait (timeout seconds);
        returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, text, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return True
            time.sleep(0.05)
        return False


def census_instance():
    with open(TEST_JSON) as f:
        return json.loads(f.readline())


def workdir():
    d = tempfile.mkdtemp(prefix="predictd-it-")
    atexit.register(shutil.rmtree, d, True)
    return d


def wait_until(fn, timeout=20, step=0.05):
    """Calls fn until it returns a true value or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


# ------------------------------------------------ added for test_robust_*
def all_stopped(pid):
    """True once every thread of pid is stopped (SIGSTOP takes effect
    asynchronously, after kill returns)."""
    tasks = "/proc/%d/task" % pid
    for tid in os.listdir(tasks):
        try:
            with open(os.path.join(tasks, tid, "stat")) as f:
                if f.read().rpartition(")")[2].split()[0] != "T":
                    return False
        except OSError:
            pass  # a thread that ended meanwhile
    return True


def read_answers(socks, hang):
    """Reads one whole answer on each of socks (raw sockets; Content-Length
    framed). Returns one entry per socket: (status, headers dict lower-case,
    body bytes); (0, {}, b"") for a connection closed first; None for one not
    answered when nothing had arrived on any connection for hang seconds."""
    bufs = {s: b"" for s in socks}
    got = {}
    pending = set(socks)
    while pending:
        r, _, _ = select.select(list(pending), [], [], hang)
        if not r:
            break
        for s in r:
            chunk = b""
            try:
                chunk = s.recv(65536)
            except OSError:
                pass
            if not chunk:
                got[s] = (0, {}, b"")
                pending.discard(s)
                continue
            bufs[s] += chunk
            head, sep, body = bufs[s].partition(b"\r\n\r\n")
            if not sep:
                continue
            hdrs = {}
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                hdrs[k.strip().lower().decode()] = v.strip().decode()
            n = int(hdrs.get("content-length", "0"))
            if len(body) >= n:
                got[s] = (int(head.split(b" ")[1]), hdrs, body[:n])
                bufs[s] = b""
                pending.discard(s)
    return [got.get(s) for s in socks]


def rss_kib(pid):
    """Resident set size of a process in KiB (VmRSS), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def raw_exchange(port, data, timeout=30, body_after=None):
    """Sends data (bytes; a whole request) on a new connection and reads one
    answer. body_after, if given, is sent only after the answer's headers did
    not arrive within 0.2 s (it is never needed for a request the server
    refuses early). Returns (status or None, headers dict lower-case, body
    bytes, closed_without_answer)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    buf = b""
    try:
        try:
            s.sendall(data)
            if body_after:
                s.sendall(body_after)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early and closed; read what it sent
        while b"\r\n\r\n" not in buf:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None, {}, buf, True
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        want = int(hdrs.get("content-length", "-1") or -1)
        body = bytearray(body)  # appended in place: a 20 MB answer must not be
        # copied at every chunk, or the client stalls and the server's
        # connection_timeout_seconds closes it mid-answer
        while want < 0 or len(body) < want:
            try:
                chunk = s.recv(1 << 20)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            body += chunk
        body = bytes(body[:want] if want >= 0 else body)
        return status, hdrs, body, False
    finally:
        s.close()


def corpus_expand(gen):
    """[[text, count], ...] -> bytes (texts are Latin-1)."""
    return b"".join(text.encode("latin-1") * count for text, count in gen)


def corpus_request(case):
    """A case of tests/data/hostile/cases.jsonl as (request bytes sent first,
    bytes sent after or None); see make_cases.py there for the fields."""
    if "raw_b64" in case:
        return base64.b64decode(case["raw_b64"]), None
    if "raw_gen" in case:
        return corpus_expand(case["raw_gen"]), None
    if "gen" in case:
        body = b"".join(text.encode() * count for text, count in case["gen"])
    elif "body_b64" in case:
        body = base64.b64decode(case["body_b64"])
    else:
        body = case.get("body", "").encode()
    path = (corpus_expand(case["path_gen"]) if "path_gen" in case
            else case["path"].encode("latin-1"))
    head = [b"%s %s HTTP/1.1" % (case.get("method", "POST").encode(), path), b"Host: 127.0.0.1",
            b"Connection: close"]
    for k, v in case.get("headers", {}).items():
        head.append(("%s: %s" % (k, v)).encode())
    if case.get("chunked"):
        head.append(b"Transfer-Encoding: chunked")
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 65536]), body[i:i + 65536])
                          for i in range(0, len(body), 65536))
        return b"\r\n".join(head) + b"\r\n\r\n", chunks + b"0\r\n\r\n"
    if "content_length" in case:
        head.append(b"Content-Length: %d" % case["content_length"])
        return b"\r\n".join(head) + b"\r\n\r\n" + body, None
    if body or case.get("method", "POST") == "POST":
        head.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(head) + b"\r\n\r\n", body
