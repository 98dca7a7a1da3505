#!/usr/bin/env python3
"""Soak (issue #18): steady load at half the measured capacity for --minutes, with slow and disconnecting clients
mixed in; the server's RSS, descriptors and threads and a probe's p99 latency, sampled each minute, must stay flat.

1. The capacity: h2load (4 connections, 50 streams each) pushes for 10 s to 20 devices; its req/s is the capacity.
2. For --minutes: h2load pushes at half that rate (--rps), while
   - a probe (soak_probe.py: one h2c connection, 50 pushes/s one at a time) measures latency per minute;
   - a webhook subscription for the probe's device posts its events to a receiver here;
   - an SSE reader takes every event as fast as it comes, and two slow ones read 16 KiB every quarter second through a
     16 KiB receive buffer; one of them leaves every 20 s with a TCP reset. Each comes back with Last-Event-ID when it
     left or the server ended its stream (at its buffer cap), and is then fed from the event log, paced by its reading;
   - 20 slow-loris connections send one header line every 3 s (the server's request timeout closes them; they
     reconnect), and every 0.2 s a client opens a connection, starts a push (h2c, or HTTP/1.1) and resets it midway;
   - retention (the records capped at 200,000, the events at 400,000; 20,000 and 40,000 in runs under 20 minutes)
     prunes once a minute under the load.
3. Each minute: RSS, open descriptors and threads of the server (/proc), the store's size, records and events, the
   probe's p50/p99, the clients' counts.

Bounds, against the first minute (the warm-up): RSS at most 1.5×, descriptors at most +50, threads at most +8 (the
pools grow with demand: Dispatch's workers, SQLite's readers; a leak of one per connection would pass +8 within a
minute, as some 300 connections are reset and about 100 slow-loris ones closed each minute), the probe's p99 at
most 2× (of at least 1 ms). Each minute: every probe push answered 200 (at least half the 50/s asked), the records
at most the cap plus 1.5 minutes of pushes (events likewise), and every kind of client making progress. Over 20
minutes or more, the store's files in the last third at most 1.25× their size at the end of the first. Every
h2load request answered 2xx (at least 75 % of those asked), every probe push's two events delivered to the webhook,
no unexpected client error, the server alive throughout, and a SIGTERM at the end exits 0. Exit status 1 if a
bound or check fails; the work directory is then kept.

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
import sqlite3
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
# Records kept (events: twice as many). Short runs keep 20,000, so that the first minute, the reference, already
# prunes a minute's worth as every later one does (a debug build reaches 200,000 only in its third minute).
RETAINED_RECORDS, SHORT_RUN_RETAINED_RECORDS = 200_000, 20_000
PROBE_RATE = 50
PRUNE_SECONDS = 60  # the retention pass's period (its default)


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.values: dict[str, int] = {}
        self.errors: list[str] = []

    def add(self, name: str, amount: int = 1) -> None:
        with self.lock:
            self.values[name] = self.values.get(name, 0) + amount

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.values)

    def error(self, message: str) -> None:
        with self.lock:
            self.values["client errors"] = self.values.get("client errors", 0) + 1
            if len(self.errors) < 5:
                self.errors.append(message)


def forever(stop: threading.Event, counters: Counters, body) -> None:
    """Runs `body` again and again until `stop`: a socket error (the server closing, a timeout) is part of the game;
    anything else is a fault of the client or the server's answer, counted and kept for the report."""
    while not stop.is_set():
        try:
            body()
        except OSError:
            pass
        except Exception as error:  # noqa: BLE001 - reported as a failure at the end
            counters.error(f"{threading.current_thread().name}: {error!r}")
        stop.wait(0.1)


def event_reader(port: int, stop: threading.Event, counters: Counters, slow: bool, leave_after: float = 1e9) -> None:
    """The fast reader takes every event as it comes and counts them. A slow one reads 16 KiB every quarter second
    through a 16 KiB receive buffer. Each comes back with `Last-Event-ID` (the server then feeds it from its event
    log, paced by the reader) when the server ends its stream (the last chunk, or a close: counted), and a slow one
    also after `leave_after` seconds (it leaves with a TCP reset)."""
    last_id: list[int] = []
    id_pattern = re.compile(rb"(?:^|\n)id: (\d+)\n")

    def once():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if slow:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", port))
            resume = f"Last-Event-ID: {last_id[-1]}\r\n" if last_id else ""
            sock.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: soak\r\nAccept: text/event-stream\r\n{resume}\r\n"
                         .encode())
            kind = "slow SSE" if slow else "SSE"
            counters.add(f"{kind} streams")
            if resume:
                counters.add(f"{kind} streams resumed")
            leave = time.monotonic() + leave_after
            tail = b""
            while not stop.is_set():
                data = sock.recv(16384 if slow else 65536)
                seen = tail + data
                if ids := id_pattern.findall(seen):
                    last_id.append(int(ids[-1]))
                    del last_id[:-1]
                if not slow:
                    counters.add("SSE events", data.count(b"\nid: ") + data.startswith(b"id: "))
                # The server ends a stream with HTTP/1.1's last chunk and keeps the connection, or closes it.
                if not data or seen.endswith(b"\r\n0\r\n\r\n"):
                    counters.add(f"{kind} streams ended by the server")
                    return
                tail = seen[-64:]
                if time.monotonic() > leave:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    counters.add("slow SSE streams left with a reset")
                    return
                if slow:
                    time.sleep(0.25)
    forever(stop, counters, once)


def slow_loris(port: int, stop: threading.Event, counters: Counters) -> None:
    def once():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"POST /3/device/00 HTTP/1.1\r\n")
            counters.add("slow-loris connections")
            header = 0
            while not stop.wait(3):
                header += 1
                sock.sendall(b"x-slow-%d: 1\r\n" % header)
    forever(stop, counters, once)


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
    forever(stop, counters, once)


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
    # The rows retention keeps (read-only, from the WAL's snapshot: the server's writer is not held up).
    with sqlite3.connect(f"file:{os.path.join(data, 'sandbox.sqlite')}?mode=ro", uri=True, timeout=10) as db:
        records = db.execute("SELECT count(*) FROM notifications").fetchone()[0]
        events = db.execute("SELECT count(*) FROM events").fetchone()[0]
    db.close()
    return {"rss_mb": int(status["VmRSS"].split()[0]) // 1024, "threads": int(status["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "store_mb": sum(os.path.getsize(path) for path in files if os.path.exists(path)) // (1 << 20),
            "records": records, "events": events}


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


def bounds(rows: list[dict], minutes: int, rate: float, interval: float, retained: int) -> list[str]:
    """What must hold of the samples (the module's docstring states it)."""
    failures = []
    if len(rows) != minutes:
        return [f"{len(rows)} samples of {minutes}"]
    first = rows[0]
    pushes_per_pass = rate * PRUNE_SECONDS
    progress = ["SSE events", "slow SSE streams", "slow-loris connections", "pushes reset midway", "webhook requests"]
    for before, row in zip(rows, rows[1:]):
        minute = row["interval"]
        if row["rss_mb"] > 1.5 * first["rss_mb"]:
            failures.append(f"minute {minute}: RSS {row['rss_mb']} MB > 1.5 × {first['rss_mb']} MB")
        if row["fds"] > first["fds"] + 50:
            failures.append(f"minute {minute}: {row['fds']} descriptors > {first['fds']} + 50")
        if row["threads"] > first["threads"] + 8:
            failures.append(f"minute {minute}: {row['threads']} threads > {first['threads']} + 8")
        if row["p99_ms"] > 2 * max(first["p99_ms"], 1.0):
            failures.append(f"minute {minute}: probe p99 {row['p99_ms']} ms > 2 × {first['p99_ms']} ms")
        for name in progress:
            if row.get(name, 0) <= before.get(name, 0):
                failures.append(f"minute {minute}: no progress of {name!r} ({row.get(name, 0)})")
    for row in rows:
        minute = row["interval"]
        if row["ok"] != row["pushes"]:
            failures.append(f"minute {minute}: {row['pushes'] - row['ok']} of {row['pushes']} probe pushes not "
                            f"answered 200: {row['errors']}")
        if row["pushes"] < 0.5 * PROBE_RATE * interval:
            failures.append(f"minute {minute}: only {row['pushes']} probe pushes (50/s asked)")
        # Retention (a pass a minute, chunked) keeps the log bounded: at most the cap plus what arrives between passes.
        if row["records"] > retained + 1.5 * pushes_per_pass:
            failures.append(f"minute {minute}: {row['records']} records > {retained} + 1.5 minutes of pushes")
        if row["events"] > 2 * retained + 3 * pushes_per_pass:
            failures.append(f"minute {minute}: {row['events']} events > {2 * retained} + 1.5 minutes of events")
    if minutes >= 20:
        # Once retention runs, the files reuse their free pages: the last third no bigger than the first third's end.
        third = minutes // 3
        reference = rows[third - 1]["store_mb"]
        for row in rows[2 * third:]:
            if row["store_mb"] > 1.25 * reference:
                failures.append(f"minute {row['interval']}: store {row['store_mb']} MB > 1.25 × {reference} MB "
                                f"(minute {third})")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description="steady load with slow and disconnecting clients; flat or fail")
    parser.add_argument("--binary", required=True)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--interval", type=float, default=60, help="seconds per sample (a minute)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (kept anyway on a failure)")
    args = parser.parse_args()
    # A SIGTERM (CI's timeout) ends the run through the cleanup below, like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    binary = os.path.abspath(args.binary)
    work = tempfile.mkdtemp(prefix="soak-")
    data = os.path.join(work, "data")
    counters = Counters()
    failures: list[str] = []
    rows: list[dict] = []
    stop = threading.Event()
    server = load = probe = None
    retained = RETAINED_RECORDS if args.minutes >= 20 else SHORT_RUN_RETAINED_RECORDS
    log = open(os.path.join(work, "server.log"), "wb")
    try:
        subprocess.run([binary, "keys", "create", "--team", TEAM, "--key-id", KEY, "--out", work], check=True,
                       capture_output=True)
        receiver = webhook_receiver(counters)
        probe_device = "50a4" * 16
        devices = ["%064x" % (0x50a450a4 * (i + 1)) for i in range(20)]
        config = {
            "apns": {"streamsBeforeAuthentication": 0, "tokenMaxAgeSeconds": 86400},
            # Retention reached within minutes, so that the steady state includes pruning (once a minute) under load.
            "storage": {"maxRecords": retained},
            "events": {"maxEvents": 2 * retained},
            "teams": [{"teamID": TEAM, "keys": [{"keyID": KEY, "privateKeyFile": f"AuthKey_{KEY}.p8"}],
                       "apps": [TOPIC]}],
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
        server = subprocess.Popen([binary, "serve", "--config", config_path, "--data-dir", data, "--tls-port", "0",
                                   "--http-port", str(port), "--log-level", "warning"],
                                  stdout=log, stderr=subprocess.STDOUT)
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
              f"{rate:.0f}/s plus a {PROBE_RATE}/s probe, with slow and disconnecting clients", flush=True)

        load = subprocess.Popen(h2load(port, token, devices, payload,
                                       ["-D", str(seconds + 5), "--rps", f"{rate / 4:.2f}"]),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        probe = subprocess.Popen([sys.executable, os.path.join(HERE, "soak_probe.py"), "--port", str(port), "--token",
                                  token, "--topic", TOPIC, "--device", probe_device, "--rate", str(PROBE_RATE),
                                  "--interval", str(args.interval), "--seconds", str(seconds)],
                                 stdout=subprocess.PIPE, text=True)
        workers = {"fast SSE reader": lambda: event_reader(port, stop, counters, slow=False),
                   "slow SSE reader": lambda: event_reader(port, stop, counters, slow=True),
                   "leaving SSE reader": lambda: event_reader(port, stop, counters, slow=True, leave_after=20),
                   "resetter": lambda: resetters(port, stop, counters, token, devices[0])}
        workers |= {f"slow-loris {i}": lambda: slow_loris(port, stop, counters) for i in range(20)}
        for name, worker in workers.items():
            threading.Thread(target=worker, name=name, daemon=True).start()

        print("minute  RSS MB  fds  threads  store MB  records  events   probe p50 ms  p99 ms  max ms  probe ok    "
              "SSE events  slow SSE (ended/resumed)  slow-loris  resets  webhook", flush=True)
        for line in probe.stdout:
            sample = json.loads(line)
            if server.poll() is not None:
                failures.append(f"the server exited ({server.returncode}) in minute {sample['interval']}")
                break
            sample.update(process_sample(server.pid, data))
            sample.update(counters.snapshot())
            rows.append(sample)
            print(f"{sample['interval']:6}  {sample['rss_mb']:6}  {sample['fds']:3}  {sample['threads']:7}  "
                  f"{sample['store_mb']:8}  {sample['records']:7}  {sample['events']:7}  "
                  f"{sample['p50_ms']:12.2f}  {sample['p99_ms']:6.2f}  {sample['max_ms']:6.1f}  "
                  f"{sample['ok']:4}/{sample['pushes']:<4}  {sample.get('SSE events', 0):10}  "
                  f"{sample.get('slow SSE streams', 0):6} ({sample.get('slow SSE streams ended by the server', 0)}/"
                  f"{sample.get('slow SSE streams resumed', 0)}){'':8}  "
                  f"{sample.get('slow-loris connections', 0):10}  "
                  f"{sample.get('pushes reset midway', 0):6}  {sample.get('webhook requests', 0):7}", flush=True)
        if probe.wait(timeout=60) != 0:
            failures.append(f"the probe exited {probe.returncode}")
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
              f"{steady.get('rps', 0):.0f} req/s ({rate:.0f} asked)", flush=True)
        if steady.get("non2xx", 1) != 0 or steady.get("failed", 1) != 0 or steady.get("errored", 1) != 0:
            failures.append("h2load saw failures: " + output[-1500:])
        # Its rate is asked, not guaranteed: while a retention pass runs, pushes take longer and h2load's ten streams a
        # connection fall behind (a 3-minute run made 80 % of it). A hung server makes far less.
        if steady.get("done", 0) < 0.75 * rate * seconds:
            failures.append(f"h2load finished {steady.get('done', 0)} requests, not 75 % of {rate * seconds:.0f}")
        failures += bounds(rows, args.minutes, rate, args.interval, retained)
        print(f"clients: {counters.snapshot()}", flush=True)
        if counters.errors:
            failures.append(f"{len(counters.errors)}+ unexpected client errors: {counters.errors}")
    except BaseException as error:  # noqa: BLE001 - Ctrl-C and SIGTERM too: report, then clean up
        failures.append(f"stopped: {error!r}")
    finally:
        stop.set()
        for process in (load, probe):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        if server is not None:
            if server.poll() is not None:
                failures.append(f"the server exited ({server.returncode}) before the SIGTERM")
            else:
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
