"""cdp — a small Chrome DevTools Protocol client for the tests: headless
Chromium started with --remote-debugging-port=0 (the port it chose read
from DevToolsActivePort), its page target reached over a WebSocket that
this module speaks itself (RFC 6455: the client's frames masked, text
frames, lengths of 7, 16 and 64 bits, ping answered), one command at a
time (send, then read until the answer with its id; events kept).
Only the standard library: the tests run under any python3."""
import base64
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request


class WebSocket:
    def __init__(self, url, timeout=60):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise OSError("websocket: closed during the handshake")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise OSError("websocket: %r" % head[:200])

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise OSError("websocket: closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text, opcode=1):
        data = text.encode() if isinstance(text, str) else text
        n = len(data)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        """The next text message (fragments joined; pings answered)."""
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 9:
                self.send(data, opcode=10)
                continue
            if op == 8:
                raise OSError("websocket: closed by the peer")
            if op in (0, 1, 2):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Browser:
    """Headless Chromium with one page at url, driven over CDP."""

    def __init__(self, chromium, profile, width=1280, height=900, extra=()):
        os.makedirs(profile, exist_ok=True)
        port_file = os.path.join(profile, "DevToolsActivePort")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--remote-debugging-port=0", "--remote-allow-origins=*",
             "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height)] +
            list(extra) + ["about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        port = None
        while time.monotonic() < deadline and port is None:
            if self.proc.poll() is not None:
                raise OSError("chromium exited: " + self.proc.stderr.read().decode()[-500:])
            try:
                with open(port_file) as f:
                    port = int(f.readline())
            except (OSError, ValueError):
                time.sleep(0.1)
        if port is None:
            raise OSError("chromium: no DevToolsActivePort")
        pages = []
        while time.monotonic() < deadline and not pages:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port) as r:
                pages = [p for p in json.load(r) if p.get("type") == "page"]
            if not pages:
                time.sleep(0.1)
        self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        """The result of one command; OSError with its error."""
        self.next_id += 1
        me = self.next_id
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                if "error" in msg:
                    raise OSError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def eval(self, expr, await_promise=False):
        """The value of a JavaScript expression in the page (by value)."""
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=await_promise)
        if "exceptionDetails" in r:
            raise OSError("page: %s" % json.dumps(r["exceptionDetails"])[:800])
        return r.get("result", {}).get("value")

    def open(self, url, ready_expr, timeout=30):
        """Navigates to url and waits until ready_expr is true in the page."""
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.eval(ready_expr):
                    return True
            except OSError:
                pass
            time.sleep(0.2)
        return False

    def key(self, key, code, key_code, shift=False):
        """A key press (down and up), as a person's keyboard sends it."""
        mods = 8 if shift else 0
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code,
                      windowsVirtualKeyCode=key_code, modifiers=mods)

    def close(self):
        self.ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
