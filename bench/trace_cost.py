#!/usr/bin/env python3
"""trace_cost.py — predictd CPU time per :predict request (2 census instances,
one keep-alive client) with tracing off, sample_rate 0 and sample_rate 1 (to a
local receiver that answers at once), read from /proc/PID/stat over 3 rounds of
3,000 requests each (the exporter's flush included), twice. BUILD=build
python3 bench/trace_cost.py (docs/console.md, "What it costs")."""
import json, os, sys, time, http.server, threading, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import test_daemon_lib as L
W = L.workdir()
BASE = os.path.join(W, "census"); os.makedirs(BASE)
L.write_export(L.CENSUS_SPEC, BASE, 7, 1)
BODY = json.dumps({"instances": [L.census_instance(), L.census_instance()]})
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
def run(rate):
    conf = os.path.join(W, "c-%s.json" % rate)
    doc = {"models": [{"name": "census", "base_path": BASE}]}
    if rate is not None:
        doc["tracing"] = {"otlp_endpoint": "http://127.0.0.1:%d/v1/traces" % srv.server_address[1], "sample_rate": rate}
    L.write_json_atomic(conf, doc)
    d = L.Daemon(W, ["--model_config_file=" + conf]); assert d.wait_ready()
    c = L.Client(d.port)
    for _ in range(500): c.request("POST", "/v1/models/census:predict", BODY)
    out = []
    tck = os.sysconf("SC_CLK_TCK")
    def cpu():
        f = open("/proc/%d/stat" % d.proc.pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tck
    for _ in range(3):
        c0 = cpu()
        for _ in range(3000): c.request("POST", "/v1/models/census:predict", BODY)
        time.sleep(5.5)  # the exporter's flush, counted in the daemon's CPU
        out.append((cpu() - c0) / 3000 * 1e6)
    d.stop()
    return out
res = {}
for rnd in range(2):
    for rate in (None, 0.0, 1.0):
        res.setdefault(str(rate), []).extend(run(rate))
for k, v in res.items():
    print(k, "median %.1f us CPU/request" % statistics.median(v), "min %.1f max %.1f" % (min(v), max(v)))
