#!/usr/bin/env python3
"""HTTP/2 over TLS **without ALPN**, the way some real APNs clients (aioapns) connect.

The client opens one TLS connection that offers no ALPN protocol, sends the HTTP/2 connection preface
straight away, and issues K requests concurrently on that one connection (streams 1, 3, 5, ...). It
waits for every response and prints one JSON line on stdout:

    {"alpn": null, "statuses": [200, ...], "headers": [{...}, ...], "bodies": ["...", ...],
     "dataFrames": [0, ...]}

Lists are in request order. `headers` holds each response's regular header fields (pseudo-headers
left out; repeated names joined with ", "). `dataFrames` counts the DATA frames that carried bytes
on each stream (a 200 from APNs has none). Exit status 0 when every stream got a complete response
(whatever its status); 1 with a message on stderr on any failure (TLS, protocol, reset, timeout).

Usage:
    h2_no_alpn_client.py --host 127.0.0.1 --port 2197 --cafile data/ca.pem --server-name localhost \
        --path /healthz [--method GET] [--requests K] [--header 'apns-topic: x'] [--data '{...}']

Needs the `h2` package (scripts/setup --test installs it).
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import time

try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
except ImportError:  # pragma: no cover - environment problem, reported plainly
    print("h2_no_alpn_client: the Python package 'h2' is missing (run scripts/setup --test)", file=sys.stderr)
    sys.exit(1)

TIMEOUT_SECONDS = 10.0


class ClientError(Exception):
    """Any failure that should end the run with exit status 1."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="HTTP/2 over TLS without ALPN (aioapns-style) test client")
    parser.add_argument("--host", default="127.0.0.1", help="address to connect to (default 127.0.0.1)")
    parser.add_argument("--port", type=int, required=True, help="TLS port of the server")
    parser.add_argument("--cafile", help="PEM CA file to trust (default: the system trust store)")
    parser.add_argument("--server-name", default="localhost", help="TLS SNI and name to verify (default localhost)")
    parser.add_argument("--authority", help=":authority to send (default SERVER_NAME:PORT)")
    parser.add_argument("--path", default="/healthz", help="request path (default /healthz)")
    parser.add_argument("--method", default="GET", help="request method (default GET)")
    parser.add_argument("--requests", type=int, default=1, help="concurrent requests on the connection (default 1)")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="extra request header, repeatable")
    parser.add_argument("--data", help="request body (UTF-8), sent on every request")
    args = parser.parse_args(argv)
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    return args


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise ClientError(f"bad --header {text!r}: expected 'name: value'")
    return name.strip().lower(), value.strip()


def connect(args: argparse.Namespace) -> ssl.SSLSocket:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=args.cafile)
    # Deliberately no context.set_alpn_protocols(...): the server must cope with a client that offers none.
    raw = socket.create_connection((args.host, args.port), timeout=TIMEOUT_SECONDS)
    try:
        tls = context.wrap_socket(raw, server_hostname=args.server_name)
    except BaseException:
        raw.close()
        raise
    tls.settimeout(TIMEOUT_SECONDS)
    return tls


def run(args: argparse.Namespace) -> dict:
    extra_headers = [parse_header(h) for h in args.header]
    body = args.data.encode("utf-8") if args.data is not None else None
    authority = args.authority or f"{args.server_name}:{args.port}"
    deadline = time.monotonic() + TIMEOUT_SECONDS

    sock = connect(args)
    try:
        alpn = sock.selected_alpn_protocol()
        conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        conn.initiate_connection()  # the preface + our SETTINGS

        stream_ids: list[int] = []
        pending: dict[int, bytes] = {}  # request bodies still to send, per stream
        for _ in range(args.requests):
            stream_id = conn.get_next_available_stream_id()
            headers = [
                (":method", args.method.upper()),
                (":scheme", "https"),
                (":authority", authority),
                (":path", args.path),
            ]
            if body is not None:
                headers.append(("content-length", str(len(body))))
            headers.extend(extra_headers)
            conn.send_headers(stream_id, headers, end_stream=not body)
            if body:
                pending[stream_id] = body
            stream_ids.append(stream_id)

        statuses: dict[int, int] = {}
        headers_by_stream: dict[int, dict[str, str]] = {}
        bodies: dict[int, bytearray] = {sid: bytearray() for sid in stream_ids}
        data_frames: dict[int, int] = {sid: 0 for sid in stream_ids}
        ended: set[int] = set()

        def send_pending_bodies() -> None:
            for sid in list(pending):
                data = pending[sid]
                while data:
                    window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                    if window <= 0:
                        break
                    chunk, data = data[:window], data[window:]
                    conn.send_data(sid, chunk, end_stream=not data)
                if data:
                    pending[sid] = data
                else:
                    del pending[sid]

        send_pending_bodies()
        sock.sendall(conn.data_to_send())

        while len(ended) < len(stream_ids):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ClientError(f"timed out after {TIMEOUT_SECONDS:.0f} s with {len(ended)}/{len(stream_ids)} responses")
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(65536)
            except socket.timeout as exc:
                raise ClientError(f"timed out after {TIMEOUT_SECONDS:.0f} s with {len(ended)}/{len(stream_ids)} responses") from exc
            if not chunk:
                raise ClientError(f"server closed the connection with {len(ended)}/{len(stream_ids)} responses")

            for event in conn.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived):
                    fields: dict[str, str] = {}
                    for name, value in event.headers:
                        if name == ":status":
                            statuses[event.stream_id] = int(value)
                        elif not name.startswith(":"):
                            fields[name] = f"{fields[name]}, {value}" if name in fields else value
                    headers_by_stream[event.stream_id] = fields
                elif isinstance(event, h2.events.InformationalResponseReceived):
                    pass  # 1xx: the final response follows
                elif isinstance(event, h2.events.DataReceived):
                    if event.stream_id in bodies:
                        bodies[event.stream_id] += event.data
                        if event.data:
                            data_frames[event.stream_id] += 1
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended.add(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    raise ClientError(f"stream {event.stream_id} reset by the server (error code {event.error_code})")
                elif isinstance(event, h2.events.ConnectionTerminated):
                    if len(ended) < len(stream_ids):
                        debug = event.additional_data.decode("utf-8", "replace") if event.additional_data else ""
                        raise ClientError(
                            f"GOAWAY (error code {event.error_code}, last stream {event.last_stream_id}"
                            + (f", {debug}" if debug else "") + ")"
                        )
                elif isinstance(event, h2.events.WindowUpdated):
                    send_pending_bodies()
            outgoing = conn.data_to_send()
            if outgoing:
                sock.sendall(outgoing)

        missing = [sid for sid in stream_ids if sid not in statuses]
        if missing:
            raise ClientError(f"no response headers on stream(s) {missing}")

        # Say goodbye politely; ignore errors, the answers are already in.
        try:
            conn.close_connection()
            sock.sendall(conn.data_to_send())
        except OSError:
            pass

        return {
            "alpn": alpn,
            "statuses": [statuses[sid] for sid in stream_ids],
            "headers": [headers_by_stream.get(sid, {}) for sid in stream_ids],
            "bodies": [bodies[sid].decode("utf-8", "replace") for sid in stream_ids],
            "dataFrames": [data_frames[sid] for sid in stream_ids],
        }
    finally:
        sock.close()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except ClientError as exc:
        print(f"h2_no_alpn_client: {exc}", file=sys.stderr)
        return 1
    except ssl.SSLError as exc:
        print(f"h2_no_alpn_client: TLS error: {exc}", file=sys.stderr)
        return 1
    except h2.exceptions.ProtocolError as exc:
        print(f"h2_no_alpn_client: HTTP/2 protocol error: {exc!r}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"h2_no_alpn_client: connection error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
