#!/usr/bin/env python3
"""Bursts of pushes on fresh HTTP/2 connections, opened without waiting, as Go's `x/net/http2` (under
`sideshow/apns2`) does: the way a client can lose pushes to a server that ends the connection for a stream
over SETTINGS_MAX_CONCURRENT_STREAMS.

Each round opens a new cleartext h2c connection (prior knowledge) and sends --pushes POSTs at once, before the
server's SETTINGS has been read (h2 assumes no limit until then). A stream the server refuses (RST_STREAM
REFUSED_STREAM: not processed, RFC 9113 §8.7) is sent again on a new stream once the connection allows, as
Go's transport and Pushy retry it. When a SETTINGS frame raises the limit, the streams it allows are written
*before* the SETTINGS ACK that h2 queued: the order Go's transport can produce (its read loop ACKs while other
goroutines already open streams), so the server sees streams within the new limit before the ACK of it.

Prints one JSON object on stdout:

    {"rounds": N, "pushes": N, "ok": N, "refused": N, "otherStatus": {...}, "goaways": [...],
     "connectionErrors": [...], "lost": N, "limits": [...]}

`lost` counts pushes never answered 200 (a GOAWAY, a reset other than REFUSED_STREAM, a timeout).
Exit status 0 when the rounds ran (whatever they found), 1 on a setup failure.

Usage:
    h2_burst_client.py --port 8080 --token <jwt> --device <hex> --topic com.example.app [--rounds 50] [--pushes 100]
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
    import h2.errors
    import h2.events
    import h2.exceptions
    import h2.settings
except ImportError:  # pragma: no cover
    print("h2_burst_client: the Python package 'h2' is missing (run scripts/setup --test)", file=sys.stderr)
    sys.exit(1)

PAYLOAD = b'{"aps":{"alert":"burst"}}'


def one_round(args: argparse.Namespace, report: dict) -> None:
    sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    headers = [
        (":method", "POST"), (":scheme", "http"), (":authority", f"{args.host}:{args.port}"),
        (":path", f"/3/device/{args.device}"), ("authorization", f"bearer {args.token}"),
        ("apns-topic", args.topic), ("apns-push-type", "alert"), ("content-length", str(len(PAYLOAD))),
    ]
    waiting = args.pushes  # pushes not yet on a stream
    open_streams: set[int] = set()
    statuses: dict[int, str] = {}
    done = 0
    ended = False

    def open_what_fits() -> None:
        nonlocal waiting
        while waiting > 0 and len(open_streams) < conn.remote_settings.max_concurrent_streams:
            stream_id = conn.get_next_available_stream_id()
            conn.send_headers(stream_id, headers)
            conn.send_data(stream_id, PAYLOAD, end_stream=True)
            open_streams.add(stream_id)
            waiting -= 1

    open_what_fits()
    sock.sendall(conn.data_to_send())
    deadline = time.monotonic() + args.timeout
    while done < args.pushes and not ended:
        if time.monotonic() > deadline:
            report["connectionErrors"].append("timeout")
            break
        try:
            data = sock.recv(65536)
        except socket.timeout:
            report["connectionErrors"].append("timeout")
            break
        if not data:
            report["connectionErrors"].append("closed by the server")
            break
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError as error:
            report["connectionErrors"].append(f"protocol error: {error}")
            break
        # What h2 queued in answer (the SETTINGS ACK among it) goes out after the streams a raise allows.
        queued_answer = conn.data_to_send()
        for event in events:
            if isinstance(event, h2.events.RemoteSettingsChanged):
                changed = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                if changed is not None:
                    report["limits"].append(changed.new_value)
            elif isinstance(event, h2.events.ResponseReceived):
                statuses[event.stream_id] = dict(event.headers).get(":status", "?")
            elif isinstance(event, h2.events.StreamEnded):
                open_streams.discard(event.stream_id)
                status = statuses.get(event.stream_id, "?")
                if status == "200":
                    report["ok"] += 1
                else:
                    report["otherStatus"][status] = report["otherStatus"].get(status, 0) + 1
                done += 1
            elif isinstance(event, h2.events.StreamReset):
                open_streams.discard(event.stream_id)
                if event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM:
                    report["refused"] += 1
                    waiting += 1  # not processed: send it again
                else:
                    report["connectionErrors"].append(f"stream {event.stream_id} reset: {event.error_code}")
                    done += 1
            elif isinstance(event, h2.events.ConnectionTerminated):
                report["goaways"].append({
                    "errorCode": int(event.error_code), "lastStreamID": event.last_stream_id,
                    "debugData": (event.additional_data or b"").decode("utf-8", "replace"),
                })
                ended = True
        if not ended:
            open_what_fits()
            sock.sendall(conn.data_to_send() + queued_answer)
        else:
            sock.sendall(queued_answer)
    sock.close()
    report["lost"] += args.pushes - report["ok"] + report["_okBefore"]
    report["_okBefore"] = report["ok"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--pushes", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    report = {"rounds": args.rounds, "pushes": args.rounds * args.pushes, "ok": 0, "refused": 0, "otherStatus": {},
              "goaways": [], "connectionErrors": [], "lost": 0, "limits": [], "_okBefore": 0}
    for _ in range(args.rounds):
        try:
            one_round(args, report)
        except OSError as error:
            print(f"h2_burst_client: {error}", file=sys.stderr)
            return 1
    del report["_okBefore"]
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
