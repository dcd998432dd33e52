#!/usr/bin/env python3
"""A small HTTPS server for skiff's tests: a real TLS peer on loopback.

    https-server.py --cert CERT --key KEY --root DIR --port-file FILE --log FILE

Listens on 127.0.0.1 (port 0: the kernel picks one, written to --port-file once it
listens). Serves files under --root by path, and these test routes (NAME is a file under
--root):

    /files/NAME           the file, with Content-Length
    /chunked/NAME         the file in chunks of varied sizes, with chunk extensions and a
                          trailer
    /close/NAME           no length: the body ends when the server closes (close_notify)
    /stall/NAME           headers and a part of the body, then nothing for 60 s
    /slow/NAME            the file in small pieces, 0.05 s apart
    /hold/NAME            holds the response until the file LOG.release exists (or 60 s
                          have passed), then sends the file; LOG.held has the number held
                          now, LOG.max-held the most held at once
    /flaky/K/NAME         HTTP 503 for the first K requests of this path, then the file
    /redirect/PATH        302 to /PATH (a relative Location)
    /redirect-abs/URL     302 to URL (given without its scheme's "//" doubled: http:/x/y)
    /status/CODE          that status, a short body

Every request appends "METHOD PATH" to --log (one line, flushed). The highest number of
requests in flight at once is kept in LOG.max-active.
"""
import argparse
import http.server
import os
import socket
import ssl
import sys
import threading
import time

lock = threading.Lock()
cond = threading.Condition(lock)
active = 0
max_active = 0
counts = {}
held = 0
max_held = 0


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the request log is our own
        pass

    def send_file_head(self, data, length=True, extra=None):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if length:
            self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or []):
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()

    def read_file(self, name):
        path = os.path.normpath(os.path.join(self.server.root, name))
        if not path.startswith(self.server.root + os.sep) or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()

    def not_found(self):
        self.send_response(404, "Not Found")
        self.send_header("Content-Length", "10")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"not found\n")

    def do_GET(self):
        global active, max_active
        with open(self.server.log, "a") as f:
            f.write("GET %s\n" % self.path)
        with cond:
            active += 1
            max_active = max(max_active, active)
            write_atomic(self.server.log + ".max-active", "%d\n" % max_active)
            cond.notify_all()
        try:
            self.route()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            with cond:
                active -= 1
                cond.notify_all()

    def hold(self):
        global held, max_held
        log = self.server.log
        with lock:
            held += 1
            max_held = max(max_held, held)
            write_atomic(log + ".held", "%d\n" % held)
            write_atomic(log + ".max-held", "%d\n" % max_held)
        end = time.monotonic() + 60
        while not os.path.exists(log + ".release") and time.monotonic() < end:
            time.sleep(0.02)
        with lock:
            held -= 1
            write_atomic(log + ".held", "%d\n" % held)

    def route(self):
        p = self.path.split("?", 1)[0]
        parts = p.lstrip("/").split("/", 1)
        kind, rest = parts[0], parts[1] if len(parts) > 1 else ""
        if kind == "status":
            code = int(rest)
            self.send_response(code)
            self.send_header("Content-Length", "6")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"status")
            return
        if kind == "redirect":
            self.send_response(302)
            self.send_header("Location", "/" + rest)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            return
        if kind == "redirect-abs":
            self.send_response(302)
            self.send_header("Location", rest.replace(":/", "://", 1))
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            return
        if kind == "hold":
            self.hold()
        if kind == "flaky":
            k, rest = rest.split("/", 1)
            with lock:
                counts[self.path] = counts.get(self.path, 0) + 1
                seen = counts[self.path]
            if seen <= int(k):
                self.send_response(503, "Service Unavailable")
                self.send_header("Content-Length", "5")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"later")
                return
        if kind not in ("files", "chunked", "close", "stall", "slow", "hold", "flaky"):
            rest = p.lstrip("/")
        data = self.read_file(rest)
        if data is None:
            self.not_found()
            return
        if kind == "chunked":
            self.send_file_head(data, length=False, extra=[("Transfer-Encoding", "chunked")])
            i, sizes, n = 0, [1, 7, 4096, 100, 65536], 0
            while i < len(data):
                size = sizes[n % len(sizes)]
                n += 1
                piece = data[i:i + size]
                ext = ";name=val" if n % 2 else ""
                self.wfile.write(b"%X%s\r\n%s\r\n" % (len(piece), ext.encode(), piece))
                i += size
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
            return
        if kind == "close":
            self.send_file_head(data, length=False)
            self.wfile.write(data)
            self.wfile.flush()
            self.connection.unwrap()  # close_notify: the end of the body
            return
        self.send_file_head(data)
        if kind == "stall":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(60)
            return
        if kind == "slow":
            step = max(1, len(data) // 10)
            for i in range(0, len(data), step):
                self.wfile.write(data[i:i + step])
                self.wfile.flush()
                time.sleep(0.05)
            return
        self.wfile.write(data)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def finish_request(self, request, client_address):
        # The handshake runs in the request's thread, so a slow client blocks no one.
        try:
            conn = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # e.g. the client refused our certificate
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            try:
                conn.close()
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    srv.root = os.path.realpath(a.root)
    srv.log = a.log
    srv.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.ctx.load_cert_chain(a.cert, a.key)
    open(a.log, "a").close()
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
