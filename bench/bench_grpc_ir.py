#!/usr/bin/python3
"""bench_grpc_ir.py — instructions per call of predictd's gRPC and REST doors
in one daemon under valgrind's callgrind (a count that does not move with the
machine's load, unlike CPU seconds): REST /v1 :predict (one census instance,
a keep-alive socket), REST /v2 infer with the instance as binary tensors,
TF Serving's gRPC Predict and the Open Inference Protocol's gRPC ModelInfer
(raw_input_contents), each from a client sending one call at a time.

For each kind: a warm-up of --warm calls, callgrind's counters zeroed
(callgrind_control -z), --calls calls, a dump (callgrind_control -d) whose
total over the calls is the figure. The daemon's idle cost over the same
wall time (its timers, the gRPC watcher's ticks, libgrpc's own threads) is
counted in a dump of an idle stretch and taken off pro rata (idle_ir_per_s
is printed). With --keep DIR the dumps stay there, and the cost of each
kind is split by the shared object that spent it (libgrpc, libprotobuf-c,
libc, predictd itself, ...), from callgrind_annotate's exclusive counts.
With --echo BIN (build/bench/bench_grpc_echo), the same Predict calls are
also counted against that bare libgrpc server answering the daemon's own
PredictResponse bytes: "grpc_echo_floor", the library's share of a call.

Run by Debian's /usr/bin/python3 (python3-grpcio); stubs from
server/grpc/protos as bench_grpc.py makes them. Only 127.0.0.1.
  bench_grpc_ir.py --predictd build/predictd --base EXPORT_BASE \
      --instance data/census/test.json --gen DIR [--calls 300] [--warm 30]
      [--keep DIR] [--kinds rest_v1,rest_v2_binary,grpc_predict,grpc_infer]
      [--echo build/bench/bench_grpc_echo]
Prints one JSON object: {"kind": {"ir_per_call", "calls", "by_object"?}, ...}.
"""
import argparse
import glob
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_grpc  # noqa: E402  (stubs, request builders)
import bench_ir  # noqa: E402  (request_bytes, read_answer)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def dump(pid, outf, before):
    """Dumps callgrind's counters of pid; the new dump file's total."""
    subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True, timeout=120,
                   check=True)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        files = set(glob.glob(outf + ".*")) - before
        files = {f for f in files if re.search(r"\.\d+$", f)}
        for f in files:
            try:
                with open(f) as fh:
                    m = re.search(r"^totals: (\d+)", fh.read(), re.M)
                if m:
                    return f, int(m.group(1))
            except OSError:
                pass
        time.sleep(0.1)
    raise RuntimeError("callgrind wrote no dump")


def by_object(path, per):
    """Exclusive instructions per call by shared object (callgrind_annotate)."""
    r = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True,
                       text=True)
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if not m or "PROGRAM TOTALS" in line or ":" not in m.group(2):
            continue
        if re.search(r":(start_thread|clone) ", m.group(2)):
            continue  # callgrind_annotate lists a thread's root with all it ran
        ir = int(m.group(1).replace(",", ""))
        o = re.search(r"\[([^\]]+)\]\s*$", m.group(2))
        if not o:
            continue  # a source line of the annotation, not a function's total
        obj = os.path.basename(o.group(1))
        obj = re.sub(r"\.so[.\d]*$", "", obj)
        out[obj] = out.get(obj, 0) + ir
    tot = sum(out.values()) or 1
    return {k: round(v / per) for k, v in sorted(out.items(), key=lambda x: -x[1])
            if v / tot >= 0.005}


def echo_floor(echo, pred, calls, warm, tmp):
    """Instructions per Predict call of the bare libgrpc server (echo),
    answering the bytes in tmp/answer.bin."""
    import grpc
    port = free_port()
    outf = os.path.join(tmp, "cg-echo")
    log = open(outf + ".log", "w+")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf, echo,
                          str(port), os.path.join(tmp, "answer.bin"), "1"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        grpc.channel_ready_future(ch).result(timeout=120)
        ps = bench_grpc.prediction_stub(ch)
        for _ in range(warm):
            ps.Predict(pred, timeout=60)
        before = set(glob.glob(outf + ".*"))
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True,
                       timeout=120, check=True)
        for _ in range(calls):
            ps.Predict(pred, timeout=60)
        f, ir = dump(p.pid, outf, before)
        ch.close()
        return {"ir_per_call": round(ir / calls), "calls": calls}
    finally:
        p.terminate()
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--predictd", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--instance", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warm", type=int, default=30)
    ap.add_argument("--keep")
    ap.add_argument("--echo")
    ap.add_argument("--kinds", default="rest_v1,rest_v2_binary,grpc_predict,grpc_infer")
    a = ap.parse_args()
    bench_grpc.stubs(a.gen)
    import grpc
    with open(a.instance) as f:
        inst = json.load(f)
    rport, gport = free_port(), free_port()
    tmp = a.keep or tempfile.mkdtemp(prefix="bench-grpc-ir-")
    os.makedirs(tmp, exist_ok=True)
    outf = os.path.join(tmp, "cg")
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf, a.predictd,
            "--rest_api_host=127.0.0.1", "--rest_api_port=%d" % rport, "--port=%d" % gport,
            "--model_name=census", "--model_base_path=%s" % a.base,
            "--rest_api_num_threads=1", "--file_system_poll_wait_seconds=3600"]
    log = open(outf + ".log", "w+")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    res = {}
    try:
        end = time.monotonic() + 180
        sig = None
        while time.monotonic() < end:
            try:
                hc = http.client.HTTPConnection("127.0.0.1", rport, timeout=30)
                hc.request("GET", "/v1/models/census/metadata")
                r = hc.getresponse()
                body = r.read()
                hc.close()
                if r.status == 200:
                    sig = json.loads(body)["metadata"]["signature_def"]["signature_def"]
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not sig:
            raise RuntimeError("the daemon did not answer its metadata")
        hc = http.client.HTTPConnection("127.0.0.1", rport, timeout=30)
        hc.request("GET", "/v2/models/census")
        v2meta = json.loads(hc.getresponse().read())
        hc.close()
        dts = {t["name"]: t["datatype"] for t in v2meta["inputs"]}
        callers = {}
        sock = socket.create_connection(("127.0.0.1", rport), timeout=60)
        state = {"buf": b""}

        def rest(req):
            def call():
                sock.sendall(req)
                st, state["buf"] = bench_ir.read_answer(sock, state["buf"])
                if st != 200:
                    raise RuntimeError("REST answered %d" % st)
            return call
        url = "http://127.0.0.1:%d" % rport
        callers["rest_v1"] = rest(bench_ir.request_bytes(
            url + "/v1/models/census:predict", json.dumps({"instances": [inst]}).encode(),
            [])[0])
        head, tail = bench_grpc.v2_binary([inst], dts)
        callers["rest_v2_binary"] = rest(bench_ir.request_bytes(
            url + "/v2/models/census/infer", head + tail,
            ["Inference-Header-Content-Length: %d" % len(head),
             "Content-Type: application/octet-stream"])[0])
        ch = grpc.insecure_channel("127.0.0.1:%d" % gport)
        grpc.channel_ready_future(ch).result(timeout=120)  # the gRPC port may open after REST's
        pred = bench_grpc.predict_request(sig["serving_default"], inst)
        ps = bench_grpc.prediction_stub(ch)
        callers["grpc_predict"] = lambda: ps.Predict(pred, timeout=60)
        with open(os.path.join(tmp, "answer.bin"), "wb") as f:  # the echo's answer
            f.write(ps.Predict(pred, timeout=60).SerializeToString())
        inf = bench_grpc.infer_request([inst], dts)
        gs = bench_grpc.inference_stub(ch)
        callers["grpc_infer"] = lambda: gs.ModelInfer(inf, timeout=60)
        before = set(glob.glob(outf + ".*"))
        kinds = [k for k in a.kinds.split(",") if k]
        # idle: what the daemon spends per second doing nothing
        t0 = time.monotonic()
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True,
                       timeout=120, check=True)
        time.sleep(3)
        f, ir = dump(p.pid, outf, before)
        before.add(f)
        idle = ir / (time.monotonic() - t0)
        res["idle_ir_per_s"] = round(idle)
        for k in kinds:
            c = callers[k]
            for _ in range(a.warm):
                c()
            subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True,
                           timeout=120, check=True)
            t0 = time.monotonic()
            for _ in range(a.calls):
                c()
            dt = time.monotonic() - t0
            f, ir = dump(p.pid, outf, before)
            before.add(f)
            r = {"ir_per_call": round((ir - idle * dt) / a.calls), "calls": a.calls,
                 "idle_share": round(idle * dt / ir, 3)}
            if a.keep:
                os.replace(f, os.path.join(tmp, "cg-%s" % k))
                r["by_object"] = by_object(os.path.join(tmp, "cg-%s" % k), a.calls)
            res[k] = r
        sock.close()
        ch.close()
    finally:
        p.terminate()
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
    if a.echo:
        res["grpc_echo_floor"] = echo_floor(a.echo, pred, a.calls, a.warm, tmp)
    if "rest_v1" in res:
        for k in ("grpc_predict", "grpc_infer", "rest_v2_binary", "grpc_echo_floor"):
            if k in res:
                res[k]["over_rest_v1"] = round(res[k]["ir_per_call"] /
                                               res["rest_v1"]["ir_per_call"], 2)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
