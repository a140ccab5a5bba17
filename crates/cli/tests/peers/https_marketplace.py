"""A loopback HTTPS server for Bosun's tests of marketplaces fetched over HTTPS: it serves the
files of ROOT with the test certificate in tls/ (issued for 127.0.0.1 and localhost by the test
CA tls/ca.pem, whose key was thrown away), and misbehaves on request:

- /hang/...        accepts the request and never answers;
- /endless/...     answers 200 with no length and sends bytes until the client hangs up;
- /elsewhere/PATH  redirects (302) to https://localhost:PORT/PATH, another origin;
- /moved/PATH      redirects (301) to /PATH, the same origin.

Usage: python3 https_marketplace.py ROOT PORT
Every path asked for is appended to requests.txt in ROOT's parent.
"""

import http.server
import os
import ssl
import sys
import time

ROOT, PORT = sys.argv[1], int(sys.argv[2])
TLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tls")
LOG = os.path.join(os.path.dirname(os.path.abspath(ROOT)), "requests.txt")


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=ROOT, **kwargs)

    def log_message(self, *args):
        pass

    def do_GET(self):
        with open(LOG, "a") as log:
            log.write(self.path + "\n")
        if self.path.startswith("/hang/"):
            time.sleep(600)
            return
        if self.path.startswith("/endless/"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            chunk = b"[" * 65536
            try:
                while True:
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                return
        for prefix, target, status in (
            ("/elsewhere/", "https://localhost:%d/" % PORT, 302),
            ("/moved/", "/", 301),
        ):
            if self.path.startswith(prefix):
                self.send_response(status)
                self.send_header("Location", target + self.path[len(prefix):])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        super().do_GET()


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.path.join(TLS, "server.pem"), os.path.join(TLS, "server.key"))
server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
