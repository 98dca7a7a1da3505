#!/usr/bin/env python3
"""A webhook receiver for the end-to-end tests: verifies every request with the reference
Standard Webhooks library (`standardwebhooks`, the spec authors' implementation) and logs it.

Prints its port on the first line of stdout, then one JSON line per request:
{"n": 1, "id": webhook-id, "timestamp": ..., "valid": true/false, "answered": status, "type": ..., "eventId": ...}

--fail-first N answers the first N requests with 500 (then 200); --status S answers S always;
--delay SECONDS sleeps before answering.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--secret", required=True)
parser.add_argument("--fail-first", type=int, default=0)
parser.add_argument("--status", type=int, default=200)
parser.add_argument("--delay", type=float, default=0)
args = parser.parse_args()

verifier = Webhook(args.secret)
lock = threading.Lock()
count = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            payload = verifier.verify(body, headers)
            valid = True
        except WebhookVerificationError:
            payload = json.loads(body or b"{}")
            valid = False
        with lock:
            count += 1
            n = count
        status = 500 if n <= args.fail_first else args.status
        if args.delay:
            time.sleep(args.delay)
        line = {
            "n": n, "id": headers.get("webhook-id"), "timestamp": headers.get("webhook-timestamp"),
            "valid": valid, "answered": status, "type": payload.get("type"), "eventId": payload.get("id"),
            "data": payload.get("data"),
        }
        with lock:
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
