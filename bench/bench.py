#!/usr/bin/env python3
"""bench.py — predictd's benchmark harness (run by bench/run.sh, `make bench`).

Takes every figure of issue 6 next to a ceiling measured in the same run on
the same machine, prints a table and writes bench/results.json:

  1 single-instance predict over keep-alive HTTP (wrk -c16 / -c64) next to
    nginx answering a fixed body of the same size (and a bare libmicrohttpd
    server doing the same): req/s, p50, p99, p99.9, server CPU per request
  2 batches of 1, 10, 100, 1000 instances: instances/s and latency
  3 cross-request batching on / off (when the daemon has the switch) and
    inference on worker threads vs on the HTTP threads
  4 rows vs columns; JSON vs CSV vs EXAMPLE receivers
  5 version load time (directory appears -> AVAILABLE) and p99 during a swap
  6 memory: RSS idle, after 100k requests, extra RSS per loaded version
  7 training: census examples/s and time to the accuracy target; next to
    scikit-learn's MLPClassifier((100, 70, 48, 34)) at batch 256 on one
    thread (bench/mlp_baseline.py, rounds interleaved): examples per
    CPU-second and their ratio (goal >= 2.5x, issue 37); the custom
    estimator's graph of the same model next to it (alternating rounds, the
    ratio of examples/s, goal >= 0.95, issue 36); per rank with mpirun -np 2
    over one process, batch 40 and 256 (goal >= 0.9, issue 37)
  8 the compute ceiling: forward pass alone by batch size, OpenBLAS sgemm
    peak, the runtime's stages, instructions per request (callgrind)
  11 rollouts: a traffic split, shadow at 0% and logging at 0% against a
    plain daemon, side by side
 12 many models: BENCH_MANY_MODELS (10,000) small models in one daemon: time
    until all are AVAILABLE, RSS, idle CPU over 10 s, req/s on one of them
    next to a one-model daemon
 14 tree serving: a census BoostedTreesClassifier of 100 random complete
    trees of depth 6 (synthetic, see trees_model) and conf/census_trees.json
    trained by predict-train, through predictd: instances per CPU-second at
    batch 1000 (goal 300k), single-instance req/s; the runtime alone on the
    synthetic one (bench_forward, callgrind instructions per instance)
 13 overload: with max_queue_depth BENCH_QUEUE_DEPTH (32), alone and with
    max_queue_wait_ms BENCH_QUEUE_WAIT_MS (2), constant-rate load
    (bench/bench_load, wrk2-style) at 0.1x..3x the measured capacity:
    answered req/s, share of 429, p50/p99 of the accepted, p99 of the 429s,
    the daemon's CPU time per answer, and (with max_queue_wait_ms) the
    adaptive admission limit after each run
 17 batch prediction: predict-model batch-predict on adult.test.csv x4 at
    batch 1000 from CSV and from TFRecord, 1 rank and mpirun -np 2:
    instances per CPU-second (process and children) and per second, next to
    group 2's daemon batch-1000 figure of the same run

 18 explanations: census wide & deep, one instance whose 13 inputs all differ
    from the baseline, through predict-model explain (in process): exact
    Shapley, sampled Shapley (pathCount 10, 50), integrated gradients
    (stepCount 50, 100); the census trees model of group 14 by TreeSHAP (its
    logit) and by enumeration (its probability): explanations per second per
    core, model rows each
 19 monitoring: two daemons on one export with its training statistics,
    one monitoring skew and drift at sample rate 1, their wrk runs (single
    instance, keep-alive) alternating: the req/s ratio (monitored / plain),
    instructions per request of each (callgrind)
 20 gRPC: one census instance as TF Serving's gRPC Predict and as REST /v1
    :predict on one daemon (--port), from the same Python client
    (bench/bench_grpc.py, run by Debian's python3 with python3-grpcio), runs
    alternating: calls/s and server CPU per call, and their ratio (goal:
    gRPC CPU per call <= 1.2x REST's, issue 38)

Server and load generator run pinned to different CPUs when there are two
or more. Every figure is the median of RUNS runs (default 3). A figure that
cannot be taken is reported with the reason; the harness never fails on one.
Environment: BUILD (build dir), BENCH_RUNS, BENCH_SECONDS (wrk duration),
BENCH_ONLY (comma-separated group numbers; the other groups of an existing
bench/results.json are kept), BENCH_RESULTS (where the results are written
and merged; default bench/results.json).
Only Python's standard library; only 127.0.0.1.
"""
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import base64
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_ir  # noqa: E402  (instructions per request of a server, callgrind)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
RUNS = max(1, int(os.environ.get("BENCH_RUNS", "3")))
SECONDS = max(1, int(os.environ.get("BENCH_SECONDS", "4")))
ONLY = {s.strip() for s in os.environ.get("BENCH_ONLY", "").split(",") if s.strip()}
CENSUS = os.path.join(ROOT, "data", "census")
SPEC = os.path.join(ROOT, "conf", "census.json")
PREDICTD = os.path.join(BUILD, "predictd")
TRAIN = os.path.join(BUILD, "predict-train")
BENCH_FORWARD = os.path.join(BUILD, "bench", "bench_forward")
BENCH_MHD = os.path.join(BUILD, "bench", "bench_mhd")
BENCH_GRPC_ECHO = os.path.join(BUILD, "bench", "bench_grpc_echo")

TMP = tempfile.mkdtemp(prefix="predictd-bench-")
STARTED = []  # (Popen) we started; killed by pid at exit


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------------ machine

def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    cpus = sorted(os.sched_getaffinity(0))
    return {
        "cpu": cpu,
        "cpus_online": os.cpu_count(),
        "cpus_usable": len(cpus),
        "memory_mb": mem,
        "kernel": platform.release(),
        "loadavg_start": os.getloadavg()[0],
    }


CPUS = sorted(os.sched_getaffinity(0))
if len(CPUS) >= 2:
    SERVER_CPU, LOAD_CPU = str(CPUS[0]), str(CPUS[1])
    PINNING = "server on CPU %s, load generator on CPU %s" % (SERVER_CPU, LOAD_CPU)
else:
    SERVER_CPU = LOAD_CPU = None
    PINNING = "one CPU: server and load generator share it (no pinning)"


def pinned(cpu, argv):
    if cpu is not None and shutil.which("taskset"):
        return ["taskset", "-c", cpu] + argv
    return argv


# ------------------------------------------------------------------ helpers

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(method, url, body=None, timeout=5):
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError):
        return None, b""


def start(argv, log_path, cpu=SERVER_CPU):
    f = open(log_path, "wb")
    p = subprocess.Popen(pinned(cpu, argv), stdout=f, stderr=subprocess.STDOUT,
                         start_new_session=True)
    f.close()
    STARTED.append(p)
    return p


def stop(p):
    if p is None or p.poll() is not None:
        return
    try:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(timeout=10)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def version_state(port, model, version=None):
    url = "http://127.0.0.1:%d/v1/models/%s" % (port, model)
    if version is not None:
        url += "/versions/%d" % version
    code, body = http("GET", url, timeout=2)
    if code != 200:
        return {}
    try:
        st = json.loads(body)["model_version_status"]
    except (ValueError, KeyError):
        return {}
    return {int(v["version"]): v["state"] for v in st}


def wait_available(port, model, version=None, timeout=20.0, step=0.002):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        st = version_state(port, model, version)
        if version is None and "AVAILABLE" in st.values():
            return True
        if version is not None and st.get(version) == "AVAILABLE":
            return True
        time.sleep(step)
    return False


class Daemon:
    """predictd on a free port, pinned, for the models in base_paths."""

    def __init__(self, base=None, model="census", flags=(), config=None, name="predictd"):
        self.port = free_port()
        self.model = model
        self.log = os.path.join(TMP, "%s-%d.log" % (name, self.port))
        argv = [PREDICTD, "--rest_api_host=127.0.0.1", "--rest_api_port=%d" % self.port]
        if config:
            argv.append("--model_config_file=%s" % config)
        else:
            argv += ["--model_name=%s" % model, "--model_base_path=%s" % base]
        argv += list(flags)
        self.p = start(argv, self.log)
        if not wait_available(self.port, model, timeout=20):
            tail = ""
            try:
                with open(self.log, errors="replace") as f:
                    tail = f.read()[-600:]
            except OSError:
                pass
            self.close()
            raise RuntimeError("predictd did not serve %s: %s" % (model, tail.strip()))

    def url(self, verb=":predict"):
        return "http://127.0.0.1:%d/v1/models/%s%s" % (self.port, self.model, verb)

    def rss_kb(self):
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def close(self):
        stop(self.p)


# ------------------------------------------------------------------ wrk

WRK_LUA = r"""
wrk.method = "POST"
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
-- BENCH_HEADERS: more headers, "Name: value" a line (they win over the above)
for line in (os.getenv("BENCH_HEADERS") or ""):gmatch("[^\n]+") do
  local k, v = line:match("^([^:]+):%s*(.*)$")
  if k then wrk.headers[k] = v end
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d errors=%d non2xx=%d p50=%d p99=%d p999=%d\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout,
    e.status, latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
"""


def cpu_seconds(pid):
    """User + system CPU time of process pid (all its threads), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def wrk(url, body_path, conns, seconds=None, pid=None, headers=None):
    """One wrk run; returns a dict or raises. With pid, also the server's CPU
    time per request (a figure that other work on the machine moves much
    less than req/s). headers: more request headers (a dict)."""
    seconds = seconds or SECONDS
    cpu0 = cpu_seconds(pid) if pid else None
    lua = os.path.join(TMP, "post.lua")
    if not os.path.exists(lua):
        with open(lua, "w") as f:
            f.write(WRK_LUA)
    argv = pinned(LOAD_CPU, ["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds,
                             "--timeout", "10s", "-s", lua, url])
    env = dict(os.environ, BENCH_BODY=body_path,
               BENCH_HEADERS="".join("%s: %s\n" % kv for kv in (headers or {}).items()))
    out = subprocess.run(argv, env=env, capture_output=True, text=True,
                         timeout=seconds + 30).stdout
    m = re.search(r"BENCH requests=(\d+) duration_us=(\d+) errors=(\d+) non2xx=(\d+) "
                  r"p50=(\d+) p99=(\d+) p999=(\d+)", out)
    if not m:
        raise RuntimeError("wrk gave no figures: %s" % out[-300:])
    req, dur, err, non2xx, p50, p99, p999 = (int(x) for x in m.groups())
    r = {"rps": req / (dur / 1e6), "requests": req, "errors": err, "non2xx": non2xx,
         "p50_ms": p50 / 1000.0, "p99_ms": p99 / 1000.0, "p999_ms": p999 / 1000.0}
    cpu1 = cpu_seconds(pid) if pid else None
    if cpu0 is not None and cpu1 is not None and req:
        r["cpu_us_per_request"] = (cpu1 - cpu0) * 1e6 / req
    return r


def summarize(rs):
    """Medians of several wrk runs, plus every run's req/s."""
    out = {k: median([r[k] for r in rs]) for k in ("rps", "p50_ms", "p99_ms", "p999_ms")}
    cpu = median([r.get("cpu_us_per_request") for r in rs])
    if cpu is not None:
        out["cpu_us_per_request"] = cpu
    out["runs"] = len(rs)
    out["errors"] = sum(r["errors"] + r["non2xx"] for r in rs)
    out["rps_all"] = [round(r["rps"]) for r in rs]
    return out


def wrk_median(url, body_path, conns, runs=None, seconds=None, pid=None):
    runs = runs or RUNS
    return summarize([wrk(url, body_path, conns, seconds, pid) for _ in range(runs)])


# ------------------------------------------------------------------ bodies

def census_columns():
    with open(SPEC) as f:
        spec = json.load(f)
    unused = set(spec.get("unused_columns", []))
    label = spec["label"]["column"]
    return [(c["name"], c["type"]) for c in spec["columns"]], unused, label


def csv_instances(n):
    """n JSON instances (dicts) and n CSV rows (without label) from adult.test.csv,
    shaped like data/census/test.json (strings keep their leading space)."""
    cols, unused, label = census_columns()
    insts, rows = [], []
    with open(os.path.join(CENSUS, "adult.test.csv")) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            vals = line.split(",")
            if len(vals) != len(cols):
                continue
            d = {}
            for (name, typ), v in zip(cols, vals):
                if name in unused or name == label:
                    continue
                d[name] = int(v) if typ in ("int", "float") and v.strip().lstrip("-").isdigit() \
                    else (float(v) if typ in ("int", "float") else v)
            insts.append(d)
            rows.append(",".join(vals[:-1]) if cols[-1][0] == label else line)
            if len(insts) == n:
                break
    return insts, rows


def tutorial_instance():
    with open(os.path.join(CENSUS, "test.json")) as f:
        return json.loads(f.read())


def write_body(name, obj):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(json.dumps(obj))
    return path


def rows_body(n):
    if n == 1:
        return {"instances": [tutorial_instance()]}
    return {"instances": csv_instances(n)[0]}


def columns_body(n):
    insts = [tutorial_instance()] if n == 1 else csv_instances(n)[0]
    return {"inputs": {k: [d[k] for d in insts] for k in insts[0]}}


def pb_varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_field(num, payload):
    return pb_varint((num << 3) | 2) + pb_varint(len(payload)) + payload


def tf_example(d, cols):
    """A serialized tf.Example (runtime/data/example.proto) of instance d."""
    feats = b""
    types = dict(cols)
    for k, v in d.items():
        if types.get(k) == "string":
            value = pb_field(1, pb_field(1, str(v).encode()))            # bytes_list
        else:
            value = pb_field(3, pb_field(1, pb_varint(int(v))))           # int64_list, packed
        entry = pb_field(1, k.encode()) + pb_field(2, value)
        feats += pb_field(1, entry)
    return pb_field(1, feats)


# ------------------------------------------------------------------ models

def train(job, spec=SPEC, steps=None):
    argv = [TRAIN, "--spec", spec, "--train-files", os.path.join(CENSUS, "adult.data.csv"),
            "--eval-files", os.path.join(CENSUS, "adult.test.csv"), "--job-dir", job,
            "--progress", "quiet"]
    if steps:
        argv += ["--train-steps", str(steps)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("predict-train failed: %s" % (r.stdout + r.stderr)[-400:])
    with open(spec) as f:
        name = json.load(f).get("export", {}).get("name", "census")
    base = os.path.join(job, "export", name)
    versions = sorted(int(v) for v in os.listdir(base) if v.isdigit())
    return base, versions[-1]


def spec_with_format(fmt):
    with open(SPEC) as f:
        spec = json.load(f)
    spec.setdefault("export", {})["format"] = fmt
    path = os.path.join(TMP, "census-%s.json" % fmt.lower())
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def copy_version(src_dir, base, version):
    """Puts a copy of export src_dir into base/<version> atomically (hidden temp
    dir, then rename), as the exporter does."""
    tmp = os.path.join(base, ".tmp-bench-%d" % version)
    shutil.copytree(src_dir, tmp)
    os.rename(tmp, os.path.join(base, str(version)))


# ------------------------------------------------------------------ groups

R = {}  # results


def group(num, title):
    def deco(fn):
        def run():
            if ONLY and str(num) not in ONLY:
                return
            log("== %d. %s" % (num, title))
            t0 = time.monotonic()
            load0 = os.getloadavg()[0]
            try:
                R[str(num)] = {"title": title, **fn()}
            except Exception as e:  # a figure never fails the harness
                R[str(num)] = {"title": title, "error": "%s: %s" % (type(e).__name__, e)}
                log("   not measured: %s" % e)
            R[str(num)]["seconds"] = round(time.monotonic() - t0, 1)
            R[str(num)]["loadavg"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
        run.num = num
        return run
    return deco


MODEL = {}  # "base", "version", "dir"


def census_model():
    if not MODEL:
        base, v = train(os.path.join(TMP, "job-json"))
        MODEL.update(base=base, version=v, dir=os.path.join(base, str(v)))
    return MODEL


def nginx_conf(port, body):
    d = os.path.join(TMP, "nginx-%d" % port)
    os.makedirs(d, exist_ok=True)
    text = body.replace("\\", "\\\\").replace("'", "\\'")
    conf = """worker_processes 1;
daemon off;
master_process off;
error_log %(d)s/error.log warn;
pid %(d)s/nginx.pid;
events { worker_connections 4096; use epoll; }
http {
  access_log off;
  client_body_temp_path %(d)s/body;
  proxy_temp_path %(d)s/proxy;
  fastcgi_temp_path %(d)s/fastcgi;
  uwsgi_temp_path %(d)s/uwsgi;
  scgi_temp_path %(d)s/scgi;
  keepalive_requests 1000000000;
  keepalive_timeout 600s;
  server {
    listen 127.0.0.1:%(port)d;
    location / {
      default_type application/json;
      return 200 '%(text)s';
    }
  }
}
""" % {"d": d, "port": port, "text": text}
    path = os.path.join(d, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return path, d


def predictd_ir(base, path, body_path, headers=()):
    """Instructions per request of predictd (one request thread, the loader's
    ticks an hour apart so that they do not count) serving body_path at path,
    by bench_ir (callgrind, 1200 minus 200 requests); a message when it cannot
    be counted."""
    if not shutil.which("valgrind"):
        return "not counted: valgrind not installed"
    port = free_port()
    argv = [PREDICTD, "--rest_api_host=127.0.0.1", "--rest_api_port=%d" % port,
            "--model_name=census", "--model_base_path=%s" % base, "--rest_api_num_threads=1",
            "--file_system_poll_wait_seconds=3600"]
    with open(body_path, "rb") as f:
        body = f.read()
    try:
        return bench_ir.measure(argv, "http://127.0.0.1:%d%s" % (port, path), body,
                                headers)["per_request"]
    except Exception as e:  # a figure never fails the harness
        return "not counted: %s" % e


def nginx_ir(answer, body_path):
    """Instructions per request of nginx answering answer (bytes) to POSTs of
    body_path, counted as predictd_ir counts predictd's."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not shutil.which("valgrind") or not os.path.exists(nginx):
        return "not counted: valgrind or nginx not installed"
    port = free_port()
    conf, prefix = nginx_conf(port, answer.decode())
    with open(body_path, "rb") as f:
        body = f.read()
    try:
        return bench_ir.measure([nginx, "-e", os.path.join(prefix, "error.log"), "-c", conf,
                                 "-p", prefix], "http://127.0.0.1:%d/v1/models/census:predict"
                                % port, body, stop="QUIT")["per_request"]
    except Exception as e:
        return "not counted: %s" % e


NGINX_RATIO_GOAL = 0.9  # predictd req/s over nginx's, single instance (issue 30)


@group(1, "single-instance predict vs nginx (keep-alive, wrk)")
def g1():
    """predictd and nginx run side by side on the server CPU; their wrk runs
    alternate, so both see the same moments of the machine, and the ratio is
    the median of the per-pair ratios."""
    m = census_model()
    body = write_body("rows-1.json", rows_body(1))
    out = {"pinning": PINNING, "method": "predictd, nginx and a bare libmicrohttpd server "
           "(bench/bench_mhd, predictd's MHD flags, fixed body) run side by side, their runs "
           "alternate; ratio = median of per-pair req/s ratios; cpu_ratio = nginx's server "
           "CPU time per request over predictd's (the req/s ratio with a whole core each)"}
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    d = Daemon(m["base"])
    p = mp = None
    try:
        code, answer = http("POST", d.url(), open(body, "rb").read())
        if code != 200:
            raise RuntimeError("predict answered %s: %s" % (code, answer[:200]))
        out["answer_bytes"] = len(answer)
        nurl = None
        if os.path.exists(nginx):
            port = free_port()
            conf, prefix = nginx_conf(port, answer.decode())
            p = start([nginx, "-e", os.path.join(prefix, "error.log"), "-c", conf, "-p",
                       prefix], os.path.join(prefix, "out.log"))
            nurl = "http://127.0.0.1:%d/v1/models/census:predict" % port
            for _ in range(500):
                if http("POST", nurl, b"{}")[0] == 200:
                    break
                time.sleep(0.01)
            out["nginx_body_bytes"] = len(http("POST", nurl, open(body, "rb").read())[1])
        else:
            out["nginx"] = "skipped: nginx not installed"
        murl = None
        if os.path.exists(BENCH_MHD):
            mport = free_port()
            apath = os.path.join(TMP, "answer.json")
            with open(apath, "wb") as f:
                f.write(answer)
            # predictd's libmicrohttpd set-up: poll(2), a 16 KiB connection pool
            mp = start([BENCH_MHD, str(mport), apath, "1", "16384", "poll"],
                       os.path.join(TMP, "mhd.log"))
            murl = "http://127.0.0.1:%d/v1/models/census:predict" % mport
            for _ in range(500):
                if http("POST", murl, b"{}")[0] == 200:
                    break
                time.sleep(0.01)
        else:
            out["bare_mhd"] = "skipped: %s not built" % BENCH_MHD
        for c in (16, 64):
            pd, ng, mh = [], [], []
            for _ in range(RUNS):
                pd.append(wrk(d.url(), body, c, pid=d.p.pid))
                if nurl:
                    ng.append(wrk(nurl, body, c, pid=p.pid))
                if murl:
                    mh.append(wrk(murl, body, c, pid=mp.pid))
            out["predictd_c%d" % c] = summarize(pd)
            if mh:
                out["bare_mhd_c%d" % c] = summarize(mh)
            if ng:
                out["nginx_c%d" % c] = summarize(ng)
                rs = [a["rps"] / b["rps"] for a, b in zip(pd, ng) if b["rps"]]
                out["ratio_c%d" % c] = round(median(rs), 3)
                out["ratio_c%d_min_max" % c] = "%.3f / %.3f over %d rounds (goal >= %.2f)" % (
                    min(rs), max(rs), len(rs), NGINX_RATIO_GOAL)
                cr = [b["cpu_us_per_request"] / a["cpu_us_per_request"] for a, b in zip(pd, ng)
                      if a.get("cpu_us_per_request") and b.get("cpu_us_per_request")]
                if cr:
                    out["cpu_ratio_c%d" % c] = round(median(cr), 3)
    finally:
        d.close()
        stop(p)
        stop(mp)
    # instructions per request (callgrind; independent of the machine's load)
    ir_p = predictd_ir(m["base"], "/v1/models/census:predict", body)
    ir_n = nginx_ir(answer, body)
    out["instructions_per_request"] = {"predictd": ir_p, "nginx": ir_n}
    return out


BATCH_1000_GOAL = 600000  # census instances per CPU-second at batch 1000 (issue 11)


@group(2, "batched requests: instances/s and latency")
def g2():
    m = census_model()
    out = {}
    d = Daemon(m["base"])
    try:
        for n in (1, 10, 100, 1000):
            body = write_body("rows-%d.json" % n, rows_body(n))
            code, _ = http("POST", d.url(), open(body, "rb").read(), timeout=30)
            if code != 200:
                out["batch_%d" % n] = "not measured: predict answered %s" % code
                continue
            r = wrk_median(d.url(), body, 16 if n <= 100 else 4, pid=d.p.pid)
            r["instances_per_s"] = r["rps"] * n
            if r.get("cpu_us_per_request"):
                r["instances_per_cpu_s"] = n * 1e6 / r["cpu_us_per_request"]
                if n == 1000:  # issue 11's goal
                    r["goal_instances_per_cpu_s"] = BATCH_1000_GOAL
                    r["goal_met"] = r["instances_per_cpu_s"] >= BATCH_1000_GOAL
            r["body_bytes"] = os.path.getsize(body)
            out["batch_%d" % n] = r
    finally:
        d.close()
    return out


def help_text():
    try:
        return subprocess.run([PREDICTD, "--help"], capture_output=True, text=True,
                              timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


@group(3, "cross-request batching on/off; worker threads vs HTTP threads")
def g3():
    m = census_model()
    out = {}
    h = help_text()
    body = write_body("rows-1.json", rows_body(1))
    flag = re.search(r"--(enable_batching)\b", h)
    if flag:
        for on in ("true", "false"):
            d = Daemon(m["base"], flags=["--%s=%s" % (flag.group(1), on)])
            try:
                out["batching_%s_c64" % ("on" if on == "true" else "off")] = \
                    wrk_median(d.url(), body, 64, pid=d.p.pid)
            finally:
                d.close()
    else:
        out["batching"] = ("skipped: this predictd has no cross-request batching switch "
                           "(no --enable_batching in --help)")
    if "--max_queue_depth" in h:
        for name, flags in (("worker_threads", []), ("http_threads",
                                                     ["--max_queue_depth=0"])):
            d = Daemon(m["base"], flags=flags)
            try:
                out["%s_c16" % name] = wrk_median(d.url(), body, 16, pid=d.p.pid)
            finally:
                d.close()
    return out


@group(4, "rows vs columns; JSON vs CSV vs EXAMPLE receivers")
def g4():
    m = census_model()
    out = {}
    d = Daemon(m["base"])
    try:
        for n in (1, 100):
            for kind, obj in (("rows", rows_body(n)), ("columns", columns_body(n))):
                body = write_body("%s-%d.json" % (kind, n), obj)
                code, _ = http("POST", d.url(), open(body, "rb").read(), timeout=30)
                if code != 200:
                    out["json_%s_%d" % (kind, n)] = "not measured: HTTP %s" % code
                    continue
                r = wrk_median(d.url(), body, 16, pid=d.p.pid)
                r["instances_per_s"] = r["rps"] * n
                out["json_%s_%d" % (kind, n)] = r
    finally:
        d.close()
    cols, _, _ = census_columns()
    for fmt in ("CSV", "EXAMPLE"):
        try:
            base, _ = train(os.path.join(TMP, "job-%s" % fmt.lower()), spec_with_format(fmt),
                            steps=200)
        except Exception as e:
            out[fmt.lower()] = "not measured: %s" % e
            continue
        d = Daemon(base)
        try:
            for n in (1, 100):
                insts, rows = csv_instances(n)
                if n == 1:
                    insts = [tutorial_instance()]
                if fmt == "CSV":
                    obj = {"instances": rows}
                else:
                    obj = {"instances": [{"b64": base64.b64encode(tf_example(i, cols))
                                          .decode()} for i in insts]}
                body = write_body("%s-%d.json" % (fmt.lower(), n), obj)
                code, ans = http("POST", d.url(), open(body, "rb").read(), timeout=30)
                if code != 200:
                    out["%s_%d" % (fmt.lower(), n)] = "not measured: HTTP %s %s" % (
                        code, ans[:160].decode(errors="replace"))
                    continue
                r = wrk_median(d.url(), body, 16, pid=d.p.pid)
                r["instances_per_s"] = r["rps"] * n
                out["%s_%d" % (fmt.lower(), n)] = r
        finally:
            d.close()
    return out


def loaded_in(log_path, version):
    """The daemon's own "loaded and warmed up in X s" for version, in ms."""
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"version %d: AVAILABLE \(loaded and warmed up in ([0-9.]+) s\)" % version,
                  text)
    return float(m.group(1)) * 1000 if m else None


@group(5, "version load time and a swap under load")
def g5():
    m = census_model()
    base = os.path.join(TMP, "swap-base")
    os.makedirs(base, exist_ok=True)
    v = m["version"]
    copy_version(m["dir"], base, v)
    out = {}
    d = Daemon(base, flags=["--file_system_poll_wait_seconds=1"])
    try:
        appear, loads = [], []
        for k in range(RUNS):
            v += 1
            t0 = time.monotonic()
            copy_version(m["dir"], base, v)
            ok = wait_available(d.port, "census", v, timeout=15)
            appear.append((time.monotonic() - t0) * 1000 if ok else None)
            loads.append(loaded_in(d.log, v))
        out["appear_to_available_ms"] = median(appear)
        out["appear_note"] = ("from the rename into the base path to AVAILABLE over HTTP "
                              "(polled every 2 ms); includes how the daemon notices the "
                              "directory (inotify, or its --file_system_poll_wait_seconds=1 "
                              "poll)")
        out["daemon_load_ms"] = median(loads)
        body = write_body("rows-1.json", rows_body(1))
        before = wrk_median(d.url(), body, 16, seconds=SECONDS + 2)
        during = []
        for k in range(RUNS):
            v += 1

            def swap(ver=v):
                time.sleep(1.0)
                copy_version(m["dir"], base, ver)

            t = threading.Thread(target=swap)
            t.start()
            r = wrk(d.url(), body, 16, seconds=SECONDS + 2)
            t.join()
            ok = wait_available(d.port, "census", v, timeout=10)
            r["swapped"] = ok
            during.append(r)
        out["before_swap_c16"] = before
        out["during_swap_c16"] = {k: median([r[k] for r in during])
                                  for k in ("rps", "p50_ms", "p99_ms", "p999_ms")}
        out["during_swap_c16"]["errors"] = sum(r["errors"] + r["non2xx"] for r in during)
        out["during_swap_c16"]["swaps_done"] = sum(1 for r in during if r["swapped"])
        if before["p99_ms"]:
            out["p99_during_over_before"] = round(out["during_swap_c16"]["p99_ms"] /
                                                  before["p99_ms"], 2)
    finally:
        d.close()
    return out


@group(6, "memory: RSS idle, after 100k requests, per loaded version")
def g6():
    m = census_model()
    out = {}
    body = write_body("rows-1.json", rows_body(1))
    d = Daemon(m["base"])
    try:
        time.sleep(0.3)
        out["rss_idle_mb"] = d.rss_kb() / 1024.0
        for label in ("after_100k_mb", "after_200k_mb"):
            done = 0
            while done < 100000:
                r = wrk(d.url(), body, 16, seconds=SECONDS)
                done += r["requests"]
                if r["requests"] == 0:
                    raise RuntimeError("no requests answered")
            out[label] = d.rss_kb() / 1024.0
        out["growth_100k_to_200k_mb"] = round(out["after_200k_mb"] - out["after_100k_mb"], 2)
    finally:
        d.close()
    # a second version loaded next to the first
    base = os.path.join(TMP, "two-base")
    os.makedirs(base, exist_ok=True)
    copy_version(m["dir"], base, 1)
    cfg = os.path.join(TMP, "two.json")
    with open(cfg, "w") as f:
        json.dump({"rest_api_host": "127.0.0.1", "file_system_poll_wait_seconds": 1,
                   "models": [{"name": "census", "base_path": base,
                               "version_policy": {"latest": 2}}]}, f)
    d = Daemon(config=cfg)
    try:
        time.sleep(0.3)
        one = d.rss_kb()
        copy_version(m["dir"], base, 2)
        if not wait_available(d.port, "census", 2, timeout=15):
            raise RuntimeError("second version not AVAILABLE")
        time.sleep(0.3)
        states = version_state(d.port, "census")
        out["versions_loaded"] = sorted(v for v, s in states.items() if s == "AVAILABLE")
        out["extra_rss_per_version_mb"] = round((d.rss_kb() - one) / 1024.0, 2)
    finally:
        d.close()
    return out


@group(7, "training: census examples/s, time to the accuracy target, next to scikit-learn's "
          "MLP; custom graph vs canned; per rank at mpirun -np 2")
def g7():
    script = os.path.join(ROOT, "bench", "train_bench.sh")
    out = {}
    if os.path.exists(script):
        r = subprocess.run(["sh", script, str(RUNS)], capture_output=True, text=True,
                           env=dict(os.environ, BUILD=BUILD), timeout=900)
        main = re.findall(r"^  run \d+: trained .*\((\d+) examples/s\); (\d+) examples per "
                          r"CPU-second;.* whole run \(train \+ eval \+ export\) ([0-9.]+)s; "
                          r"accuracy = ([0-9.]+)", r.stdout, re.M)
        out["source"] = "bench/train_bench.sh (the trainer's)"
        out["examples_per_s"] = median([int(x[0]) for x in main])
        out["examples_per_cpu_s"] = median([int(x[1]) for x in main])
        out["whole_run_s"] = median([float(x[2]) for x in main])
        out["accuracy"] = median([float(x[3]) for x in main])
        out["runs"] = len(main)
        out["vs_sklearn_mlp"] = vs_sklearn_mlp(r.stdout)
        out["raw"] = r.stdout.strip().splitlines()
    else:
        t0 = time.monotonic()
        train(os.path.join(TMP, "job-g7"))
        out["whole_run_s"] = time.monotonic() - t0
        out["source"] = "bench.py (no bench/train_bench.sh)"
    out["target"] = ("accuracy 0.85 on adult.test (the tutorial's figure); the trainer "
                     "evaluates once at the end, so time to target = the whole run")
    out["custom_vs_canned"] = custom_vs_canned()
    out["per_rank_np2"] = per_rank_np2()
    # issue 37 goal 3's figures on lines of their own in the table
    vs, pr = out.get("vs_sklearn_mlp", {}), out["per_rank_np2"]
    if vs.get("sklearn_examples_per_cpu_s"):
        out["goal3 sklearn MLP examples per CPU-s"] = "%s (float32 inputs %s)" % (
            vs["sklearn_examples_per_cpu_s"], vs.get("sklearn_float32_examples_per_cpu_s"))
        for b in ("40", "256"):
            out["goal3 trainer / sklearn, batch %s" % b] = "%s min / median / max (goal 2.5x)" % (
                vs.get("ratio_batch%s (min / median / max)" % b))
    for b in ("40", "256"):
        fig = pr.get("batch " + b)
        if fig:
            out["goal3 per rank / 1 process, batch %s" % b] = (
                "%s (per CPU-second %s; goal 0.9)" % (fig["per-rank ratio"],
                                                      fig["per-rank ratio per CPU-second"]))
    out["goal3 note"] = pr["note"]
    return out


def spread(xs, digits=2):
    """'min / median / max' of XS, or None."""
    if not xs:
        return None
    return "%.*f / %.*f / %.*f" % (digits, min(xs), digits, median(xs), digits, max(xs))


def vs_sklearn_mlp(text):
    """Issue 37 goal 3: the trainer's examples per CPU-second (conf/census.json
    at its batch 40 and at 256) over scikit-learn's MLPClassifier's
    (bench/mlp_baseline.py, batch 256), rounds interleaved in train_bench.sh."""
    out = {"goal": "trainer examples per CPU-second >= 2.5x sklearn's, same run",
           "trainer": "DNNLinearCombinedClassifier: DNN 66 inputs -> 100-70-48-34 -> 1 "
                      "(Adagrad) + linear part of 11 sparse columns (FTRL), 4 epochs, "
                      "examples per CPU-second of the whole process (reader thread too)",
           "sklearn": "MLPClassifier((100, 70, 48, 34)), 107 inputs (one-hot + standardized), "
                      "adam, batch 256, 4 epochs, one thread, fit CPU seconds only; float64 "
                      "inputs (the encoders' output), float32 also measured"}
    b256 = [int(x) for x in re.findall(r"^  run \d+, batch 256: trained .*?\(\d+ examples/s\); "
                                       r"(\d+) examples per CPU-second", text, re.M)]
    base = re.findall(r"^  run \d+, baseline: .*preprocessing cpu ([0-9.]+)s; .*\((\d+) examples "
                      r"per CPU-second\); accuracy = ([0-9.]+)", text, re.M)
    ratios = re.findall(r"^  run \d+, ratio .*: batch 40 ([0-9.]+)x, batch 256 ([0-9.]+)x",
                        text, re.M)
    b32 = [int(x) for x in re.findall(r"^  run \d+, baseline float32: .*\((\d+) examples per "
                                      r"CPU-second\)", text, re.M)]
    if not base:
        out["sklearn"] = "not measured: python3-sklearn not installed"
        return out
    out["trainer_batch256_examples_per_cpu_s"] = median(b256)
    out["sklearn_examples_per_cpu_s"] = median([int(x[1]) for x in base])
    out["sklearn_preprocessing_cpu_s"] = median([float(x[0]) for x in base])
    out["sklearn_float32_examples_per_cpu_s"] = median(b32)
    out["sklearn_accuracy"] = median([float(x[2]) for x in base])
    out["ratio_batch40 (min / median / max)"] = spread([float(x[0]) for x in ratios])
    out["ratio_batch256 (min / median / max)"] = spread([float(x[1]) for x in ratios])
    r32 = re.findall(r"^  run \d+, ratio .*over float32 sklearn ([0-9.]+)x and ([0-9.]+)x",
                     text, re.M)
    out["ratio_over_float32_batch40 (min / median / max)"] = spread([float(x[0]) for x in r32])
    out["ratio_over_float32_batch256 (min / median / max)"] = spread([float(x[1]) for x in r32])
    out["goal_met"] = bool(ratios) and median([float(x[0]) for x in ratios]) >= 2.5
    return out


def per_rank_np2():
    """Issue 37 goal 3: each rank's examples/s with mpirun -np 2 (AUTO sharding,
    readers running) over one process's, batch 40 and 256, rounds interleaved
    (bench/train_mpi_bench.sh)."""
    script = os.path.join(ROOT, "bench", "train_mpi_bench.sh")
    r = subprocess.run(["sh", script, str(RUNS)], capture_output=True, text=True,
                       env=dict(os.environ, BUILD=BUILD, BATCHES="40 256"), timeout=900)
    out = {"goal": "per rank at -np 2 >= 0.9 x one process's examples/s",
           "cores": os.cpu_count(),
           "note": "2 ranks on %d cores: each has a core to itself only when the machine is "
                   "quiet (load average %.2f at the start)" % (os.cpu_count(),
                                                                os.getloadavg()[0])}
    for m in re.finditer(r"batch (\d+), per rank: .*?: ([0-9.?]+) \(median of the rounds' ratios "
                         r"([0-9. ]*); goal 0.9\); per CPU-second .*: ([0-9.?]+)$", r.stdout, re.M):
        out["batch %s" % m.group(1)] = {"per-rank ratio": m.group(2),
                                        "rounds": m.group(3).strip(),
                                        "per-rank ratio per CPU-second": m.group(4)}
    out["raw"] = r.stdout.strip().splitlines()
    if len(out) == 4:
        out["error"] = "no figures: " + (r.stdout + r.stderr).strip()[-300:]
    return out


def custom_vs_canned():
    """Issue 36: conf/census_custom.json (the canned model as a graph) next to
    conf/census.json, alternating rounds (bench/train_custom_bench.sh)."""
    script = os.path.join(ROOT, "bench", "train_custom_bench.sh")
    r = subprocess.run(["sh", script, str(RUNS)], capture_output=True, text=True,
                       env=dict(os.environ, BUILD=BUILD), timeout=900)
    rounds = re.findall(r"canned (\d+) examples/s, (\d+) per CPU-second, training thread "
                        r"([0-9.]+)s; custom (\d+) examples/s, (\d+) per CPU-second, "
                        r"training thread ([0-9.]+)s", r.stdout)
    out = {"source": "bench/train_custom_bench.sh (%d alternating rounds)" % RUNS,
           "goal": "custom examples/s >= 0.95 x canned, in the same run"}
    if rounds:
        out["canned_examples_per_s"] = median([int(x[0]) for x in rounds])
        out["custom_examples_per_s"] = median([int(x[3]) for x in rounds])
        out["ratio_examples_per_s"] = round(median([int(x[3]) / int(x[0]) for x in rounds]), 3)
        out["canned_examples_per_cpu_s"] = median([int(x[1]) for x in rounds])
        out["custom_examples_per_cpu_s"] = median([int(x[4]) for x in rounds])
        out["ratio_examples_per_cpu_s"] = round(median([int(x[4]) / int(x[1])
                                                         for x in rounds]), 3)
        out["canned_training_thread_s"] = median([float(x[2]) for x in rounds])
        out["custom_training_thread_s"] = median([float(x[5]) for x in rounds])
    else:
        out["error"] = (r.stdout + r.stderr)[-400:]
    out["raw"] = r.stdout.strip().splitlines()
    return out


@group(15, "BoostedTrees training: census, 100 trees, CPU seconds next to scikit-learn")
def g15():
    script = os.path.join(ROOT, "bench", "train_trees_bench.sh")
    r = subprocess.run(["sh", script, str(RUNS)], capture_output=True, text=True,
                       env=dict(os.environ, BUILD=BUILD), timeout=600)
    out = {"source": "bench/train_trees_bench.sh (median of %d)" % RUNS}
    ours = re.findall(r"trees run \d+: grew (\d+) trees from (\d+) examples in ([0-9.]+)s, cpu "
                      r"([0-9.]+)s \((\d+) examples/s per tree and cpu second\).*accuracy = "
                      r"([0-9.]+), auc = ([0-9.]+)", r.stdout)
    if ours:
        out["grow_cpu_s"] = median([float(x[3]) for x in ours])
        out["grow_wall_s"] = median([float(x[2]) for x in ours])
        out["examples_per_tree_cpu_s"] = median([int(x[4]) for x in ours])
        out["accuracy"] = float(ours[0][5])
        out["auc"] = float(ours[0][6])
    base = re.findall(r"baseline run \d+: .* in ([0-9.]+)s, cpu ([0-9.]+)s \((\d+) examples/s "
                      r"per tree and cpu second\); accuracy = ([0-9.]+), auc = ([0-9.]+)",
                      r.stdout)
    if base:
        out["sklearn_fit_cpu_s"] = median([float(x[1]) for x in base])
        out["sklearn_examples_per_tree_cpu_s"] = median([int(x[2]) for x in base])
        out["sklearn_accuracy"] = float(base[0][3])
        out["sklearn_auc"] = float(base[0][4])
    else:
        out["sklearn"] = "python3-sklearn not installed (docs/trainer.md: 0.56-0.59 cpu s)"
    out["raw"] = r.stdout.strip().splitlines()
    return out


@group(10, "distributed training: census examples/s at 1 and 2 ranks (mpirun), batch 40 and 512")
def g10():
    script = os.path.join(ROOT, "bench", "train_mpi_bench.sh")
    r = subprocess.run(["sh", script, str(RUNS)], capture_output=True, text=True,
                       env=dict(os.environ, BUILD=BUILD), timeout=1800)
    out = {"source": "bench/train_mpi_bench.sh (mpirun -np 2, AUTO sharding; median of %d)"
                     % RUNS}
    for m in re.finditer(r"batch (\d+): 1 rank (\d+) examples/s \(([^)]*)\); 2 ranks (\d+) "
                         r"examples/s \(([^)]*)\); speed-up ([0-9.?]+)x; communication "
                         r"([0-9.]+) us per step \((\d+)% of the time\)", r.stdout):
        out["batch %s" % m.group(1)] = {
            "1 rank examples/s": int(m.group(2)), "2 ranks examples/s": int(m.group(4)),
            "speed-up": m.group(6), "communication us/step": float(m.group(7)),
            "communication share %": int(m.group(8))}
    for m in re.finditer(r"batch (\d+), 2 ranks, a step \(medians, rank 0\): ([0-9.]+) us = "
                         r"compute ([0-9.]+) us \+ waiting for the slower rank ([0-9.]+) us \+ "
                         r"exchange ([0-9.]+) us", r.stdout):
        key = "batch %s" % m.group(1)
        if key in out:
            out[key]["step us = compute + wait + exchange"] = [
                float(m.group(k)) for k in (2, 3, 4, 5)]
    for m in re.finditer(r"batch (\d+), per rank: .*?: ([0-9.?]+) \(median of the rounds' ratios "
                         r"[0-9. ]*; goal 0.9\); per CPU-second .*: ([0-9.?]+)$", r.stdout, re.M):
        key = "batch %s" % m.group(1)
        if key in out:
            out[key]["per rank / 1 process (goal 0.9)"] = m.group(2)
            out[key]["per rank / 1 process, per CPU-second"] = m.group(3)
    out["raw"] = r.stdout.strip().splitlines()
    if len(out) == 2:
        out["error"] = "no figures: " + (r.stdout + r.stderr).strip()[-300:]
    return out


@group(11, "rollouts: traffic split, shadow at 0%, logging at 0% vs none (keep-alive, wrk)")
def g11():
    """Two daemons on the same export side by side, their wrk runs
    alternating: one plain, one whose model has a traffic split (all to its
    label), a shadow at 0% and request logging at 0%. ratio = median of the
    per-pair req/s ratios (rollout / plain); cpu_ratio the same for the
    server's CPU time per request (plain / rollout)."""
    m = census_model()
    body = write_body("rows-1.json", rows_body(1))
    conf = os.path.join(TMP, "rollout.json")
    with open(conf, "w") as f:
        json.dump({"models": [{
            "name": "census", "base_path": m["base"],
            "version_labels": {"stable": m["version"]}, "traffic_split": {"stable": 100},
            "shadow": {"version": m["version"], "percent": 0},
            "request_logging": {"sampling_rate": 0, "dir": os.path.join(TMP, "predlog")}}]}, f)
    out = {"method": "a plain daemon and one whose model has traffic_split {stable: 100}, "
           "shadow at 0% and request_logging at 0%, side by side, wrk runs alternating; "
           "ratio = median of per-pair req/s ratios (rollout / plain), cpu_ratio = plain's "
           "CPU time per request over the rollout daemon's"}
    plain = roll = None
    try:
        plain = Daemon(m["base"])
        roll = Daemon(config=conf, name="predictd-rollout")
        for c in (16, 64):
            a, b = [], []
            for _ in range(RUNS):
                a.append(wrk(plain.url(), body, c, pid=plain.p.pid))
                b.append(wrk(roll.url(), body, c, pid=roll.p.pid))
            out["plain_c%d" % c] = summarize(a)
            out["rollout_c%d" % c] = summarize(b)
            out["ratio_c%d" % c] = round(median([y["rps"] / x["rps"] for x, y in zip(a, b)
                                                 if x["rps"]]), 3)
            cr = [x["cpu_us_per_request"] / y["cpu_us_per_request"] for x, y in zip(a, b)
                  if x.get("cpu_us_per_request") and y.get("cpu_us_per_request")]
            if cr:
                out["cpu_ratio_c%d" % c] = round(median(cr), 3)
    finally:
        for d in (plain, roll):
            if d:
                d.close()
    return out


MONITORING_GOAL = 0.95  # monitoring at sample rate 1 keeps >= 95% of req/s (issue 28)


@group(19, "skew/drift monitoring at sample rate 1 vs none (single instance, keep-alive, wrk)")
def g19():
    """Two daemons on the same export (with its training statistics) side by
    side, their wrk runs alternating: one plain, one monitoring every
    instance (window of an hour). ratio = median of the per-pair req/s
    ratios (monitored / plain); plus each one's instructions per request
    (callgrind, bench_ir)."""
    m = census_model()
    body = write_body("rows-1.json", rows_body(1))
    mon = ["--model_monitoring={\"sample_rate\": 1, \"window_seconds\": 3600}"]
    out = {"method": "a plain daemon and one with --model_monitoring (sample_rate 1), side by "
           "side, wrk runs alternating; ratio = median of per-pair req/s ratios (monitored / "
           "plain), goal >= %.2f; ir = instructions per request by callgrind" % MONITORING_GOAL}
    plain = watched = None
    try:
        plain = Daemon(m["base"])
        watched = Daemon(m["base"], flags=mon, name="predictd-monitoring")
        for c in (16,):
            a, b = [], []
            for _ in range(RUNS):
                a.append(wrk(plain.url(), body, c, pid=plain.p.pid))
                b.append(wrk(watched.url(), body, c, pid=watched.p.pid))
            out["plain_c%d" % c] = summarize(a)
            out["monitoring_c%d" % c] = summarize(b)
            out["ratio_c%d" % c] = round(median([y["rps"] / x["rps"] for x, y in zip(a, b)
                                                 if x["rps"]]), 3)
    finally:
        for d in (plain, watched):
            if d:
                d.close()
    out["ir_plain"] = predictd_ir(m["base"], "/v1/models/census:predict", body)
    port = free_port()
    if shutil.which("valgrind"):
        argv = [PREDICTD, "--rest_api_host=127.0.0.1", "--rest_api_port=%d" % port,
                "--model_name=census", "--model_base_path=%s" % m["base"],
                "--rest_api_num_threads=1", "--file_system_poll_wait_seconds=3600"] + mon
        try:
            with open(body, "rb") as f:
                out["ir_monitoring"] = bench_ir.measure(
                    argv, "http://127.0.0.1:%d/v1/models/census:predict" % port,
                    f.read(), ())["per_request"]
        except Exception as e:  # a figure never fails the harness
            out["ir_monitoring"] = "not counted: %s" % e
    return out


GRPC_CPU_GOAL = 1.2  # issue 38: gRPC Predict's server CPU per call <= 1.2x REST's


@group(20, "gRPC Predict and ModelInfer vs REST /v1 :predict: one census instance, calls/s "
           "and server CPU per call (the same Python client); a batch of 1000 as ModelInfer "
           "raw_input_contents vs REST /v2 binary tensors; instructions per call (callgrind)")
def g20():
    py = "/usr/bin/python3"  # Debian's, with python3-grpcio (the harness needs only stdlib)
    if not os.path.exists(py) or subprocess.run([py, "-c", "import grpc"],
                                                capture_output=True).returncode != 0:
        raise RuntimeError("Debian's python3-grpcio is not installed (scripts/install-deps.sh)")
    m = census_model()
    gport = free_port()
    inst = write_body("instance-1.json", tutorial_instance())
    batch = write_body("instances-1000.json", csv_instances(1000)[0])
    conns = 2
    out = {"method": "one daemon (--port, --rest_api_num_threads=2), bench/bench_grpc.py: %d "
                     "client threads calling in sequence for %ds, gRPC and REST runs "
                     "alternating, %d each; server CPU from /proc around each run; ratio = "
                     "gRPC CPU per call / REST's (goal <= %.1f)"
                     % (conns, SECONDS, RUNS, GRPC_CPU_GOAL)}
    d = Daemon(m["base"], flags=["--port=%d" % gport, "--rest_api_num_threads=2"])
    try:
        gen = tempfile.mkdtemp(dir=TMP, prefix="grpc-stubs-")
        r = subprocess.run(pinned(LOAD_CPU, [py, os.path.join(ROOT, "bench", "bench_grpc.py"),
                                             "--grpc", "127.0.0.1:%d" % gport,
                                             "--rest", "127.0.0.1:%d" % d.port,
                                             "--pid", str(d.p.pid), "--instance", inst,
                                             "--gen", gen, "--batch", batch,
                                             "--seconds", str(SECONDS),
                                             "--conns", str(conns), "--runs", str(RUNS)]),
                           capture_output=True, text=True, timeout=120 + 10 * RUNS * SECONDS)
        if r.returncode != 0:
            raise RuntimeError("bench_grpc.py: %s" % r.stderr[-300:])
        raw = json.loads(r.stdout)
    finally:
        d.close()
    for k in ("grpc_predict", "grpc_infer", "rest_predict", "grpc_infer_batch",
              "rest_v2_binary_batch"):
        rs = raw.get(k)
        if not rs:
            continue
        out[k] = {"rps": median([x["rps"] for x in rs]),
                  "cpu_us_per_request": median([x["cpu_us_per_request"] for x in rs
                                                if x["cpu_us_per_request"]]),
                  "errors": sum(x["errors"] for x in rs)}
        log("   %-14s %8.0f calls/s  %7.1f us server CPU per call  (%d errors)"
            % (k, out[k]["rps"], out[k]["cpu_us_per_request"], out[k]["errors"]))
    g, rr = out["grpc_predict"]["cpu_us_per_request"], out["rest_predict"]["cpu_us_per_request"]
    out["cpu_ratio_grpc_to_rest"] = round(g / rr, 2) if g and rr else None
    out["goal_met"] = bool(out["cpu_ratio_grpc_to_rest"] and
                           out["cpu_ratio_grpc_to_rest"] <= GRPC_CPU_GOAL)
    log("   gRPC / REST server CPU per call: %s (goal <= %.1f)"
        % (out["cpu_ratio_grpc_to_rest"], GRPC_CPU_GOAL))
    gi = out.get("grpc_infer", {}).get("cpu_us_per_request")
    out["cpu_ratio_grpc_infer_to_rest"] = round(gi / rr, 2) if gi and rr else None
    log("   gRPC ModelInfer / REST /v1 server CPU per call: %s"
        % out["cpu_ratio_grpc_infer_to_rest"])
    for k in ("grpc_infer_batch", "rest_v2_binary_batch"):
        c = out.get(k, {}).get("cpu_us_per_request")
        if c:
            out[k]["instances_per_cpu_s"] = round(raw.get("batch", 1000) * 1e6 / c)
    a = out.get("grpc_infer_batch", {}).get("instances_per_cpu_s")
    b = out.get("rest_v2_binary_batch", {}).get("instances_per_cpu_s")
    if a and b:
        out["batch_grpc_over_rest_instances_per_cpu_s"] = round(a / b, 3)
        log("   batch 1000: gRPC ModelInfer %d, REST /v2 binary %d instances per CPU-second "
            "(%.3fx)" % (a, b, a / b))
    # instructions per call, one daemon under callgrind (bench/bench_grpc_ir.py)
    if shutil.which("valgrind"):
        try:
            r = subprocess.run([py, os.path.join(ROOT, "bench", "bench_grpc_ir.py"),
                                "--predictd", PREDICTD, "--base", m["base"], "--instance", inst,
                                "--gen", gen, "--calls", "300"] +
                               (["--echo", BENCH_GRPC_ECHO] if os.path.exists(BENCH_GRPC_ECHO)
                                else []), capture_output=True,
                               text=True, timeout=900)
            ir = json.loads(r.stdout) if r.returncode == 0 else None
            out["instructions_per_call"] = ir or "not counted: %s" % r.stderr[-300:]
            if ir:
                log("   instructions per call: REST /v1 %d, REST /v2 binary %d, gRPC Predict %d "
                    "(%.2fx), gRPC ModelInfer %d (%.2fx)"
                    % (ir["rest_v1"]["ir_per_call"], ir["rest_v2_binary"]["ir_per_call"],
                       ir["grpc_predict"]["ir_per_call"], ir["grpc_predict"]["over_rest_v1"],
                       ir["grpc_infer"]["ir_per_call"], ir["grpc_infer"]["over_rest_v1"]))
                if "grpc_echo_floor" in ir:
                    log("   libgrpc's floor (bench_grpc_echo, a fixed answer): %d per Predict "
                        "call (%.2fx REST /v1's whole call)"
                        % (ir["grpc_echo_floor"]["ir_per_call"],
                           ir["grpc_echo_floor"]["over_rest_v1"]))
        except Exception as e:  # a figure never fails the harness
            out["instructions_per_call"] = "not counted: %s" % e
    out["raw"] = raw
    return out


HELPER = os.path.join(BUILD, "tests", "test_srv_models")  # writes small exports
MANY = max(1, int(os.environ.get("BENCH_MANY_MODELS", "10000")))


def many_models(root, n, proto):
    """n base paths under root, each holding a copy of the export proto as
    version 1, and a config serving them all (names m00000, m00001, ...)."""
    os.makedirs(root, exist_ok=True)
    models = []
    for i in range(n):
        name = "m%05d" % i
        base = os.path.join(root, name)
        shutil.copytree(proto, os.path.join(base, "1"))
        models.append({"name": name, "base_path": base})
    cfg = os.path.join(root, "many.json")
    with open(cfg, "w") as f:
        json.dump({"rest_api_host": "127.0.0.1", "file_system_poll_wait_seconds": 1,
                   "models": models}, f)
    return cfg


def all_available(port, n):
    code, body = http("GET", "http://127.0.0.1:%d/v1/models" % port, timeout=30)
    if code != 200:
        return False
    doc = json.loads(body)
    up = sum(1 for mm in doc["models"]
             if any(v["state"] == "AVAILABLE" for v in mm["versions"]))
    return up == n


@group(12, "many models: %d small models in one daemon (load, RSS, idle CPU, req/s on one)"
       % MANY)
def g12():
    """Goals (issue 11): all AVAILABLE in <= 5 s, RSS <= 200 MB, idle CPU <=
    2% of a core, req/s on one of them within 10% of a one-model daemon."""
    if not os.path.exists(HELPER):
        raise RuntimeError("%s not built" % HELPER)
    stage = os.path.join(TMP, "many-stage")
    r = subprocess.run([HELPER, "--write-export", "builtin:linear", stage, "1", "7"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("export helper: " + r.stderr.strip())
    proto = r.stdout.strip()
    cfg = many_models(os.path.join(TMP, "many"), MANY, proto)
    one = many_models(os.path.join(TMP, "many-one"), 1, proto)
    body = write_body("linear-1.json", {"instances": [{"x": 0.5, "color": "green"}]})
    out = {"models": MANY, "model": "builtin:linear of tests/unit/support/support_models.h "
                                    "(2 inputs, 3 classes; a 1 KB model.pb)"}
    loads, load_cpu, rss, idle = [], [], [], []
    many_rps, one_rps = [], []
    for k in range(RUNS):
        port = free_port()
        log_path = os.path.join(TMP, "many-%d.log" % port)
        t0 = time.monotonic()
        p = start([PREDICTD, "--model_config_file=%s" % cfg, "--rest_api_port=%d" % port],
                  log_path)
        ok = False
        # /readyz answers 200 once every model of the first config answers
        # (cheap to ask); /v1/models (a 1 MB answer) confirms it once.
        while time.monotonic() - t0 < 120 and p.poll() is None:
            code, _ = http("GET", "http://127.0.0.1:%d/readyz" % port, timeout=30)
            if code == 200:
                ok = True
                break
            time.sleep(0.02)
        took, cpu = time.monotonic() - t0, cpu_seconds(p.pid)
        if not ok or not all_available(port, MANY):
            stop(p)
            raise RuntimeError("not every model became AVAILABLE within 120 s")
        loads.append(took)
        load_cpu.append(cpu)
        time.sleep(2.0)  # let the first safety rescans and log writes pass
        with open("/proc/%d/status" % p.pid) as f:
            rss.append(int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024.0)
        c0 = cpu_seconds(p.pid)
        time.sleep(10.0)
        idle.append((cpu_seconds(p.pid) - c0) / 10.0 * 100)
        url = "http://127.0.0.1:%d/v1/models/m%05d:predict" % (port, MANY // 2)
        many_rps.append(wrk(url, body, 16, pid=p.pid))
        stop(p)
        # the same export alone, right after (alternating keeps the load comparable)
        port = free_port()
        p = start([PREDICTD, "--model_config_file=%s" % one, "--rest_api_port=%d" % port],
                  os.path.join(TMP, "one-%d.log" % port))
        if wait_available(port, "m00000", timeout=20):
            url = "http://127.0.0.1:%d/v1/models/m00000:predict" % port
            one_rps.append(wrk(url, body, 16, pid=p.pid))
        stop(p)
    out["all_available_s"] = median(loads)
    out["all_available_s_all"] = [round(x, 2) for x in loads]
    out["cpu_s_to_all_available"] = median(load_cpu)  # moves less with the machine's load
    out["rss_mb"] = median(rss)
    out["idle_cpu_percent_of_a_core"] = median(idle)
    out["idle_cpu_all"] = [round(x, 2) for x in idle]
    out["predict_one_of_many_c16"] = summarize(many_rps)
    out["predict_one_model_daemon_c16"] = summarize(one_rps) if one_rps else None
    if one_rps:
        out["rps_many_over_one"] = round(out["predict_one_of_many_c16"]["rps"] /
                                         out["predict_one_model_daemon_c16"]["rps"], 3)
    out["goals"] = ("all AVAILABLE <= 5 s, RSS <= 200 MB, idle CPU <= 2% of a core, "
                    "req/s ratio >= 0.9")
    return out


BENCH_LOAD = os.path.join(BUILD, "bench", "bench_load")
QUEUE_DEPTH = max(1, int(os.environ.get("BENCH_QUEUE_DEPTH", "32")))
QUEUE_WAIT_MS = max(1, int(os.environ.get("BENCH_QUEUE_WAIT_MS", "2")))


def bench_load(port, path, body, rate, seconds, conns=256):
    """One constant-rate run of bench/bench_load (pinned to the load CPU)."""
    argv = pinned(LOAD_CPU, [BENCH_LOAD, "127.0.0.1", str(port), path, body,
                             "%.0f" % rate, str(seconds), str(conns)])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    if r.returncode != 0:
        raise RuntimeError("bench_load: " + (r.stderr or r.stdout).strip()[-300:])
    return json.loads(r.stdout)


def admission_limit(d):
    """predictd_admission_limit now (with max_queue_wait_ms), else None."""
    st, text = http("GET", "http://127.0.0.1:%d/monitoring/prometheus/metrics" % d.port)
    m = re.search(rb"^predictd_admission_limit (\d+)$", text or b"", re.M)
    return int(m.group(1)) if st == 200 and m else None


def overload_curve(d, body, capacity):
    """bench_load at 0.1x..3x capacity against daemon d: one row per load,
    with the daemon's CPU time per answer (accepted or refused) and, with
    max_queue_wait_ms, the admission limit at the end of each run."""
    rows = {}
    for f in (0.1, 0.5, 1.0, 1.5, 2.0, 3.0):
        runs, cpu_us, limits = [], [], []
        for _ in range(RUNS):
            c0 = cpu_seconds(d.p.pid)
            r = bench_load(d.port, "/v1/models/census:predict", body, f * capacity, SECONDS)
            c1 = cpu_seconds(d.p.pid)
            runs.append(r)
            if c0 is not None and c1 is not None and r["answered"]:
                cpu_us.append((c1 - c0) * 1e6 / r["answered"])
            limits.append(admission_limit(d))
        row = {"offered_rps": round(f * capacity)}
        for k in ("answered_rps", "ok_rps"):
            row[k] = round(median([r[k] for r in runs]))
        row["share_429"] = round(median([r["n_429"] / max(1, r["answered"]) for r in runs]), 3)
        row["not_answered"] = sum(r["n_errors"] + r["n_other"] + r["not_sent"] for r in runs)
        row["ok_p50_ms"] = median([r["ok"]["p50_ms"] for r in runs if r["ok"]["n"]])
        row["ok_p99_ms"] = median([r["ok"]["p99_ms"] for r in runs if r["ok"]["n"]])
        row["429_p99_ms"] = median([r["429"]["p99_ms"] for r in runs if r["429"]["n"]])
        row["cpu_us_per_answer"] = round(median(cpu_us), 1) if cpu_us else None
        if any(x is not None for x in limits):
            row["admission_limit_after"] = limits
        rows["%.1fx" % f] = row
        log("   %.1fx: %s" % (f, json.dumps(row)))
    return rows


OVERLOAD_GOODPUT_GOAL = 0.9  # 200s/s at 2x capacity over capacity (issue 30)
OVERLOAD_P99_GOAL = 10       # accepted p99 at 2x over the unloaded (0.1x) p99 (issue 30)


@group(13, "overload: constant-rate load at 0.1x-3x capacity, max_queue_depth %d"
       % QUEUE_DEPTH)
def g13():
    """Goal (issue 30): at 2x the measured capacity, with max_queue_depth and
    max_queue_wait_ms set, goodput (200s/s) >= 0.9x capacity and the accepted
    requests' p99 <= 10x the unloaded p99 (the 0.1x row's), the rest 429.
    Capacity = wrk -c16 req/s against the queue-only daemon (closed loop);
    then bench/bench_load offers a constant rate (latency counted from when
    each request was due, as wrk2 does) over 256 connections, to the daemon
    with max_queue_depth alone and with max_queue_wait_ms as well (the
    target wait of the adaptive admission limit, docs/daemon.md "Overload")."""
    if not os.path.exists(BENCH_LOAD):
        raise RuntimeError("%s not built (make bench builds it)" % BENCH_LOAD)
    m = census_model()
    body = write_body("rows-1.json", rows_body(1))
    out = {"max_queue_depth": QUEUE_DEPTH, "max_queue_wait_ms": QUEUE_WAIT_MS,
           "connections": 256}
    for name, flags in (("queue", []), ("queue_and_wait", ["--max_queue_wait_ms=%d"
                                                           % QUEUE_WAIT_MS])):
        d = Daemon(m["base"], flags=["--max_queue_depth=%d" % QUEUE_DEPTH] + flags)
        try:
            if name == "queue":
                cap = wrk_median(d.url(), body, 16, pid=d.p.pid)
                out["capacity_c16"] = cap
                capacity = cap["rps"]
            log("   %s" % name)
            out["curve_" + name] = overload_curve(d, body, capacity)
        finally:
            d.close()
        curve = out["curve_" + name]
        at2, idle = curve["2.0x"], curve["0.1x"]
        goodput = at2["ok_rps"] / capacity if capacity else None
        p99x = (at2["ok_p99_ms"] / idle["ok_p99_ms"]
                if at2.get("ok_p99_ms") and idle.get("ok_p99_ms") else None)
        out["at_2x_" + name] = (
            "goodput %s x capacity (goal >= %.1f), accepted p99 %s ms = %s x the unloaded "
            "(0.1x) p99 of %s ms (goal <= %d), 429 p99 %s ms, %s of answers 429; "
            "daemon CPU %s us per answer at 2x" % (
                fmt(goodput, 2), OVERLOAD_GOODPUT_GOAL, fmt(at2.get("ok_p99_ms"), 2),
                fmt(p99x, 1), fmt(idle.get("ok_p99_ms"), 2), OVERLOAD_P99_GOAL,
                fmt(at2.get("429_p99_ms"), 2), at2["share_429"],
                fmt(at2.get("cpu_us_per_answer"), 1)))
        out["goal_met_" + name] = bool(goodput is not None and p99x is not None and
                                       goodput >= OVERLOAD_GOODPUT_GOAL and
                                       p99x <= OVERLOAD_P99_GOAL)
    return out


def callgrind_per_request(model_dir, instance, mode="--loop", counts=(200, 400)):
    """Instructions of one rt_json_handle call: callgrind of bench_forward
    MODE N for two N, difference / their difference (loading cancels out)."""
    if not shutil.which("valgrind"):
        return None
    irs = []
    for n in counts:
        outf = os.path.join(TMP, "cg.%d" % n)
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf,
                            BENCH_FORWARD, model_dir, instance, mode, str(n)],
                           capture_output=True, text=True, timeout=600)
        m = re.search(r"Collected : (\d+)", r.stderr)
        if not m:
            return None
        irs.append(int(m.group(1)))
    return (irs[1] - irs[0]) / float(counts[1] - counts[0])


@group(8, "compute ceiling: forward pass, sgemm peak, runtime stages")
def g8():
    m = census_model()
    if not os.path.exists(BENCH_FORWARD):
        raise RuntimeError("%s not built (make bench builds it)" % BENCH_FORWARD)
    inst = os.path.join(CENSUS, "test.json")
    runs = []
    for _ in range(RUNS):
        r = subprocess.run(pinned(SERVER_CPU, [BENCH_FORWARD, m["dir"], inst]),
                           capture_output=True, text=True, timeout=300)
        runs.append(json.loads(r.stdout))
    out = {"sgemm_gflops_1thread": median([r["sgemm_gflops"] for r in runs]),
           "model_open_ms": median([r["model_open_ms"] for r in runs]),
           "dnn_flops_per_instance": runs[0]["dnn_flops_per_instance"],
           "ns_per_instance": {}}
    for stage in runs[0]["ns_per_instance"]:
        out["ns_per_instance"][stage] = {
            b: median([r["ns_per_instance"][stage][b] for r in runs])
            for b in runs[0]["ns_per_instance"][stage]}
    fwd1 = out["ns_per_instance"]["forward"]["1"]
    if out["sgemm_gflops_1thread"]:
        out["forward_at_sgemm_peak_ns"] = round(
            out["dnn_flops_per_instance"] / out["sgemm_gflops_1thread"], 1)
    out["forward_batch1_ns"] = fwd1
    ir = callgrind_per_request(m["dir"], inst)
    if ir:
        out["instructions_per_request"] = round(ir)
    # group 2's batch of 1000 (the issue-11 goal), in process, per instance
    body = write_body("rows-1000.json", rows_body(1000))
    ir = callgrind_per_request(m["dir"], body, "--loop-body", (2, 4))
    if ir:
        out["instructions_per_instance_batch_1000"] = round(ir / 1000)
    return out


TREES_GOAL = 300000  # instances per CPU-second at batch 1000, 100 trees of depth 6 (issue 13)
SRV_MODELS = os.path.join(BUILD, "tests", "test_srv_models")


def trees_model():
    """A census BoostedTreesClassifier export: conf/census.json's columns, its
    feature columns that trees read (vocabulary, hash, numeric, bucketized),
    100 random complete trees of depth 6 (thresholds, category sets, defaults
    both ways) written by tests/unit/support/support_trees.c through
    `test_srv_models --write-export`: synthetic, no trainer involved, and a
    complete tree is the slowest shape of its depth (every walk takes 6
    steps)."""
    if not os.path.exists(SRV_MODELS):
        subprocess.run(["make", "-s", "BUILD=" + BUILD, SRV_MODELS], cwd=ROOT,
                       capture_output=True, timeout=900)
    with open(SPEC) as f:
        spec = json.load(f)
    spec["feature_columns"] = [fc for fc in spec["feature_columns"]
                               if fc["type"] not in ("crossed_column", "embedding_column",
                                                     "indicator_column")]
    names = [fc.get("name", fc.get("key")) for fc in spec["feature_columns"]]
    spec["estimator"] = {"type": "BoostedTreesClassifier", "n_classes": 2,
                         "feature_columns": names, "n_trees": 100, "max_depth": 6}
    path = os.path.join(TMP, "census_trees.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    base = os.path.join(TMP, "trees")
    r = subprocess.run([SRV_MODELS, "--write-export", path, base, "1", "13"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("trees export: %s" % (r.stderr or r.stdout)[-300:])
    return base, r.stdout.strip()


def trees_batches(base, model, out, prefix):
    """Batches of 1 and 1000 census rows through predictd serving base (as
    model) into out[prefix + "batch_N"]."""
    d = Daemon(base, model=model)
    try:
        for n in (1, 1000):
            body = write_body("rows-%d.json" % n, rows_body(n))
            code, _ = http("POST", d.url(), open(body, "rb").read(), timeout=30)
            if code != 200:
                out[prefix + "batch_%d" % n] = "not measured: predict answered %s" % code
                continue
            r = wrk_median(d.url(), body, 16 if n == 1 else 4, pid=d.p.pid)
            r["instances_per_s"] = r["rps"] * n
            if r.get("cpu_us_per_request"):
                r["instances_per_cpu_s"] = n * 1e6 / r["cpu_us_per_request"]
                if n == 1000:
                    r["goal_instances_per_cpu_s"] = TREES_GOAL
                    r["goal_met"] = r["instances_per_cpu_s"] >= TREES_GOAL
            out[prefix + "batch_%d" % n] = r
    finally:
        d.close()


@group(14, "tree serving: census, 100 trees of depth 6 (synthetic and trained)")
def g14():
    base, vdir = trees_model()
    out = {"model": "batch_N: synthetic, 100 complete random trees of depth 6 over census's 14 "
                    "tree-readable columns (support_trees.c); trained_batch_N: "
                    "conf/census_trees.json trained by predict-train (100 trees, depth <= 6)"}
    trees_batches(base, "census", out, "")
    if os.path.exists(BENCH_FORWARD):
        runs = []
        for _ in range(RUNS):
            r = subprocess.run(pinned(SERVER_CPU, [BENCH_FORWARD, vdir,
                                                   os.path.join(CENSUS, "test.json")]),
                               capture_output=True, text=True, timeout=300)
            runs.append(json.loads(r.stdout))
        out["ns_per_instance"] = {
            stage: {b: median([r["ns_per_instance"][stage][b] for r in runs])
                    for b in ("1", "1000")}
            for stage in ("forward", "transform", "parse", "render", "handle")}
        ir = callgrind_per_request(vdir, write_body("rows-1000.json", rows_body(1000)),
                                   "--loop-body", (2, 4))
        if ir:
            out["instructions_per_instance_batch_1000"] = round(ir / 1000)
    tbase, _ = train(os.path.join(TMP, "job-trees"), os.path.join(ROOT, "conf",
                                                                  "census_trees.json"))
    trees_batches(tbase, "census_trees", out, "trained_")
    return out


XGB_GOAL = 2.0  # issue 39: predictd's instances per CPU-second over Booster.predict's


@group(21, "XGBoost: census model through predictd next to Booster.predict (nthread=1)")
def g21():
    """Issue 39: the census XGBoost model of docs/models-from-elsewhere.md (100 trees,
    depth 6) trained by bench/xgb_baseline.py with Debian's python3-xgboost; rounds
    alternate predictd's REST :predict of 1000 rows (instances per server CPU-second,
    wrk) and Booster.predict on one thread on the same rows (a new DMatrix a call,
    CPU seconds); the ratio per round, median, min and max. Also one instance req/s
    and, in process, bench_forward's stages and callgrind instructions per instance."""
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    script = os.path.join(ROOT, "bench", "xgb_baseline.py")
    out_dir = os.path.join(TMP, "xgb")
    r = subprocess.run([py, script, "train", out_dir], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise RuntimeError("xgb_baseline.py train: %s" % (r.stderr or r.stdout)[-300:])
    base, body = os.path.join(out_dir, "m"), os.path.join(out_dir, "rows-1000.json")
    one = write_body("xgb-one.json", {"instances": [json.load(open(os.path.join(out_dir,
                                                                            "one.json")))]})
    out = {"model": "binary:logistic, hist, 100 trees of depth 6, 5 numeric + 3 categorical "
                    "census columns (strings through serving.json)", "rounds": []}
    d = Daemon(base, model="census_xgb")
    try:
        code, _ = http("POST", d.url(), open(body, "rb").read(), timeout=30)
        if code != 200:
            raise RuntimeError("predict of 1000 rows answered %s" % code)
        for _ in range(RUNS):
            w = wrk(d.url(), body, 4, pid=d.p.pid)
            b = subprocess.run(pinned(SERVER_CPU, [py, script, "time", out_dir, "50"]),
                               env=dict(os.environ, OMP_NUM_THREADS="1"),
                               capture_output=True, text=True, timeout=600)
            bl = json.loads(b.stdout.strip().splitlines()[-1])
            p_ips = 1000 * 1e6 / w["cpu_us_per_request"] if w.get("cpu_us_per_request") else None
            x_ips = bl["instances_per_cpu_s"]
            out["rounds"].append({"predictd_instances_per_cpu_s": p_ips,
                                  "booster_instances_per_cpu_s": x_ips,
                                  "ratio": p_ips / x_ips if p_ips and x_ips else None})
            out["xgboost"] = bl["xgboost"]
        ratios = [x["ratio"] for x in out["rounds"] if x["ratio"]]
        out["predictd_instances_per_cpu_s"] = median(
            [x["predictd_instances_per_cpu_s"] for x in out["rounds"]])
        out["booster_instances_per_cpu_s"] = median(
            [x["booster_instances_per_cpu_s"] for x in out["rounds"]])
        if ratios:
            out["ratio"], out["ratio_min"], out["ratio_max"] = median(ratios), min(ratios), \
                max(ratios)
            out["goal_ratio"] = XGB_GOAL
            out["goal_met"] = out["ratio"] >= XGB_GOAL
        out["batch_1"] = wrk_median(d.url(), one, 16, pid=d.p.pid)
    finally:
        d.close()
    if os.path.exists(BENCH_FORWARD):
        vdir = os.path.join(base, "1")
        r = subprocess.run(pinned(SERVER_CPU, [BENCH_FORWARD, vdir,
                                               os.path.join(out_dir, "one.json")]),
                           capture_output=True, text=True, timeout=300)
        out["ns_per_instance"] = {st: json.loads(r.stdout)["ns_per_instance"][st]
                                  for st in ("forward", "transform", "parse", "render", "handle")}
        ir = callgrind_per_request(vdir, body, "--loop-body", (1, 3))
        if ir:
            out["instructions_per_instance_batch_1000"] = round(ir / 1000)
    log("   predictd %.0f vs Booster.predict %.0f instances per CPU-second: %.2fx (goal %.1fx)"
        % (out["predictd_instances_per_cpu_s"] or 0, out["booster_instances_per_cpu_s"] or 0,
           out.get("ratio") or 0, XGB_GOAL))
    return out


# ------------------------------------------------------------------ report

def fmt(x, nd=0):
    if x is None:
        return "-"
    if isinstance(x, float):
        return ("%%.%df" % nd) % x
    return str(x)


V2_SINGLE_GOAL = 0.95  # v2 JSON single instance over /v1 :predict req/s (issue 24)


def v2_body(insts, datatypes, binary):
    """An Open Inference Protocol infer body for insts: JSON tensors, or binary
    tensors after the JSON header. Returns (bytes, headers)."""
    tensors, tail = [], b""
    for name, dt in datatypes.items():
        vals = [d[name] for d in insts]
        t = {"name": name, "shape": [len(insts)], "datatype": dt}
        if not binary:
            t["data"] = vals
        else:
            raw = struct.pack("<%df" % len(vals), *vals) if dt == "FP32" else b"".join(
                struct.pack("<I", len(v.encode())) + v.encode() for v in vals)
            t["parameters"] = {"binary_data_size": len(raw)}
            tail += raw
        tensors.append(t)
    head = json.dumps({"inputs": tensors}).encode()
    if not binary:
        return head, {}
    return head + tail, {"Inference-Header-Content-Length": str(len(head)),
                         "Content-Type": "application/octet-stream"}


@group(16, "Open Inference Protocol (KServe v2): one instance as v2 JSON vs /v1 :predict; "
           "batch 1000 as binary tensors vs /v1 JSON")
def g16():
    m = census_model()
    out = {"method": "one daemon; /v1 and /v2 wrk runs alternate; ratio = median of per-pair "
                     "req/s ratios (single instance, goal >= %.2f), instances per CPU-second "
                     "of the server at batch 1000 (binary must beat /v1 JSON)" % V2_SINGLE_GOAL}
    d = Daemon(m["base"])
    try:
        code, meta = http("GET", "http://127.0.0.1:%d/v2/models/census" % d.port)
        if code != 200:
            raise RuntimeError("v2 metadata answered %s" % code)
        dts = {t["name"]: t["datatype"] for t in json.loads(meta)["inputs"]}
        v2url = "http://127.0.0.1:%d/v2/models/census/infer" % d.port
        one = [tutorial_instance()]
        v1b = write_body("rows-1.json", rows_body(1))
        body, _ = v2_body(one, dts, False)
        v2b = os.path.join(TMP, "v2-1.json")
        with open(v2b, "wb") as f:
            f.write(body)
        if http("POST", v2url, body)[0] != 200:
            raise RuntimeError("v2 infer of one instance was refused")
        p1, p2 = [], []
        for _ in range(RUNS):
            p1.append(wrk(d.url(), v1b, 16, pid=d.p.pid))
            p2.append(wrk(v2url, v2b, 16, pid=d.p.pid))
        out["v1_predict_single_c16"] = summarize(p1)
        out["v2_json_single_c16"] = summarize(p2)
        ratio = median([b["rps"] / a["rps"] for a, b in zip(p1, p2) if a["rps"]])
        out["v2_over_v1_single"] = round(ratio, 3) if ratio else None
        out["v2_over_v1_single_min_max"] = "%.3f / %.3f over %d rounds" % (
            min(b["rps"] / a["rps"] for a, b in zip(p1, p2) if a["rps"]),
            max(b["rps"] / a["rps"] for a, b in zip(p1, p2) if a["rps"]), len(p1))
        ir = {"v1_daemon": predictd_ir(m["base"], "/v1/models/census:predict", v1b),
              "v2_daemon": predictd_ir(m["base"], "/v2/models/census/infer", v2b)}
        if os.path.exists(BENCH_FORWARD):
            ir["v1_in_process"] = callgrind_per_request(m["dir"], os.path.join(CENSUS,
                                                                               "test.json"))
            ir["v2_in_process"] = callgrind_per_request(m["dir"], v2b, "--loop-v2")
        out["instructions_per_request"] = {k: round(v) if isinstance(v, float) else v
                                           for k, v in ir.items()}
        out["v2_single_goal"] = V2_SINGLE_GOAL
        out["v2_single_goal_met"] = bool(ratio and ratio >= V2_SINGLE_GOAL)
        insts = csv_instances(1000)[0]
        v1k = write_body("rows-1000.json", rows_body(1000))
        body, hd = v2_body(insts, dts, True)
        v2k = os.path.join(TMP, "v2-1000.bin")
        with open(v2k, "wb") as f:
            f.write(body)
        req = urllib.request.Request(v2url, data=body, headers=hd, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            if r.status != 200:
                raise RuntimeError("v2 binary batch of 1000 was refused")
        b1, b2 = [], []
        for _ in range(RUNS):
            b1.append(wrk(d.url(), v1k, 4, pid=d.p.pid))
            b2.append(wrk(v2url, v2k, 4, pid=d.p.pid, headers=hd))
        for key, runs, path in (("v1_json_batch_1000", b1, v1k),
                                ("v2_binary_batch_1000", b2, v2k)):
            r = summarize(runs)
            r["instances_per_s"] = r["rps"] * 1000
            if r.get("cpu_us_per_request"):
                r["instances_per_cpu_s"] = 1000 * 1e6 / r["cpu_us_per_request"]
            r["body_bytes"] = os.path.getsize(path)
            out[key] = r
        a = out["v1_json_batch_1000"].get("instances_per_cpu_s")
        b = out["v2_binary_batch_1000"].get("instances_per_cpu_s")
        if a and b:
            out["v2_binary_over_v1_json_batch_1000"] = round(b / a, 3)
            out["v2_binary_beats_v1_json"] = b > a
    finally:
        d.close()
    return out


@group(9, "tuning: Bayesian vs random search regret, 4 in parallel vs 1 (Branin, Hartmann-6)")
def g9():
    script = os.path.join(ROOT, "bench", "tune_bench.py")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True,
                       env=dict(os.environ, BUILD=BUILD), timeout=1800)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    out = {"source": "bench/tune_bench.py: Branin %d trials, Hartmann-6 %d, seeds 1..%d, "
                     "median regret" % (res["trials"]["branin"], res["trials"]["hartmann6"],
                                        res["seeds"])}
    for fn in ("branin", "hartmann6"):
        row = res[fn]
        out[fn] = ("Bayesian %.3g, 4 in parallel %.3g (%.2fx, goal <= 2), random %.3g: "
                   "%.1fx smaller" % (
                       row["bayesian"]["median_regret"],
                       row["bayesian_parallel4"]["median_regret"],
                       row["ratio_parallel4_over_sequential"], row["random"]["median_regret"],
                       row["ratio_random_over_bayesian"]))
    if res.get("suggest_cpu_seconds_at_500") is not None:
        out["suggestion_at_500"] = "%.3f CPU s (goal <= 0.1)" % res["suggest_cpu_seconds_at_500"]
    out["raw"] = res
    return out


def table():
    lines = []
    mc = R.get("machine", {})
    lines.append("predictd benchmark — %s, %s usable CPU(s); %s; %d run(s) per figure, "
                 "median; wrk %ds" % (mc.get("cpu"), mc.get("cpus_usable"), PINNING, RUNS,
                                       SECONDS))
    lines.append("load average at start %.2f, at end %.2f (other work on the machine skews "
                 "every figure)" % (mc.get("loadavg_start", 0), mc.get("loadavg_end", 0)))

    def lat(r):
        if not isinstance(r, dict):
            return str(r)
        text = "%8s req/s  p50 %6s  p99 %6s  p99.9 %6s ms" % (
            fmt(r.get("rps")), fmt(r.get("p50_ms"), 2), fmt(r.get("p99_ms"), 2),
            fmt(r.get("p999_ms"), 2))
        if r.get("cpu_us_per_request"):
            text += "  cpu %6s us/req" % fmt(r["cpu_us_per_request"], 1)
        return text

    for num in sorted(k for k in R if k.isdigit()):
        g = R[num]
        lines.append("")
        lines.append("%s. %s" % (num, g["title"]))
        if "error" in g:
            lines.append("   not measured: %s" % g["error"])
            continue
        for k, v in g.items():
            if k in ("title", "seconds", "raw", "method", "appear_note", "when"):
                continue
            if isinstance(v, dict) and "rps" in v:
                extra = ""
                if "instances_per_s" in v:
                    extra = "  (%s instances/s" % fmt(v["instances_per_s"])
                    if v.get("instances_per_cpu_s"):
                        extra += ", %s per CPU-second" % fmt(v["instances_per_cpu_s"])
                    if v.get("goal_instances_per_cpu_s"):
                        extra += "; goal %s: %s" % (fmt(v["goal_instances_per_cpu_s"]),
                                                    "met" if v.get("goal_met") else "not met")
                    extra += ")"
                lines.append("   %-26s %s%s" % (k, lat(v), extra))
            elif isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()):
                batches = list(next(iter(v.values())).keys())
                lines.append("   %-26s %s" % (k + " (batch)", "".join("%10s" % b
                                                                       for b in batches)))
                for stage, row in v.items():
                    lines.append("     %-24s %s" % (stage, "".join("%10s" % fmt(row.get(b), 1)
                                                                   for b in batches)))
            elif isinstance(v, dict):
                lines.append("   %-26s %s" % (k, json.dumps(v)))
            else:
                lines.append("   %-26s %s" % (k, fmt(v, 3) if isinstance(v, float) else v))
    return "\n".join(lines)


PREDICT_MODEL = os.path.join(BUILD, "predict-model")


def batch_predict_cpu(base, data, fmt, out, np_=0):
    """(CPU seconds of the run and its children, wall seconds, instances) of
    one predict-model batch-predict job at batch 1000 (np_ > 0: under mpirun
    with that many ranks)."""
    cmd = [PREDICT_MODEL, "batch-predict", "--dir", base, "--input", data,
           "--instances-format", fmt, "--output-dir", out, "--batch-size", "1000",
           "--shard-bytes", str(4 << 20), "--progress", "quiet"]
    if np_:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np_)] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError("batch-predict failed: " + r.stderr[-300:])
    with open(os.path.join(r.stdout.strip(), "completion.json")) as f:
        n = json.load(f)["completionStats"]["successfulCount"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, n


@group(17, "batch-predict: census instances per CPU-second at batch 1000, CSV and TFRecord, "
           "1 and 2 ranks")
def g17():
    m = census_model()
    src = os.path.join(CENSUS, "adult.test.csv")
    csv_path = os.path.join(TMP, "batch-x4.csv")
    with open(src) as f:
        text = f.read()
    with open(csv_path, "w") as f:
        f.write(text * 4)  # 65124 instances
    tfr = os.path.join(TMP, "batch-x4.tfrecord")
    r = subprocess.run([PREDICT_MODEL, "convert", "--spec", SPEC, "--input", csv_path, "--to",
                        "tfrecord", "--output", tfr], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise RuntimeError("convert failed: " + r.stderr[-300:])
    out = {"source": "predict-model batch-predict --batch-size 1000, adult.test.csv x4 "
                     "(median of %d; CPU of the process and its children)" % RUNS}
    ranks = (0, 2) if shutil.which("mpirun") else (0,)
    for fmt, data in (("csv", csv_path), ("tf-record", tfr)):
        for np_ in ranks:
            runs = [batch_predict_cpu(m["base"], data, fmt,
                                      os.path.join(TMP, "batch-out-%s-%d-%d" % (fmt, np_, k)),
                                      np_) for k in range(RUNS)]
            cpu = median([x[0] for x in runs])
            wall = median([x[1] for x in runs])
            n = runs[0][2]
            key = "%s, %s" % (fmt, "1 rank" if np_ == 0 else "%d ranks (mpirun)" % np_)
            out[key] = {"instances": n, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
                        "instances_per_cpu_s": round(n / cpu) if cpu > 0 else None,
                        "instances_per_wall_s": round(n / wall) if wall > 0 else None}
            log("   %s: %s instances/CPU-s, %s instances/s" % (
                key, out[key]["instances_per_cpu_s"], out[key]["instances_per_wall_s"]))
    daemon = R.get("2", {}).get("batch_1000", {})
    if isinstance(daemon, dict) and daemon.get("instances_per_cpu_s"):
        out["daemon batch 1000 instances_per_cpu_s (group 2, this run)"] = round(
            daemon["instances_per_cpu_s"])
    return out


XAI_METHODS = [
    ("exact Shapley (2^13 coalitions)", {"exactShapleyAttribution": {}}),
    ("sampled Shapley, pathCount 10", {"sampledShapleyAttribution": {"pathCount": 10}}),
    ("sampled Shapley, pathCount 50", {"sampledShapleyAttribution": {"pathCount": 50}}),
    ("integrated gradients, stepCount 50", {"integratedGradientsAttribution": {"stepCount": 50}}),
    ("integrated gradients, stepCount 100",
     {"integratedGradientsAttribution": {"stepCount": 100}}),
]


@group(18, "explanations per second per core: census wide & deep and trees, one instance, "
           "each method")
def g18():
    m = census_model()
    pm = os.path.join(BUILD, "predict-model")
    inst = tutorial_instance()
    # every input differs from the baseline (13 players): the most work
    base = {k: ({"inputBaselines": [v + 1]} if isinstance(v, (int, float))
                else {"inputBaselines": [""]}) for k, v in inst.items()}
    out = {"method": "predict-model explain --timing (in process, pinned, model open "
                     "excluded), median of %d runs x 20" % RUNS, "per_method": {}}
    runs = [(m["dir"], name, params, "probabilities") for name, params in XAI_METHODS]
    tdir = trees_model()[1]  # the version directory
    runs += [(tdir, "trees: TreeSHAP of the logit (100 trees, depth 6)",
              {"exactShapleyAttribution": {}}, "logits"),
             (tdir, "trees: exact Shapley of the probability (2^13)",
              {"exactShapleyAttribution": {}}, "probabilities")]
    for model_dir, name, params, output in runs:
        body = write_body("explain-%d.json" % len(out["per_method"]),
                          {"instances": [inst], "explanationSpecOverride":
                           {"parameters": params, "metadata": {"inputs": base,
                                                               "outputs": {output: {}}}}})
        secs, rows = [], 0
        for _ in range(RUNS * 20):
            r = subprocess.run(pinned(SERVER_CPU, [pm, "explain", "--dir", model_dir,
                                                   "--json-request", body, "--timing"]),
                               capture_output=True, text=True, timeout=120)
            mt = re.search(r"explained in ([0-9.]+) s, ([0-9]+) model rows", r.stderr)
            if r.returncode != 0 or not mt:
                raise RuntimeError("predict-model explain: %s" % r.stderr[-200:])
            secs.append(float(mt.group(1)))
            rows = int(mt.group(2))
        t = median(secs)
        out["per_method"][name] = {"explanations_per_second": round(1 / t, 1),
                                   "ms": round(t * 1e3, 3), "model_rows": rows,
                                   "rows_per_second": round(rows / t)}
        log("   %-50s %8.1f explanations/s  %7.3f ms  %6d rows" % (name, 1 / t, t * 1e3, rows))
    return out


def main():
    missing = [p for p in (PREDICTD, TRAIN) if not os.path.exists(p)]
    if missing:
        log("bench: not built: %s (run make BUILD=%s)" % (", ".join(missing), BUILD))
        return 0
    if not shutil.which("wrk"):
        log("bench: wrk is not installed; HTTP figures will be missing")
    R["machine"] = machine()
    R["machine"]["pinning"] = PINNING
    R["runs_per_figure"] = RUNS
    R["wrk_seconds"] = SECONDS
    R["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    R["command"] = "make bench"
    try:
        for g in (g1, g2, g3, g4, g5, g6, g7, g8, g9, g10, g11, g12, g13, g14, g15, g16, g17, g18,
                  g19, g20, g21):
            g()
    finally:
        for p in STARTED:
            stop(p)
        R["machine"]["loadavg_end"] = os.getloadavg()[0]
        # each group names its run, so that a table built from results.json
        # (scripts/bench_table.py) can tell one run from a merge of several
        for k in R:
            if k.isdigit():
                R[k]["when"] = R["when"]
        path = os.environ.get("BENCH_RESULTS") or os.path.join(ROOT, "bench", "results.json")
        if ONLY and os.path.exists(path):
            # a partial run updates its groups in the last full results
            R["command"] = "BENCH_ONLY=%s make bench" % ",".join(sorted(ONLY))
            try:
                with open(path) as f:
                    old = json.load(f)
                for k, v in old.items():
                    if k.isdigit() and k not in R:
                        v.setdefault("when", old.get("when"))
                        R[k] = v
            except (OSError, ValueError):
                pass
        with open(path, "w") as f:
            json.dump(R, f, indent=1, sort_keys=False)
            f.write("\n")
        print(table())
        print("\nwritten: %s" % os.path.relpath(path, os.getcwd()))
        shutil.rmtree(TMP, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
