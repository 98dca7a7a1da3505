#!/usr/bin/env python3
"""Soak (issue #18): steady load at half the measured capacity for --minutes, with slow and disconnecting clients
mixed in; the server's RSS, descriptors and threads and a probe's p99 latency, sampled each minute, must stay flat.

1. The capacity: h2load (4 connections, 50 streams each) pushes for 10 s to 20 devices; its req/s is the capacity.
2. For --minutes: h2load pushes at half that rate (--rps), while
   - a probe (soak_probe.py: one h2c connection, 50 pushes/s one at a time) measures latency per minute;
   - a webhook subscription for the probe's device posts its events to a receiver here;
   - an SSE reader takes every event as fast as it comes, and two slow ones read 16 KiB every quarter second through a
     16 KiB receive buffer (the server ends their streams at its buffer cap; one of them leaves after 20 s with a
     TCP reset if it has not; they come back);
   - 20 slow-loris connections send one header line every 3 s (the server's request timeout closes them; they
     reconnect), and every 0.2 s a client opens a connection, starts a push (h2c, or HTTP/1.1) and resets it midway.
3. Each minute: RSS, open descriptors and threads of the server (/proc), the probe's p50/p99, the counts.

Bounds, against the first minute (the warm-up): RSS at most 1.5×, descriptors at most +50, threads at most +8 (the
pools grow with demand: Dispatch's workers, SQLite's readers; a leak of one per connection would pass +8 within a
minute, as some 300 connections are reset and a few hundred slow-loris ones closed each minute), the probe's p99 at
most 2× (of at least 1 ms); every probe push and every h2load request answered 2xx; the server alive
throughout, and a SIGTERM at the end exits 0. Exit status 1 if a bound or check fails.

Usage: soak.py --binary .build/release/apns-sandbox [--minutes 60]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
TEAM, KEY, TOPIC = "SOAKTEAM01", "SOAKKEY001", "com.soak.app"
PAYLOAD = b'{"aps":{"alert":{"title":"soak","body":"steady load"},"badge":1}}'
RETAINED_RECORDS = 200_000


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.values: dict[str, int] = {}

    def add(self, name: str, amount: int = 1) -> None:
        with self.lock:
            self.values[name] = self.values.get(name, 0) + amount

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.values)


def forever(stop: threading.Event, body) -> None:
    while not stop.is_set():
        try:
            body()
        except OSError:
            pass
        stop.wait(0.1)


def event_reader(port: int, stop: threading.Event, counters: Counters, slow: bool, leave_after: float = 1e9) -> None:
    """The fast reader takes every event as it comes and counts them. A slow one reads 16 KiB every quarter second
    through a 16 KiB receive buffer, until the server ends its stream (its buffer cap; counted) or `leave_after`
    seconds have passed (it leaves with a TCP reset); either way it comes back."""

    def once():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if slow:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /api/v1/events HTTP/1.1\r\nHost: soak\r\nAccept: text/event-stream\r\n\r\n")
            if slow:
                counters.add("slow SSE streams")
            leave = time.monotonic() + leave_after
            while not stop.is_set():
                data = sock.recv(16384 if slow else 65536)
                if not data:
                    if slow:
                        counters.add("slow SSE streams ended by the server")
                    return
                if not slow:
                    counters.add("SSE events", data.count(b"\nid: ") + data.startswith(b"id: "))
                elif time.monotonic() > leave:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                else:
                    time.sleep(0.25)
    forever(stop, once)


def slow_loris(port: int, stop: threading.Event, counters: Counters) -> None:
    def once():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"POST /3/device/00 HTTP/1.1\r\n")
            counters.add("slow-loris connections")
            header = 0
            while not stop.wait(3):
                header += 1
                sock.sendall(b"x-slow-%d: 1\r\n" % header)
    forever(stop, once)


def resetters(port: int, stop: threading.Event, counters: Counters, token: str, device: str) -> None:
    """Every 0.2 s a push started and cut off with a TCP reset: h2c (preface, SETTINGS, HEADERS, part of the DATA)
    or HTTP/1.1 (the request line, headers, part of the body)."""
    import h2.config
    import h2.connection

    turn = 0

    def once():
        nonlocal turn
        while not stop.wait(0.2):
            turn += 1
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                if turn % 2:
                    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
                    conn.initiate_connection()
                    conn.send_headers(1, [
                        (":method", "POST"), (":scheme", "http"), (":authority", "soak"),
                        (":path", f"/3/device/{device}"), ("authorization", f"bearer {token}"),
                        ("apns-topic", TOPIC), ("content-length", str(len(PAYLOAD))),
                    ])
                    conn.send_data(1, PAYLOAD[:10])
                    sock.sendall(conn.data_to_send())
                else:
                    sock.sendall(b"POST /3/device/%s HTTP/1.1\r\nHost: soak\r\nauthorization: bearer %s\r\n"
                                 b"apns-topic: %s\r\ncontent-length: %d\r\n\r\n%s"
                                 % (device.encode(), token.encode(), TOPIC.encode(), len(PAYLOAD), PAYLOAD[:10]))
                time.sleep(0.02)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            counters.add("pushes reset midway")
    forever(stop, once)


def webhook_receiver(counters: Counters) -> int:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            counters.add("webhook requests")
            try:
                counters.add("webhook " + json.loads(body)["type"])
            except (ValueError, KeyError, TypeError):
                counters.add("webhook bodies unreadable")
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def process_sample(pid: int, data: str) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    files = [os.path.join(data, name) for name in os.listdir(data) if name.startswith(("sandbox.sqlite", "webhooks.sqlite"))]
    return {"rss_mb": int(status["VmRSS"].split()[0]) // 1024, "threads": int(status["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "store_mb": sum(os.path.getsize(path) for path in files if os.path.exists(path)) // (1 << 20)}


def h2load(port: int, token: str, devices: list[str], payload: str, extra: list[str]) -> list[str]:
    return (["h2load", "-c", "4", "-m", "50" if "--rps" not in " ".join(extra) else "10",
             "-d", payload, "-H", f"authorization: bearer {token}", "-H", f"apns-topic: {TOPIC}",
             "-H", "content-type: application/json"] + extra
            + [f"http://127.0.0.1:{port}/3/device/{device}" for device in devices])


def h2load_summary(output: str) -> dict[str, float]:
    summary = {}
    if m := re.search(r"finished in [\d.]+s, ([\d.]+) req/s", output):
        summary["rps"] = float(m.group(1))
    if m := re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored",
                      output):
        summary.update(total=int(m.group(1)), done=int(m.group(2)), succeeded=int(m.group(3)),
                       failed=int(m.group(4)), errored=int(m.group(5)))
    if m := re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", output):
        summary.update(ok=int(m.group(1)), non2xx=int(m.group(2)) + int(m.group(3)) + int(m.group(4)))
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description="steady load with slow and disconnecting clients; flat or fail")
    parser.add_argument("--binary", required=True)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--interval", type=float, default=60, help="seconds per sample (a minute)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    work = tempfile.mkdtemp(prefix="soak-")
    data = os.path.join(work, "data")
    subprocess.run([binary, "keys", "create", "--team", TEAM, "--key-id", KEY, "--out", work], check=True,
                   capture_output=True)
    counters = Counters()
    receiver = webhook_receiver(counters)
    probe_device = "50a4" * 16
    devices = ["%064x" % (0x50a450a4 * (i + 1)) for i in range(20)]
    config = {
        "apns": {"streamsBeforeAuthentication": 0, "tokenMaxAgeSeconds": 86400},
        # Retention reached within minutes, so that the steady state includes pruning (once a minute) under load.
        "storage": {"maxRecords": RETAINED_RECORDS},
        "events": {"maxEvents": 2 * RETAINED_RECORDS},
        "teams": [{"teamID": TEAM, "keys": [{"keyID": KEY, "privateKeyFile": f"AuthKey_{KEY}.p8"}], "apps": [TOPIC]}],
        "webhooks": {"subscriptions": [{"id": "soak", "url": f"http://127.0.0.1:{receiver}/events",
                                        "devices": [probe_device]}]},
    }
    config_path = os.path.join(work, "sandbox.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    payload = os.path.join(work, "payload.json")
    with open(payload, "wb") as f:
        f.write(PAYLOAD)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(os.path.join(work, "server.log"), "wb")
    server = subprocess.Popen([binary, "serve", "--config", config_path, "--data-dir", data, "--tls-port", "0",
                               "--http-port", str(port), "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT)
    failures: list[str] = []
    rows: list[dict] = []
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.05)
        token = subprocess.run([binary, "token", "--config", config_path], check=True, capture_output=True,
                               text=True).stdout.strip()

        capacity_run = subprocess.run(h2load(port, token, devices, payload, ["-D", "10"]), capture_output=True,
                                      text=True)
        capacity = h2load_summary(capacity_run.stdout)
        if "rps" not in capacity or capacity.get("non2xx", 1) != 0:
            raise RuntimeError("the capacity run failed: " + capacity_run.stdout[-1500:] + capacity_run.stderr[-500:])
        rate = capacity["rps"] / 2
        seconds = int(args.minutes * args.interval)
        print(f"soak: capacity {capacity['rps']:.0f} pushes/s (h2load, 10 s); {args.minutes} × {args.interval:g} s at "
              f"{rate:.0f}/s plus a 50/s probe, with slow and disconnecting clients", flush=True)

        load = subprocess.Popen(h2load(port, token, devices, payload,
                                       ["-D", str(seconds + 5), "--rps", f"{rate / 4:.2f}"]),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        probe = subprocess.Popen([sys.executable, os.path.join(HERE, "soak_probe.py"), "--port", str(port), "--token",
                                  token, "--topic", TOPIC, "--device", probe_device, "--interval", str(args.interval),
                                  "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True)
        workers = [lambda: event_reader(port, stop, counters, slow=False),
                   lambda: event_reader(port, stop, counters, slow=True),
                   lambda: event_reader(port, stop, counters, slow=True, leave_after=20),
                   lambda: resetters(port, stop, counters, token, devices[0])]
        workers += [lambda: slow_loris(port, stop, counters)] * 20
        for worker in workers:
            threading.Thread(target=worker, daemon=True).start()

        print("minute  RSS MB  fds  threads  store MB  probe p50 ms  p99 ms  max ms  probe ok  SSE events  slow SSE (ended)  "
              "slow-loris  resets  webhook", flush=True)
        for line in probe.stdout:
            sample = json.loads(line)
            if server.poll() is not None:
                failures.append(f"the server exited ({server.returncode}) in minute {sample['interval']}")
                break
            sample.update(process_sample(server.pid, data))
            sample.update(counters.snapshot())
            rows.append(sample)
            print(f"{sample['interval']:6}  {sample['rss_mb']:6}  {sample['fds']:3}  {sample['threads']:7}  {sample['store_mb']:8}  "
                  f"{sample['p50_ms']:12.2f}  {sample['p99_ms']:6.2f}  {sample['max_ms']:6.1f}  "
                  f"{sample['ok']:4}/{sample['pushes']:<4}  {sample.get('SSE events', 0):10}  "
                  f"{sample.get('slow SSE streams', 0):7} ({sample.get('slow SSE streams ended by the server', 0):6})  "
                  f"{sample.get('slow-loris connections', 0):10}  "
                  f"{sample.get('pushes reset midway', 0):6}  {sample.get('webhook requests', 0):7}", flush=True)
            if sample["ok"] != sample["pushes"]:
                failures.append(f"minute {sample['interval']}: {sample['pushes'] - sample['ok']} probe pushes not "
                                f"answered 200: {sample['errors']}")
        probe.wait(timeout=60)
        # Every probe push's events reach the webhook receiver (it answers at once): each type as often as pushes.
        probed = sum(row["ok"] for row in rows)
        deadline = time.monotonic() + 30
        while True:
            webhook = {name[8:]: count for name, count in counters.snapshot().items() if name.startswith("webhook ")}
            if (webhook.get("push.accepted", 0) >= probed and webhook.get("notification.displayed", 0) >= probed) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        print(f"webhook: {webhook} for {probed} probe pushes", flush=True)
        if webhook.get("push.accepted", 0) < probed or webhook.get("notification.displayed", 0) < probed:
            failures.append(f"webhook: not every probe push's events arrived within 30 s: {webhook}")
        output, _ = load.communicate(timeout=120)
        steady = h2load_summary(output)
        print(f"h2load: {steady.get('succeeded', 0)} of {steady.get('total', 0)} requests succeeded, "
              f"{steady.get('rps', 0):.0f} req/s", flush=True)
        if steady.get("non2xx", 1) != 0 or steady.get("failed", 1) != 0 or steady.get("errored", 1) != 0:
            failures.append("h2load saw failures: " + output[-1500:])

        if len(rows) < 2:
            failures.append(f"only {len(rows)} samples")
        else:
            first = rows[0]
            for row in rows[1:]:
                minute = row["interval"]
                if row["rss_mb"] > 1.5 * first["rss_mb"]:
                    failures.append(f"minute {minute}: RSS {row['rss_mb']} MB > 1.5 × {first['rss_mb']} MB")
                if row["fds"] > first["fds"] + 50:
                    failures.append(f"minute {minute}: {row['fds']} descriptors > {first['fds']} + 50")
                if row["threads"] > first["threads"] + 8:
                    failures.append(f"minute {minute}: {row['threads']} threads > {first['threads']} + 8")
                if row["p99_ms"] > 2 * max(first["p99_ms"], 1.0):
                    failures.append(f"minute {minute}: probe p99 {row['p99_ms']} ms > 2 × {first['p99_ms']} ms")
    except Exception as error:
        failures.append(f"stopped: {error!r}")
    finally:
        stop.set()
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                if server.wait(timeout=30) != 0:
                    failures.append(f"SIGTERM: the server exited {server.returncode}")
            except subprocess.TimeoutExpired:
                server.kill()
                failures.append("SIGTERM: the server did not exit in 30 s")
        log.close()
    if failures:
        print(f"\nFAILED ({len(failures)}); the work directory is kept: {work}")
        for failure in failures:
            print("  " + failure)
        return 1
    print("\nall bounds held")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
