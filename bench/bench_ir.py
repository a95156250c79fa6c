#!/usr/bin/env python3
"""bench_ir.py — instructions per request of an HTTP server (predictd,
nginx, bench_mhd), counted by valgrind's callgrind: a figure that does not
move with the machine's load, unlike requests/s.

The server runs under callgrind twice; a client sends it N1, then N2
requests over one keep-alive connection (one in flight, as wrk does per
connection), after a warm-up of the same request; the difference of the
two totals over N2 - N1 is what one request costs, start-up and loading
cancel out. Each total is read from a dump that callgrind_control makes
after the last answer (so shutdown is not counted: nginx under valgrind,
started from Python, may not act on its stop signal until woken), else
from the summary callgrind prints at exit. With --annotate, the second run's callgrind file is
kept and the inclusive cost of named functions is printed per request
(callgrind_annotate --inclusive=yes) — those figures include the fixed
costs of one run, so they are for requests of the second run only when
N2 is large.

  bench/bench_ir.py --url http://127.0.0.1:PORT/PATH --body FILE \
      [--header 'Name: value'] [--counts 200,1200] -- SERVER ARGV...

The server must listen on the URL's port when started and stop on SIGTERM
(predictd) or SIGQUIT (nginx: --stop QUIT). Prints one JSON line.
Only Python's standard library; only 127.0.0.1.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse


def request_bytes(url, body, headers):
    u = urllib.parse.urlsplit(url)
    head = ["POST %s HTTP/1.1" % (u.path or "/"), "Host: %s" % u.netloc,
            "Content-Length: %d" % len(body)]
    names = {h.split(":", 1)[0].strip().lower() for h in headers}
    if "content-type" not in names:
        head.append("Content-Type: application/json")
    head += headers
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body, (u.hostname, u.port)


def read_answer(sock, buf):
    """Reads one HTTP answer (Content-Length framed) from sock; returns
    (status, rest of buf)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed before an answer")
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    n = int(m.group(1)) if m else 0
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed inside an answer")
        buf += chunk
    return status, buf[n:]


def wait_port(addr, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(addr, timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def dump_total(pid, outf, timeout=60):
    """The instructions of process pid so far: callgrind_control makes it
    write its counts (outf.1), whose totals line is read. None when that
    fails. (nginx under valgrind, started from Python, may not stop on a
    signal until something wakes it; the dump does not depend on the stop,
    and leaves shutdown out of the count.)"""
    try:
        subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True,
                       timeout=timeout, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(outf + ".1") as f:
                m = re.search(r"^totals: (\d+)", f.read(), re.M)
            if m:
                return int(m.group(1))
        except OSError:
            pass
        time.sleep(0.1)
    return None


def one_run(argv, url, body, headers, n, warm, stop_sig, outf, ready_timeout=120):
    req, addr = request_bytes(url, body, headers)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf] + argv
    log = open(outf + ".log", "w+")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_port(addr, ready_timeout):
            raise RuntimeError("server did not listen on %s:%d" % addr)
        s = socket.create_connection(addr, timeout=60)
        buf = b""
        # readiness: the model may load after the port opens
        end = time.monotonic() + ready_timeout
        while True:
            s.sendall(req)
            st, buf = read_answer(s, buf)
            if st == 200 or time.monotonic() > end:
                break
            time.sleep(0.1)
        if st != 200:
            raise RuntimeError("server answered %d" % st)
        bad = 0
        for _ in range(warm + n):
            s.sendall(req)
            st, buf = read_answer(s, buf)
            bad += st != 200
        s.close()
        if bad:
            raise RuntimeError("%d answers were not 200" % bad)
        dumped = dump_total(p.pid, outf)
    finally:
        p.send_signal(stop_sig)
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    log.seek(0)
    text = log.read()
    log.close()
    if dumped is not None:
        return dumped
    m = re.findall(r"Collected : (\d+)", text)
    if not m:
        raise RuntimeError("callgrind gave no total: %s" % text[-400:])
    return int(m[-1])


def annotate(outf, funcs, per):
    """Inclusive instructions of each function in funcs (substring of the
    symbol), divided by per."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", outf],
                       capture_output=True, text=True)
    res = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(.*?\)\s+\S*?:?(\S+)", line)
        if not m:
            m = re.match(r"\s*([\d,]+)\s+(\S+)", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        sym = line.split(":")[-1].split()[0] if ":" in line else m.group(2)
        for f in funcs:
            if sym == f and f not in res:
                res[f] = round(ir / per)
    return res


def measure(argv, url, body, headers=(), counts=(200, 1200), warm=50, stop="TERM",
            annotate_funcs=None, keep=None):
    """Instructions per request: dict with per_request, totals, counts."""
    sig = getattr(signal, "SIG" + stop)
    tmp = tempfile.mkdtemp(prefix="bench-ir-")
    irs = []
    for i, n in enumerate(counts):
        outf = os.path.join(tmp, "cg.%d" % i)
        irs.append(one_run(argv, url, body, list(headers), n, warm, sig, outf))
    out = {"per_request": round((irs[1] - irs[0]) / float(counts[1] - counts[0])),
           "totals": irs, "counts": list(counts)}
    second = os.path.join(tmp, "cg.1")
    if os.path.exists(second + ".1"):
        second += ".1"  # the dump (dump_total): the requests, without shutdown
    if annotate_funcs:
        out["inclusive_per_request_run2"] = annotate(second, annotate_funcs,
                                                     counts[1] + warm)
    if keep:
        os.replace(second, keep)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--body", required=True)
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--counts", default="200,1200")
    ap.add_argument("--stop", default="TERM")
    ap.add_argument("--keep", help="keep the second run's callgrind file here")
    ap.add_argument("--annotate", default="", help="comma-separated function names")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv and a.argv[0] == "--" else a.argv
    with open(a.body, "rb") as f:
        body = f.read()
    counts = tuple(int(x) for x in a.counts.split(","))
    funcs = [f for f in a.annotate.split(",") if f]
    print(json.dumps(measure(argv, a.url, body, a.header, counts, stop=a.stop,
                             annotate_funcs=funcs, keep=a.keep)))


if __name__ == "__main__":
    sys.exit(main())
