#!/usr/bin/env python3
"""Real APNs clients observing the sandbox's fault rules (Tests/ServerTests/FaultInjectionTests.swift).

Each subcommand sends pushes the way a backend would and prints one line of JSON on stdout:

  aioapns  --port TLS --cafile CA --key-file P8 --key-id K --team-id T --topic B --count N [--token HEX]
           Sequential pushes with aioapns (TLS): {"results": [{"status": "410", "reason": "Unregistered",
           "timestamp": 1700000000000}, ...]}
  httpx    --port H2C --jwt JWT --topic B --count N [--token HEX]
           Sequential pushes with httpx over h2c: {"results": [{"status": 503, "reason": "Shutdown"}, ...]}
  latency  --port H2C --jwt JWT --topic B --count N
           N pushes on one h2c connection, C at a time (raw h2): {"latenciesMs": [...], "statuses": {...}}
  h2       --port H2C --jwt JWT --topic B [--token HEX] [--timeout S] [--second]
           One push with the `h2` library on one connection; reports what came back: the response, a GOAWAY
           (error code, last stream id, debug data), a RST_STREAM (code), SETTINGS_MAX_CONCURRENT_STREAMS values,
           DATA chunk sizes and when they came, or a closed socket. --second then pushes again on a NEW
           connection and reports its status. {"status": 200, "goaway": {...}, "reset": null, ...}
  stall    --port H2C --jwt JWT --topic B --timeout S
           One push on a first connection (stalled by a rule), then a push on a second connection (answered)
           while the first is still waiting: {"first": "timeout"|status, "second": status, "secondMs": n}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import ssl
import sys
import time
import uuid

import h2.config
import h2.connection
import h2.events
import httpx

PAYLOAD = {"aps": {"alert": {"title": "fault", "body": "test"}}}


def token_for(args: argparse.Namespace, i: int) -> str:
    return args.token or (f"{i:04x}" + "ab" * 30)


def headers(args: argparse.Namespace) -> dict:
    return {"authorization": f"bearer {args.jwt}", "apns-topic": args.topic, "apns-push-type": "alert"}


def reason_of(body: bytes) -> tuple[str | None, int | None]:
    try:
        decoded = json.loads(body)
        return decoded.get("reason"), decoded.get("timestamp")
    except Exception:
        return None, None


async def run_aioapns(args: argparse.Namespace) -> dict:
    from aioapns import APNs, NotificationRequest, PushType

    with open(args.key_file) as f:
        key = f.read()
    client = APNs(key=key, key_id=args.key_id, team_id=args.team_id, topic=args.topic, use_sandbox=True,
                  ssl_context=ssl.create_default_context(cafile=args.cafile))
    base = client.pool.protocol_class

    class Pointed(base):  # type: ignore[misc, valid-type]
        APNS_SERVER = "localhost"
        APNS_PORT = args.port

    client.pool.protocol_class = Pointed
    results = []
    try:
        for i in range(args.count):
            request = NotificationRequest(device_token=token_for(args, i), message=PAYLOAD,
                                          notification_id=str(uuid.uuid4()), push_type=PushType.ALERT)
            result = await client.send_notification(request)
            results.append({"status": str(result.status), "reason": result.description,
                            "timestamp": getattr(result, "timestamp", None)})
    finally:
        client.pool.close()
        await asyncio.sleep(0)
    return {"results": results}


def run_httpx(args: argparse.Namespace) -> dict:
    results = []
    with httpx.Client(http1=False, http2=True, timeout=args.timeout) as client:
        for i in range(args.count):
            r = client.post(f"http://127.0.0.1:{args.port}/3/device/{token_for(args, i)}", headers=headers(args), json=PAYLOAD)
            reason, timestamp = reason_of(r.content)
            results.append({"status": r.status_code, "reason": reason, "timestamp": timestamp,
                            "apnsId": r.headers.get("apns-id")})
    return {"results": results}


def run_latency(args: argparse.Namespace) -> dict:
    """N pushes on one h2c connection, --concurrency at a time (raw `h2`, so the client adds little): per push,
    the time from its request leaving to its answer's end."""
    sock = socket.create_connection(("127.0.0.1", args.port), timeout=args.timeout)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    body = json.dumps(PAYLOAD).encode()
    sent: dict[int, float] = {}
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    deadline = time.monotonic() + args.timeout

    def send(i: int) -> None:
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [
            (":method", "POST"), (":scheme", "http"), (":authority", f"127.0.0.1:{args.port}"),
            (":path", f"/3/device/{token_for(args, i)}"),
            ("authorization", f"bearer {args.jwt}"), ("apns-topic", args.topic), ("apns-push-type", "alert"),
        ])
        conn.send_data(stream, body, end_stream=True)
        # Before the send: a process descheduled between sendall and the clock would measure less than the
        # server waited (seen under the full suite: 114 ms for a fixed 120 ms).
        sent[stream] = time.monotonic()
        sock.sendall(conn.data_to_send())

    def read_until(expected: int) -> None:
        while len(latencies) < expected and time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            data = sock.recv(65536)
            if not data:
                raise SystemExit("connection closed")
            now = time.monotonic()
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers)[b":status"].decode()
                    statuses[status] = statuses.get(status, 0) + 1
                elif isinstance(event, h2.events.StreamEnded):
                    latencies.append((now - sent[event.stream_id]) * 1000)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            sock.sendall(conn.data_to_send())

    # One push first: it authenticates the connection (APNs allows one stream until then).
    send(0)
    read_until(1)
    latencies.clear()
    statuses.clear()
    for start in range(1, args.count + 1, args.concurrency):
        for i in range(start, min(args.count + 1, start + args.concurrency)):
            send(i)
        read_until(min(args.count, start - 1 + args.concurrency))
    sock.close()
    return {"latenciesMs": latencies, "statuses": statuses}


def h2_push(args: argparse.Namespace, timeout: float, sent=None) -> dict:
    """One push on a fresh h2c connection; everything the server sent back about it. `sent()`, if given, is
    called once the request has been written."""
    sock = socket.create_connection(("127.0.0.1", args.port), timeout=timeout)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    body = args.payload.encode() if args.payload else json.dumps(PAYLOAD).encode()
    stream = conn.get_next_available_stream_id()
    started = time.monotonic()
    conn.send_headers(stream, [
        (":method", "POST"), (":scheme", "http"), (":authority", f"127.0.0.1:{args.port}"),
        (":path", f"/3/device/{token_for(args, 0)}"),
        ("authorization", f"bearer {args.jwt}"), ("apns-topic", args.topic), ("apns-push-type", "alert"),
    ])
    conn.send_data(stream, body, end_stream=True)
    sock.sendall(conn.data_to_send())
    if sent is not None:
        sent()
    report = {"status": None, "reason": None, "goaway": None, "reset": None, "maxConcurrentStreams": [],
              "dataChunks": [], "closed": False, "timedOut": False, "elapsedMs": None}
    deadline = started + timeout
    done = False
    response_body = b""
    while not done:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            report["timedOut"] = True
            break
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            report["timedOut"] = True
            break
        except ConnectionResetError:
            report["closed"] = True
            break
        if not data:
            report["closed"] = True
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RemoteSettingsChanged):
                changed = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                if changed is not None:
                    report["maxConcurrentStreams"].append(changed.new_value)
            elif isinstance(event, h2.events.ResponseReceived):
                report["status"] = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                report["dataChunks"].append([len(event.data), round((time.monotonic() - started) * 1000)])
                response_body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                report["elapsedMs"] = round((time.monotonic() - started) * 1000)
                if args.wait_after_answer <= 0:
                    done = True
                else:
                    deadline = time.monotonic() + args.wait_after_answer
            elif isinstance(event, h2.events.StreamReset):
                report["reset"] = event.error_code
                done = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                data_text = (event.additional_data or b"").decode("utf-8", "replace")
                report["goaway"] = {"errorCode": int(event.error_code), "lastStreamId": event.last_stream_id,
                                    "debugData": data_text}
                done = True
        if response_body:
            report["reason"], _ = reason_of(response_body)
        try:
            sock.sendall(conn.data_to_send())
        except OSError:
            report["closed"] = True
            break
    if report["goaway"] is not None:
        # Does the server close the connection after its GOAWAY? (Real time: generous for a loaded machine; the
        # wait ends at the close.)
        sock.settimeout(15)
        try:
            report["closed"] = sock.recv(65536) == b""
        except (socket.timeout, OSError):
            report["closed"] = False
    sock.close()
    return report


def run_h2(args: argparse.Namespace) -> dict:
    import h2.settings  # noqa: F401  (RemoteSettingsChanged codes)
    report = h2_push(args, args.timeout)
    if args.second:
        args.wait_after_answer = 0
        report["second"] = h2_push(args, args.timeout)["status"]
    return report


def run_stall(args: argparse.Namespace) -> dict:
    """A push that stalls (the client gives up after --timeout) and, once it is sent, another on a new connection
    (its own generous timeout: a loaded machine may take seconds to connect). `firstStillStalled`: the second was
    answered while the first was still waiting — whatever either took in real time."""
    import threading
    first: dict = {}
    first_sent = threading.Event()

    def stalled() -> None:
        first.update(h2_push(args, args.timeout, sent=first_sent.set))

    thread = threading.Thread(target=stalled)
    thread.start()
    if not first_sent.wait(30):
        raise SystemExit("the first push was not sent within 30 s")
    time.sleep(0.05)  # let it reach the server and stall there (the second is answered either way)
    with httpx.Client(http1=False, http2=True, timeout=30) as client:
        start = time.monotonic()
        r = client.post(f"http://127.0.0.1:{args.port}/3/device/{'cd' * 32}", headers=headers(args), json=PAYLOAD)
        second_ms = (time.monotonic() - start) * 1000
    first_still_stalled = thread.is_alive()
    thread.join()
    return {"first": "timeout" if first.get("timedOut") else first.get("status"), "second": r.status_code,
            "secondMs": second_ms, "firstStillStalled": first_still_stalled}


def main() -> int:
    import h2.settings  # noqa: F401
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["aioapns", "httpx", "latency", "h2", "stall"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--jwt")
    parser.add_argument("--topic", default="com.example.app")
    parser.add_argument("--token")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=20, help="latency: pushes in flight at once (default 20)")
    parser.add_argument("--second", action="store_true")
    parser.add_argument("--payload", help="h2: the request body (default: an alert)")
    parser.add_argument("--wait-after-answer", type=float, default=0.0,
                        help="h2: keep reading this many seconds after the answer (SETTINGS that follow it)")
    parser.add_argument("--cafile")
    parser.add_argument("--key-file")
    parser.add_argument("--key-id")
    parser.add_argument("--team-id")
    args = parser.parse_args()
    if args.mode == "aioapns":
        report = asyncio.run(run_aioapns(args))
    elif args.mode == "httpx":
        report = run_httpx(args)
    elif args.mode == "latency":
        report = run_latency(args)
    elif args.mode == "h2":
        report = run_h2(args)
    else:
        report = run_stall(args)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
