"""h2_raw.py — a hand-built HTTP/2 client for tests that must misbehave on
purpose (tests/integration/test_daemon_grpc_faults; not executable itself).

Frames as RFC 7540 section 4.1 lays them out (24-bit length, 8-bit type,
8-bit flags, 31-bit stream id), the connection preface of section 3.5,
SETTINGS and its ACK (6.5), HEADERS (6.2), DATA (6.1), RST_STREAM (6.4),
PING (6.7), GOAWAY (6.8). Header blocks are written as HPACK (RFC 7541)
literal fields without indexing, new name, no Huffman (6.2.2, 5.2); the
server's blocks are read with the static table (appendix A), the dynamic
table (2.3, 4) and integers of section 5.1; a Huffman-coded string is
refused (the gRPC core does not Huffman-code the fields read here). gRPC's
message prefix (1 byte compressed flag, 4 bytes big-endian length) and its
headers follow grpc's doc/PROTOCOL-HTTP2.md. Every read is bounded by the
socket's timeout."""
import socket
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20
PREDICT = "/tensorflow.serving.PredictionService/Predict"

STATIC = [None] + [tuple(x.split(" ", 1)) if " " in x else (x, "") for x in [
    ":authority", ":method GET", ":method POST", ":path /", ":path /index.html",
    ":scheme http", ":scheme https", ":status 200", ":status 204", ":status 206",
    ":status 304", ":status 400", ":status 404", ":status 500", "accept-charset",
    "accept-encoding gzip, deflate", "accept-language", "accept-ranges", "accept",
    "access-control-allow-origin", "age", "allow", "authorization", "cache-control",
    "content-disposition", "content-encoding", "content-language", "content-length",
    "content-location", "content-range", "content-type", "cookie", "date", "etag", "expect",
    "expires", "from", "host", "if-match", "if-modified-since", "if-none-match", "if-range",
    "if-unmodified-since", "last-modified", "link", "location", "max-forwards",
    "proxy-authenticate", "proxy-authorization", "range", "referer", "refresh",
    "retry-after", "server", "set-cookie", "strict-transport-security",
    "transfer-encoding", "user-agent", "vary", "via", "www-authenticate"]]
assert len(STATIC) == 62


def frame(ftype, flags, stream, payload=b""):
    """One frame: the 9-byte header and its payload."""
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xffff, ftype, flags, stream & 0x7fffffff) + payload


def hpack_int(value, prefix_bits, first=0):
    """An integer of RFC 7541 5.1 with prefix_bits in the first byte (whose
    high bits are first)."""
    top = (1 << prefix_bits) - 1
    if value < top:
        return bytes([first | value])
    out = [first | top]
    value -= top
    while value >= 128:
        out.append((value & 0x7f) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name, value):
    """A literal header field without indexing, new name, no Huffman."""
    n, v = name.encode(), value.encode()
    return b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def grpc_headers(port, path=PREDICT, timeout=None, extra=()):
    """A gRPC call's request header block (literals only)."""
    fields = [(":method", "POST"), (":scheme", "http"), (":path", path),
              (":authority", "127.0.0.1:%d" % port), ("content-type", "application/grpc"),
              ("te", "trailers")]
    if timeout:
        fields.append(("grpc-timeout", timeout))
    return b"".join(hpack_literal(k, v) for k, v in list(fields) + list(extra))


def grpc_message(payload, compressed=0, length=None):
    """gRPC's length-prefixed message: flag, 4-byte length (length, if
    given, is what the prefix claims), bytes."""
    return struct.pack(">BI", compressed, len(payload) if length is None else length) + payload


class Decoder:
    """HPACK decoding with the dynamic table (RFC 7541 2.3, 4.4 eviction)."""

    def __init__(self):
        self.table = []  # newest first: index 62 is table[0]
        self.size = 0
        self.max = 4096

    def _int(self, b, i, bits):
        top = (1 << bits) - 1
        v = b[i] & top
        i += 1
        if v < top:
            return v, i
        m = 0
        while True:
            c = b[i]
            i += 1
            v += (c & 0x7f) << m
            m += 7
            if not c & 0x80:
                return v, i

    def _str(self, b, i):
        huff = b[i] & 0x80
        n, i = self._int(b, i, 7)
        if huff:
            raise ValueError("a Huffman-coded string (not read by this client)")
        return b[i:i + n].decode("latin-1"), i + n

    def _get(self, idx):
        if 0 < idx < len(STATIC):
            return STATIC[idx]
        if 0 <= idx - len(STATIC) < len(self.table):
            return self.table[idx - len(STATIC)]
        raise ValueError("HPACK index %d not in the tables" % idx)

    def _add(self, name, value):
        self.table.insert(0, (name, value))
        self.size += len(name) + len(value) + 32
        self._evict()

    def _evict(self):
        while self.size > self.max and self.table:
            n, v = self.table.pop()
            self.size -= len(n) + len(v) + 32

    def decode(self, b):
        """A header block -> [(name, value)]."""
        out, i = [], 0
        while i < len(b):
            c = b[i]
            if c & 0x80:  # indexed
                idx, i = self._int(b, i, 7)
                out.append(self._get(idx))
                continue
            if c & 0xe0 == 0x20:  # dynamic table size update
                self.max, i = self._int(b, i, 5)
                self._evict()
                continue
            bits = 6 if c & 0x40 else 4
            idx, i = self._int(b, i, bits)
            if idx:
                name = self._get(idx)[0]
            else:
                name, i = self._str(b, i)
            value, i = self._str(b, i)
            if bits == 6:
                self._add(name, value)
            out.append((name, value))
        return out


class Conn:
    """One HTTP/2 connection over a plain socket to 127.0.0.1:port."""

    def __init__(self, port, timeout=5.0, handshake=True):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.dec = Decoder()
        self.headers = {}  # stream -> [(name, value)], every block it got
        self.data = {}  # stream -> bytes
        self.ended = set()  # streams the server ended (END_STREAM or RST_STREAM)
        self.reset = {}  # stream -> error code of the server's RST_STREAM
        self.goaway = None  # (last stream, error code) of the server's GOAWAY
        self.closed = False
        self.window = 65535  # the server's connection window for our DATA
        self.initial = 65535  # its initial stream window (SETTINGS)
        self.swindow = {}  # stream -> its window for our DATA
        self.next_id = 1
        if handshake:
            self.send(PREFACE + frame(SETTINGS, 0, 0))
            self.read_until(lambda: self.got_settings)

    got_settings = False

    def send(self, data):
        self.sock.sendall(data)

    def stream(self):
        """The next client stream id (odd, rising)."""
        sid = self.next_id
        self.next_id += 2
        return sid

    def open(self, end_stream=False, **kw):
        """HEADERS of a new gRPC call; returns its stream id."""
        sid = self.stream()
        self.send(frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid,
                        grpc_headers(self.port, **kw)))
        return sid

    def send_body(self, sid, head, total, end=True, progress=None):
        """Sends head then filler bytes up to total bytes on the stream as
        DATA frames of at most 16384 bytes, within the server's flow-control
        windows (waiting for its WINDOW_UPDATEs), END_STREAM on the last if
        end; stops early when the server ends the stream or the connection.
        progress(sent) is called about every MB. Returns the bytes sent."""
        sent, filler = 0, b"x" * 16384
        while sent < total and sid not in self.ended and not self.closed:
            n = min(16384, total - sent, self.window, self.swindow.get(sid, self.initial))
            if n <= 0:
                before = (self.window, self.swindow.get(sid, self.initial))
                if not self.read_until(lambda: sid in self.ended or before != (
                        self.window, self.swindow.get(sid, self.initial))):
                    return sent
                continue
            chunk = (head[sent:sent + n] + filler)[:n] if sent < len(head) else filler[:n]
            last = sent + n == total
            self.send(frame(DATA, END_STREAM if end and last else 0, sid, chunk))
            self.window -= n
            self.swindow[sid] = self.swindow.get(sid, self.initial) - n
            if progress and (sent >> 20) != ((sent + n) >> 20):
                progress(sent + n)
            sent += n
        return sent

    def _frame(self):
        """Reads one frame (blocking up to the timeout): (type, flags, stream,
        payload), or None when the server closed the connection."""
        while len(self.buf) < 9 or len(self.buf) < 9 + (int.from_bytes(self.buf[:3], "big")):
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            self.buf += chunk
        n = int.from_bytes(self.buf[:3], "big")
        ftype, flags, sid = self.buf[3], self.buf[4], struct.unpack(">I", self.buf[5:9])[0]
        payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
        return ftype, flags, sid & 0x7fffffff, payload

    def _handle(self, ftype, flags, sid, p):
        if ftype == SETTINGS and not flags & ACK:
            self.got_settings = True
            for k in range(0, len(p) - 5, 6):
                ident, val = struct.unpack(">HI", p[k:k + 6])
                if ident == 4:  # SETTINGS_INITIAL_WINDOW_SIZE
                    for s in self.swindow:
                        self.swindow[s] += val - self.initial
                    self.initial = val
            self.send(frame(SETTINGS, ACK, 0))
        elif ftype == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, p))
        elif ftype in (HEADERS, CONTINUATION):
            if flags & PADDED:
                p = p[1:len(p) - p[0]]
            if ftype == HEADERS and flags & PRIO:
                p = p[5:]
            self.headers.setdefault(sid, []).extend(self.dec.decode(p))
        elif ftype == DATA:
            if flags & PADDED:
                p = p[1:len(p) - p[0]]
            self.data[sid] = self.data.get(sid, b"") + p
            if p:  # give the window back, connection and stream
                self.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(p))) +
                          frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", len(p))))
        elif ftype == RST_STREAM:
            self.reset[sid] = struct.unpack(">I", p[:4])[0]
            self.ended.add(sid)
        elif ftype == GOAWAY:
            self.goaway = struct.unpack(">II", p[:8])
        elif ftype == WINDOW_UPDATE:
            inc = struct.unpack(">I", p[:4])[0] & 0x7fffffff
            if sid == 0:
                self.window += inc
            else:
                self.swindow[sid] = self.swindow.get(sid, self.initial) + inc
        if ftype in (HEADERS, DATA) and flags & END_STREAM:
            self.ended.add(sid)

    def read_until(self, cond):
        """Reads frames until cond() is true (True), the server closes
        (False) or the socket times out (False)."""
        while not cond():
            try:
                f = self._frame()
            except socket.timeout:
                return False
            if f is None:
                return cond()
            self._handle(*f)
        return True

    def status(self, sid):
        """Waits for the stream's end: (grpc-status as int or None,
        grpc-message, RST_STREAM code or None)."""
        self.read_until(lambda: sid in self.ended)
        h = dict(self.headers.get(sid, []))
        st = h.get("grpc-status")
        return (int(st) if st is not None else None), h.get("grpc-message", ""), \
            self.reset.get(sid)

    def wait_closed(self):
        """Reads until the server closes the connection: True if it did."""
        return self.read_until(lambda: self.closed)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
