"""otlp_receiver — an OTLP/HTTP trace receiver for the tests (python's
http.server on 127.0.0.1, or https with a certificate the test made): it
checks every body against the OTLP JSON mapping of opentelemetry/proto/
trace/v1/trace.proto (field names, their JSON types, hex ids, 64-bit
integers as strings) and keeps the spans, with the problems it found."""
import http.server
import json
import re
import ssl
import threading
import time

HEX32, HEX16 = re.compile(r"^[0-9a-f]{32}$"), re.compile(r"^[0-9a-f]{16}$")
SPAN_FIELDS = {"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind",
               "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount",
               "events", "droppedEventsCount", "links", "droppedLinksCount", "status"}


def u64(v):
    return (isinstance(v, str) and v.isdigit()) or (isinstance(v, int) and v >= 0)


def any_value(v, where, bad):
    if not isinstance(v, dict) or len(v) != 1:
        bad.append(where + ": AnyValue must hold one member")
        return
    (k, x), = v.items()
    ok = {"stringValue": lambda x: isinstance(x, str),
          "boolValue": lambda x: isinstance(x, bool),
          "intValue": lambda x: (isinstance(x, str) and re.match(r"^-?\d+$", x)) or
          (isinstance(x, int) and not isinstance(x, bool)),
          "doubleValue": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)}
    if k not in ok or not ok[k](x):
        bad.append("%s: %s=%r" % (where, k, x))


def key_values(kvs, where, bad):
    if not isinstance(kvs, list):
        bad.append(where + ": attributes must be a list")
        return {}
    out = {}
    for kv in kvs:
        if not isinstance(kv, dict) or set(kv) - {"key", "value"} or \
                not isinstance(kv.get("key"), str):
            bad.append(where + ": KeyValue %r" % kv)
            continue
        any_value(kv.get("value"), where + "." + kv["key"], bad)
        out[kv["key"]] = list(kv["value"].values())[0] if isinstance(kv.get("value"), dict) \
            and kv["value"] else None
    return out


def check_body(doc, service="predictd"):
    """(spans, problems) of an ExportTraceServiceRequest in JSON."""
    bad, spans = [], []
    if not isinstance(doc, dict) or set(doc) != {"resourceSpans"} or \
            not isinstance(doc["resourceSpans"], list):
        return [], ["top level: {\"resourceSpans\": [...]} expected"]
    for rs in doc["resourceSpans"]:
        if set(rs) - {"resource", "scopeSpans", "schemaUrl"}:
            bad.append("ResourceSpans fields %s" % sorted(rs))
        res = key_values(rs.get("resource", {}).get("attributes", []), "resource", bad)
        if res.get("service.name") != service:
            bad.append("resource service.name %r" % res.get("service.name"))
        for ss in rs.get("scopeSpans", []):
            if set(ss) - {"scope", "spans", "schemaUrl"} or \
                    not isinstance(ss.get("scope", {}).get("name"), str):
                bad.append("ScopeSpans %s" % sorted(ss))
            for s in ss.get("spans", []):
                w = "span %s" % s.get("name")
                if set(s) - SPAN_FIELDS:
                    bad.append("%s: unknown fields %s" % (w, sorted(set(s) - SPAN_FIELDS)))
                if not HEX32.match(str(s.get("traceId"))) or not HEX16.match(str(s.get("spanId"))):
                    bad.append(w + ": ids")
                if "parentSpanId" in s and not HEX16.match(str(s["parentSpanId"])):
                    bad.append(w + ": parentSpanId")
                if not isinstance(s.get("name"), str) or s.get("kind") not in range(6):
                    bad.append(w + ": name/kind")
                if not u64(s.get("startTimeUnixNano")) or not u64(s.get("endTimeUnixNano")):
                    bad.append(w + ": times must be uint64 (decimal strings)")
                if "traceState" in s and not isinstance(s["traceState"], str):
                    bad.append(w + ": traceState")
                st = s.get("status", {})
                if set(st) - {"code", "message"} or st.get("code", 0) not in (0, 1, 2):
                    bad.append(w + ": status")
                s = dict(s)
                s["attrs"] = key_values(s.get("attributes", []), w, bad)
                s["start"], s["end"] = int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])
                spans.append(s)
    return spans, bad


class Receiver:
    """Receives POST /v1/traces; with cert and key (PEM files) over TLS."""

    def __init__(self, delay=0.0, cert=None, key=None, service="predictd"):
        self.spans, self.problems, self.posts, self.delay = [], [], 0, delay
        self.service = service  # the resource's service.name every body must carry
        self.lock = threading.Lock()
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                if rec.delay:
                    time.sleep(rec.delay)
                ctype = self.headers.get("Content-Type", "")
                try:
                    spans, bad = check_body(json.loads(body), rec.service)
                except ValueError as e:
                    spans, bad = [], ["not JSON: %s" % e]
                if self.path != "/v1/traces" or ctype != "application/json":
                    bad.append("POST %s with Content-Type %s" % (self.path, ctype))
                with rec.lock:
                    rec.posts += 1
                    rec.spans += spans
                    rec.problems += bad
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:
                    pass  # the slow case: predictd gave up waiting (its 2 s timeout)

            def log_message(self, *a):
                pass

        self.srv = _Server(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.tls_errors = []
        if cert:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(cert, key)
            self.srv.socket = tls.wrap_socket(self.srv.socket, server_side=True,
                                              do_handshake_on_connect=False)
            H.setup = _tls_setup(H.setup, self)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a refused handshake is kept in tls_errors, not printed


def _tls_setup(setup, rec):
    """The handler's setup with the TLS handshake first (its failures kept:
    a client that refused the certificate)."""
    def run(self):
        self.request.settimeout(5)
        try:
            self.request.do_handshake()
        except (ssl.SSLError, OSError) as e:
            with rec.lock:
                rec.tls_errors.append(str(e))
            raise
        setup(self)
    return run
