#!/usr/bin/env python3
"""Keeps HTTP/2 requests in flight until the server sends GOAWAY, then reports what was answered.

Opens --connections cleartext h2c connections (prior knowledge) and keeps --inflight POST requests
open on each: every completed stream is replaced by a new one until GOAWAY arrives. It then reads
until the server closes the connection (or --timeout), and prints one JSON line on stdout, a list
with one object per connection:

    {"sent": N, "ok": N, "other": N, "resets": N, "goaway": true, "lastStreamID": N, "errorCode": 0,
     "goaways": [{"lastStreamID": N, "errorCode": 0, "debugData": "..."}, ...],
     "unansweredUpToLast": [ids...], "answeredAboveLast": [ids...], "closed": true}

`lastStreamID` and `errorCode` are those of the last GOAWAY; `goaways` lists every GOAWAY in the order
received, with its debug data (UTF-8), e.g. a shutdown notice and then the final GOAWAY.

Each connection prints "connection N: first response" on stderr once the load flows.
A graceful server answers every stream up to GOAWAY's last-stream-id (`unansweredUpToLast` empty)
and none above it, then closes. Exit status 0 once every connection has ended (report in the JSON),
1 on a setup failure.

Usage:
    h2_goaway_probe.py --port 8080 --path /3/device/<token> [--header 'apns-topic: x'] \\
        [--header 'authorization: bearer <jwt>'] [--connections 4] [--inflight 10]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import hpack
except ImportError:  # pragma: no cover
    print("h2_goaway_probe: the Python package 'h2' is missing (run scripts/setup --test)", file=sys.stderr)
    sys.exit(1)


def probe(args: argparse.Namespace, index: int, result: dict) -> None:
    """One connection. h2 builds the requests; the responses are parsed here, frame by frame,
    because h2 stops accepting frames once GOAWAY has arrived and a graceful server may still
    answer streams up to the last-stream-id after it. Prints "connection N: first response" on
    stderr when the first answer arrives, so a test knows the load is flowing."""
    body = args.data.encode()
    extra_headers = [(name.strip().lower(), value.strip()) for name, _, value in (h.partition(":") for h in args.header)]
    deadline = time.monotonic() + args.timeout
    sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    decoder = hpack.Decoder()
    sent: set[int] = set()
    ok: set[int] = set()
    other: set[int] = set()
    ended: set[int] = set()
    resets: set[int] = set()
    goaway = None
    goaways: list[dict] = []
    buffer = b""
    header_block: dict[int, bytes] = {}  # stream id -> header block fragments so far

    def submit() -> None:
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [
            (":method", "POST"), (":scheme", "http"), (":authority", f"{args.host}:{args.port}"),
            (":path", args.path), ("content-length", str(len(body))),
        ] + extra_headers)
        conn.send_data(sid, body, end_stream=True)
        sent.add(sid)

    def finish_headers(sid: int, block: bytes, end_stream: bool) -> None:
        fields = dict(decoder.decode(block, raw=True))
        status = fields.get(b":status")
        if status is not None and not status.startswith(b"1"):
            if not ok and not other:
                print(f"connection {index}: first response", file=sys.stderr, flush=True)
            (ok if status == b"200" else other).add(sid)
        if end_stream:
            end(sid)

    def end(sid: int) -> None:
        ended.add(sid)
        if goaway is None:
            submit()

    for _ in range(args.inflight):
        submit()
    outgoing = conn.data_to_send()
    closed = False
    while time.monotonic() < deadline:
        if outgoing:
            try:
                sock.sendall(outgoing)
            except OSError:
                pass
            outgoing = b""
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
        buffer += data
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[0:3], "big")
            if len(buffer) < 9 + length:
                break
            ftype, flags = buffer[3], buffer[4]
            sid = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
            payload = buffer[9:9 + length]
            buffer = buffer[9 + length:]
            if ftype == 0x4 and not flags & 0x1:  # SETTINGS: acknowledge
                outgoing += b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
            elif ftype == 0x6 and not flags & 0x1:  # PING: answer
                outgoing += b"\x00\x00\x08\x06\x01\x00\x00\x00\x00" + payload
            elif ftype in (0x1, 0x9):  # HEADERS, CONTINUATION
                if ftype == 0x1:
                    if flags & 0x8:  # PADDED
                        pad = payload[0]
                        payload = payload[1:len(payload) - pad]
                    if flags & 0x20:  # PRIORITY
                        payload = payload[5:]
                    header_block[sid] = payload
                    if flags & 0x1:
                        header_block[-sid] = b""  # END_STREAM seen on the HEADERS frame
                else:
                    header_block[sid] = header_block.get(sid, b"") + payload
                if flags & 0x4:  # END_HEADERS
                    end_stream = header_block.pop(-sid, None) is not None
                    finish_headers(sid, header_block.pop(sid), end_stream)
            elif ftype == 0x0 and flags & 0x1:  # DATA with END_STREAM
                end(sid)
            elif ftype == 0x3:  # RST_STREAM
                resets.add(sid)
            elif ftype == 0x8 and sid == 0:  # connection WINDOW_UPDATE: frames are parsed here, not
                # by h2, so its send window must be grown by hand (else it runs out after 64 KiB of bodies)
                conn.outbound_flow_control_window += int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
            elif ftype == 0x7:  # GOAWAY
                goaway = (int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF, int.from_bytes(payload[4:8], "big"))
                goaways.append({"lastStreamID": goaway[0], "errorCode": goaway[1],
                                "debugData": payload[8:].decode("utf-8", "replace")})
        outgoing += conn.data_to_send()
    sock.close()
    last = goaway[0] if goaway else None
    result.update({
        "sent": len(sent),
        "ok": len(ok),
        "other": len(other),
        "resets": len(resets),
        "goaway": goaway is not None,
        "lastStreamID": last,
        "errorCode": goaway[1] if goaway else None,
        "goaways": goaways,
        "unansweredUpToLast": sorted(s for s in sent if last is not None and s <= last and s not in ended)[:20],
        "answeredAboveLast": sorted(s for s in ended if last is not None and s > last)[:20],
        "closed": closed,
    })


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="HTTP/2 graceful-shutdown probe")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--data", default='{"aps":{"alert":"probe"}}')
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="extra request header, repeatable (e.g. apns-topic, authorization)")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=15.0)
    args = parser.parse_args(argv)
    results: list[dict] = [{} for _ in range(args.connections)]
    errors: list[str] = []

    def run(index: int) -> None:
        try:
            probe(args, index, results[index])
        except Exception as exc:  # reported, not raised: the other connections still count
            errors.append(f"connection {index}: {exc!r}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(args.connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        print("h2_goaway_probe: " + "; ".join(errors), file=sys.stderr)
        return 1
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
