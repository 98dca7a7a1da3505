#!/usr/bin/env python3
"""Reads the GOAWAY a server sends as the Python `h2` library reports it (what aioapns and httpx see).

Opens one cleartext h2c connection (prior knowledge), sends --requests GET requests for --path one after
another, prints "ready" on stderr once they are answered, then waits (up to --timeout seconds) for the
server's GOAWAY and prints one JSON line on stdout:

    {"answered": 1, "goaway": true, "errorCode": 0, "lastStreamID": 1,
     "additionalData": "{\"reason\":\"IdleTimeout\"}", "reason": "IdleTimeout", "closed": true}

`additionalData` is h2's `ConnectionTerminated.additional_data` (the GOAWAY's debug data) decoded as
UTF-8, `reason` its `reason` member when it is a JSON object (else null). h2 ends the connection at the
first GOAWAY it reads, so for a two-step shutdown this is the shutdown notice. `closed` tells whether the
server then closed the TCP connection.

Exit status 0 when a GOAWAY arrived, 2 when none did within --timeout, 1 on a setup failure.

Usage (a test triggers the GOAWAY: an idle timeout, or a shutdown after "ready"):
    h2_goaway_reason.py --port 8080 [--path /healthz] [--requests 1] [--timeout 10]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time

try:
    import h2.config
    import h2.connection
    import h2.events
except ImportError:  # pragma: no cover
    print("h2_goaway_reason: the Python package 'h2' is missing (run scripts/setup --test)", file=sys.stderr)
    sys.exit(1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="prints the debug data of the server's GOAWAY, as h2 reads it")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/healthz")
    parser.add_argument("--requests", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args(argv)

    deadline = time.monotonic() + args.timeout
    try:
        sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
    except OSError as error:
        print(f"h2_goaway_reason: cannot connect: {error}", file=sys.stderr)
        return 1
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    answered = 0
    pending = 0
    terminated = None
    closed = False

    def request() -> None:
        nonlocal pending
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [
            (":method", "GET"), (":scheme", "http"), (":authority", f"{args.host}:{args.port}"),
            (":path", args.path),
        ], end_stream=True)
        pending += 1

    if args.requests > 0:
        request()
    else:
        print("ready", file=sys.stderr, flush=True)
    sock.sendall(conn.data_to_send())
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not data:
            closed = True
            break
        if terminated is not None:
            continue  # h2 takes nothing after GOAWAY; keep reading to see the close
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.StreamEnded):
                answered += 1
                pending -= 1
                if answered < args.requests:
                    request()
                elif answered == args.requests:
                    print("ready", file=sys.stderr, flush=True)
            elif isinstance(event, h2.events.ConnectionTerminated):
                terminated = event
        try:
            sock.sendall(conn.data_to_send())
        except OSError:
            pass
    sock.close()
    additional = None
    reason = None
    if terminated is not None and terminated.additional_data is not None:
        additional = terminated.additional_data.decode("utf-8", "replace")
        try:
            decoded = json.loads(additional)
            if isinstance(decoded, dict):
                reason = decoded.get("reason")
        except ValueError:
            pass
    print(json.dumps({
        "answered": answered,
        "goaway": terminated is not None,
        "errorCode": int(terminated.error_code) if terminated is not None else None,
        "lastStreamID": terminated.last_stream_id if terminated is not None else None,
        "additionalData": additional,
        "reason": reason,
        "closed": closed,
    }))
    return 0 if terminated is not None else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
