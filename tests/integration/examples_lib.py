"""examples_lib — runs the example commands of the README and the man pages
as they are written (tests/integration/test_readme, test_man).

A Sandbox is a working directory laid out as a source tree: build/ (links to
the binaries), conf/ (a copy), data/census/ (the first rows of the census
files: small, bounded data), models/census/{1700000000,1700000500} (test
exports), build/demo/job/export/census (the same, where `make demo` puts
its export). Each command runs there with only these substitutions, so that
it touches nothing outside and takes seconds:
  /tmp/X -> SANDBOX/tmp/X;  /srv/models/ -> SANDBOX/models/;
  /etc/predictd/ (predictctl's default config, the tokens file) -> SANDBOX/conf/;
  ports 8500, 8501, 8502, 9000 -> free loopback ports;  curl -> curl -sSf (an
  HTTP error fails the example);  the daemon listens on 127.0.0.1.
A daemon example (predictd ...) is started in the background and must get
ready; predictctl examples need the daemon of the config they edit, which is
started for them. Examples that cannot run here are listed by the caller
with the reason (installing packages, root, systemd, fixed ports); any
other example must exit 0 within its time.
"""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import test_daemon_lib as L

BINARIES = ("predict-train", "predict-model", "predictd", "predictctl", "predict-tune",
            "predict-tune-testfn")
ROWS_TRAIN, ROWS_TEST = 3000, 1000


def md_commands(text):
    """The commands of a markdown text's ```sh blocks, continuation lines
    joined, comment lines dropped; a command spans lines while its quotes are
    open. Returns (line number, command) pairs."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        i += 1
        cur, start, cont = "", 0, False
        while i < len(lines) and lines[i].strip() != "```":
            ln = lines[i]
            i += 1
            if not cur and (not ln.strip() or ln.lstrip().startswith("#")):
                continue
            if not cur:
                start = i
            cur = cur + ln.lstrip() if cont else (cur + "\n" + ln if cur else ln)
            cont = cur.endswith("\\")
            if cont:
                cur = cur[:-1].rstrip() + " "
                continue
            try:
                shlex.split(cur, comments=True)
            except ValueError:
                continue  # an open quote: the command goes on
            out.append((start, cur.strip()))
            cur = ""
        i += 1
    return out


def man_commands(src):
    """The commands of a man page source's EXAMPLES section (.nf ... .fi),
    roff escapes undone, continuation lines joined."""
    m = re.search(r"^\.SH EXAMPLES\n(.*?)(?=^\.SH )", src, re.S | re.M)
    if not m:
        return []
    out = []
    for block in re.findall(r"^\.nf\n(.*?)^\.fi", m.group(1), re.S | re.M):
        text = block.replace("\\-", "-").replace("\\e", "\\")
        cur = ""
        for ln in text.split("\n"):
            if not ln.strip() and not cur:
                continue
            cur += ln
            if cur.endswith("\\"):
                cur = cur[:-1].rstrip() + " "
                continue
            if cur.strip():
                out.append(cur.strip())
            cur = ""
    return out


def strip_comment(cmd):
    """cmd without a trailing `# ...` comment (outside quotes)."""
    q = None
    for i, c in enumerate(cmd):
        if q:
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif c == "#" and (i == 0 or cmd[i - 1] in " \t"):
            return cmd[:i].rstrip()
    return cmd


class Sandbox:
    def __init__(self, build_abs, root):
        root = os.path.abspath(root)
        build_abs = os.path.abspath(build_abs)
        self.root = root
        self.build = build_abs
        self.dir = tempfile.mkdtemp(prefix="predictd-examples-")
        self.daemons = {}  # port -> (Popen, command)
        self.ports = {}
        for p in (8500, 8501, 8502, 9000):
            self.ports[p] = L.free_port()
        W = self.dir
        os.makedirs(os.path.join(W, "build"))
        for b in BINARIES:
            os.symlink(os.path.join(build_abs, b), os.path.join(W, "build", b))
        os.symlink(os.path.join(build_abs, "tests"), os.path.join(W, "build", "tests"))
        shutil.copytree(os.path.join(root, "conf"), os.path.join(W, "conf"))
        os.makedirs(os.path.join(W, "data", "census"))
        for name, n in (("adult.data.csv", ROWS_TRAIN), ("adult.test.csv", ROWS_TEST)):
            with open(os.path.join(root, "data", "census", name)) as f, \
                    open(os.path.join(W, "data", "census", name), "w") as g:
                for k, line in enumerate(f):
                    if k >= n:
                        break
                    g.write(line)
        shutil.copy(os.path.join(root, "data", "census", "test.json"),
                    os.path.join(W, "data", "census", "test.json"))
        os.makedirs(os.path.join(W, "tmp"))
        models = os.path.join(W, "models", "census")
        os.makedirs(models)
        for v, seed in ((1700000000, 1), (1700000500, 2)):
            L.write_export(L.CENSUS_SPEC, models, v, seed)
        os.makedirs(os.path.join(W, "build", "demo", "job", "export"))
        os.symlink(models, os.path.join(W, "build", "demo", "job", "export", "census"))
        # the daemon configs name the sandbox's models, port and a stable label
        pj = os.path.join(W, "conf", "predictd.json")
        with open(pj) as f:
            cfg = json.load(f)
        cfg["rest_api_host"] = "127.0.0.1"
        cfg["rest_api_port"] = self.ports[8501]
        cfg["drain_grace_seconds"] = 0
        cfg["models"][0]["base_path"] = models
        cfg["models"][0]["version_labels"] = {"stable": 1700000000}
        with open(pj, "w") as f:
            json.dump(cfg, f, indent=2)
        mc = os.path.join(W, "conf", "models.config")
        with open(mc) as f:
            text = f.read()
        with open(mc, "w") as f:
            f.write(text.replace("/var/lib/predictd/models/census", models))
        self.env = dict(os.environ, PATH=os.path.join(W, "build") + ":" + os.environ["PATH"],
                        OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1", LC_ALL="C")
        self.prelude = []

    def subst(self, cmd):
        W = self.dir
        cmd = re.sub(r"(?<![\w.])/tmp/", W + "/tmp/", cmd)
        cmd = cmd.replace("/srv/models/", W + "/models/")
        cmd = cmd.replace("/etc/predictd/", W + "/conf/")
        for p, q in self.ports.items():
            cmd = re.sub(r"(?<![\d.])%d(?!\d)" % p, str(q), cmd)
        cmd = re.sub(r"(^|[;&|]\s*)curl ", r"\1curl -sSf --max-time 60 ", cmd)
        if re.match(r"(build/)?predictctl ", cmd) and "--config" not in cmd:
            cmd = re.sub(r"^((build/)?predictctl) ", r"\1 --config %s/conf/predictd.json " % W,
                         cmd)
        return cmd

    def _port_of(self, cmd):
        m = re.search(r"--rest_api_port[= ](\d+)", cmd)
        if m:
            return int(m.group(1))
        m = re.search(r"--model_config_file[= ](\S+)", cmd)
        if m:
            path = m.group(1) if os.path.isabs(m.group(1)) else os.path.join(self.dir,
                                                                              m.group(1))
            try:
                with open(path) as f:
                    return int(json.load(f).get("rest_api_port", 8501))
            except (OSError, ValueError):
                pass
        return None

    def start_daemon(self, cmd, timeout=60):
        """Starts a predictd example in the background (one daemon per port:
        the one there before is stopped); True when it answers /readyz."""
        cmd = cmd.rstrip().rstrip("&").rstrip()
        port = self._port_of(cmd)
        if port is None:
            port = self.ports[8501]
            cmd += " --rest_api_port=%d" % port
        if "rest_api_host" not in cmd:
            cmd += " --rest_api_host=127.0.0.1"
        self.stop_daemon(port)
        log = open(os.path.join(self.dir, "predictd-%d.log" % port), "wb")
        p = subprocess.Popen(["sh", "-c", "\n".join(self.prelude + ["exec " + cmd])],
                             cwd=self.dir, env=self.env, stdout=log, stderr=log,
                             start_new_session=True)
        log.close()
        self.daemons[port] = (p, cmd)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=5) as r:
                    if r.status == 200:
                        return True, ""
            except OSError:
                pass
            time.sleep(0.1)
        return False, self.log_tail(port)

    def log_tail(self, port):
        try:
            with open(os.path.join(self.dir, "predictd-%d.log" % port)) as f:
                return f.read()[-1500:]
        except OSError:
            return ""

    def ensure_daemon(self, cmd):
        """The daemon cmd (substituted) runs, restarted if another is on its port."""
        port = self._port_of(cmd)
        cur = self.daemons.get(port)
        if cur and cur[0].poll() is None and cur[1] == cmd:
            return True, ""
        return self.start_daemon(cmd)

    def stop_daemon(self, port):
        cur = self.daemons.pop(port, None)
        if not cur or cur[0].poll() is not None:
            return
        p = cur[0]
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def run(self, cmd, timeout):
        script = "\n".join(["set -e"] + self.prelude + [cmd])
        env = self.env
        if "mpirun" in cmd:  # Open MPI's own allocations would fail a sanitizer build
            env = dict(env, ASAN_OPTIONS="detect_leaks=0")
        return subprocess.run(["bash", "-c", script], cwd=self.dir, env=env,
                              capture_output=True, text=True, timeout=timeout)

    def close(self):
        for port in list(self.daemons):
            self.stop_daemon(port)
        shutil.rmtree(self.dir, ignore_errors=True)


ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def is_assignment(cmd):
    """NAME=VALUE alone (a variable the next examples use), not NAME=V cmd."""
    m = ASSIGN.match(cmd)
    if not m:
        return False
    rest = cmd[m.end():]
    if rest.startswith("$(") and rest.endswith(")"):
        return True
    try:
        return len(shlex.split(cmd)) == 1
    except ValueError:
        return False


def run_examples(tap, where, commands, box, skips, needs=(), timeouts=()):
    """Runs each (label, command) of commands in box, in order: a TAP line
    per command that runs; skips is a list of (regex, reason) of examples
    that cannot run here (each named in a comment); needs a list of (regex,
    daemon command) started before a matching example; timeouts (regex,
    seconds). Returns the count run."""
    ran, skipped = 0, []
    for label, raw in commands:
        cmd = strip_comment(raw)
        if not cmd:
            continue
        short = " ".join(cmd.split())[:90]
        reason = next((r for rx, r in skips if re.search(rx, cmd)), None)
        if reason:
            skipped.append((cmd, reason))
            tap.comment("%s %s: not run here: %s: %s" % (where, label, reason, short))
            continue
        sub = box.subst(cmd)
        if is_assignment(cmd):
            # a variable for the commands after it: checked once, then kept
            r = box.run(sub, 60)
            tap.ok(r.returncode == 0, "%s %s: `%s` runs" % (where, label, short), r.stderr)
            box.prelude.append(sub)
            ran += 1
            continue
        for rx, dcmd in needs:
            if re.search(rx, cmd):
                ok, log = box.ensure_daemon(box.subst(dcmd))
                if not ok:
                    tap.ok(False, "%s %s: the daemon it needs starts (%s)" % (where, label, dcmd),
                           log)
        if re.match(r"(build/)?predictd ", cmd):
            ok, log = box.start_daemon(sub)
            tap.ok(ok, "%s %s: `%s` starts and gets ready" % (where, label, short), log)
            ran += 1
            continue
        limit = next((s for rx, s in timeouts if re.search(rx, cmd)), 300)
        try:
            r = box.run(sub, limit)
            ok, detail = r.returncode == 0, (sub, r.stdout[-800:], r.stderr[-1500:])
        except subprocess.TimeoutExpired:
            ok, detail = False, "%s: no exit within %d s" % (sub, limit)
        tap.ok(ok, "%s %s: `%s` runs" % (where, label, short), detail)
        ran += 1
    return ran, skipped
