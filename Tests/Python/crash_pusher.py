#!/usr/bin/env python3
"""Pushes as fast as it can over h2c and prints every apns-id that was answered 200, as it happens.

For the crash test: the server is killed (SIGKILL) while this runs; every apns-id printed before that
must survive the restart. Each line on stdout is one acknowledged apns-id, flushed at once, so what was
printed is exactly what the server acknowledged. The script ends quietly when the connection dies, or
after --count pushes. Exit status 0 in both cases; 1 only for usage or setup errors.

Usage:
    crash_pusher.py --port 8080 --token JWT --topic com.example.app --device HEX [--count 100000]
                    [--window 200]
    crash_pusher.py --port 8080 --token JWT --plan PLAN.json [--rate 200] [--seed 1] ...

--plan names a JSON list of pushes to pick from at random, each {"device", "topic", "payload" (a JSON
object), "headers" (optional extra request headers)}; --rate caps the pushes sent per second (0: no cap).

Needs the `h2` package (scripts/setup --test installs it).
"""

from __future__ import annotations

import argparse
import json
import random
import select
import socket
import sys
import time
import uuid

import h2.config
import h2.connection
import h2.events
import h2.exceptions


def main() -> int:
    parser = argparse.ArgumentParser(description="push until killed; print acknowledged apns-ids")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True, help="provider token (JWT)")
    parser.add_argument("--topic", help="apns-topic (without --plan)")
    parser.add_argument("--device", help="device token (hex; without --plan)")
    parser.add_argument("--plan", help="JSON file: a list of pushes to pick from")
    parser.add_argument("--rate", type=float, default=0, help="pushes per second at most (0: no cap)")
    parser.add_argument("--seed", type=int, default=None, help="random seed for --plan")
    parser.add_argument("--count", type=int, default=100_000, help="stop after this many pushes")
    parser.add_argument("--window", type=int, default=200, help="pushes in flight at once")
    args = parser.parse_args()
    if args.plan:
        with open(args.plan, encoding="utf-8") as f:
            plan = [(p["device"], p["topic"], json.dumps(p["payload"]).encode(), list(p.get("headers", {}).items()))
                    for p in json.load(f)]
    elif args.device and args.topic:
        plan = [(args.device, args.topic, b'{"aps":{"alert":{"title":"crash test","body":"hello"}}}', [])]
    else:
        parser.error("give --plan, or --device and --topic")
    pick = random.Random(args.seed)

    sock = socket.create_connection((args.host, args.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    # Read the server's SETTINGS first: APNs allows one stream until a valid provider token.
    while not any(isinstance(e, h2.events.RemoteSettingsChanged) for e in conn.receive_data(sock.recv(65536))):
        pass
    sock.sendall(conn.data_to_send())

    in_flight: dict[int, str] = {}
    sent = 0
    acknowledged = 0
    out = sys.stdout

    def send_one() -> None:
        nonlocal sent
        apns_id = str(uuid.uuid4())
        device, topic, body, extra = plan[pick.randrange(len(plan))] if len(plan) > 1 else plan[0]
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, [
            (":method", "POST"), (":scheme", "http"), (":authority", f"{args.host}:{args.port}"),
            (":path", f"/3/device/{device}"), ("authorization", f"bearer {args.token}"),
            ("apns-topic", topic), ("apns-id", apns_id), ("content-length", str(len(body))),
        ] + extra)
        conn.send_data(stream_id, body, end_stream=True)
        in_flight[stream_id] = apns_id
        sent += 1

    started = time.monotonic()
    try:
        while sent < args.count or in_flight:
            # Stay within the server's stream limit (one until the first valid token, as APNs).
            limit = min(args.window, conn.remote_settings.max_concurrent_streams)
            allowed = args.count if args.rate <= 0 else min(args.count, int((time.monotonic() - started) * args.rate) + 1)
            while sent < allowed and len(in_flight) < limit:
                send_one()
            sock.sendall(conn.data_to_send())
            if args.rate > 0 and not select.select([sock], [], [], 0.02)[0]:
                continue  # nothing to read: time to send the next paced pushes
            data = sock.recv(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    headers = dict(event.headers)
                    apns_id = in_flight.get(event.stream_id)
                    if headers.get(":status") == "200" and apns_id is not None:
                        out.write(apns_id + "\n")
                        out.flush()
                        acknowledged += 1
                elif isinstance(event, h2.events.StreamEnded) or isinstance(event, h2.events.StreamReset):
                    in_flight.pop(event.stream_id, None)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    raise ConnectionError("GOAWAY")
            pending = conn.data_to_send()
            if pending:
                sock.sendall(pending)
    except (OSError, ConnectionError, h2.exceptions.ProtocolError):
        pass  # the server died: what was printed is what was acknowledged
    print(f"crash_pusher: sent {sent}, acknowledged {acknowledged}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
