#!/usr/bin/env python3
"""The soak's latency probe: one h2c connection, one push at a time at a steady rate, and once a minute (or every
--interval seconds) a JSON line on stdout with that interval's latencies:

    {"interval": 1, "pushes": 3000, "answered": 3000, "ok": 3000, "p50_ms": 1.9, "p99_ms": 6.3, "max_ms": 21.0,
     "errors": []}

`pushes` counts every push tried, `answered` those with a response, `ok` those answered 200. The latency is from
sending a push's HEADERS+DATA to its response's end (the server answers after the record is committed). Prints
round(--seconds / --interval) lines, then exits 0; a failure to reconnect ends it with an error.
Needs the `h2` package.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
import uuid

import h2.config
import h2.connection
import h2.events


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--interval", type=float, default=60)
    parser.add_argument("--seconds", type=float, default=1e9)
    args = parser.parse_args()

    def connect():
        sock = socket.create_connection(("127.0.0.1", args.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        return sock, conn

    sock, conn = connect()
    body = b'{"aps":{"alert":{"title":"soak probe","body":"latency"}}}'
    started = time.monotonic()
    intervals = max(1, round(args.seconds / args.interval))
    interval_start, number = started, 1
    latencies: list[float] = []
    attempts, ok, errors = 0, 0, []
    sent = 0
    while number <= intervals:
        due = started + sent / args.rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        sent += 1
        attempts += 1
        stream = conn.get_next_available_stream_id()
        began = time.monotonic()
        try:
            conn.send_headers(stream, [
                (":method", "POST"), (":scheme", "http"), (":authority", f"127.0.0.1:{args.port}"),
                (":path", f"/3/device/{args.device}"), ("authorization", f"bearer {args.token}"),
                ("apns-topic", args.topic), ("apns-id", str(uuid.uuid4())), ("content-length", str(len(body))),
            ])
            conn.send_data(stream, body, end_stream=True)
            sock.sendall(conn.data_to_send())
            status, done = None, False
            while not done:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionError("the server closed the connection")
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                        status = dict(event.headers).get(":status")
                    elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)) and event.stream_id == stream:
                        done = True
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        raise ConnectionError(f"GOAWAY {event.error_code}")
                pending = conn.data_to_send()
                if pending:
                    sock.sendall(pending)
            latencies.append((time.monotonic() - began) * 1000)
            if status == "200":
                ok += 1
            elif len(errors) < 5:
                errors.append(f"status {status}")
        except (OSError, ConnectionError) as error:
            if len(errors) < 5:
                errors.append(repr(error))
            sock.close()
            sock, conn = connect()
        if time.monotonic() - interval_start >= args.interval:
            line = {"interval": number, "pushes": attempts, "answered": len(latencies), "ok": ok,
                    "p50_ms": round(percentile(latencies, 0.5), 2),
                    "p99_ms": round(percentile(latencies, 0.99), 2), "max_ms": round(max(latencies, default=0), 2),
                    "errors": errors}
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
            interval_start += args.interval
            number += 1
            latencies, attempts, ok, errors = [], 0, 0, []
    return 0


if __name__ == "__main__":
    sys.exit(main())
