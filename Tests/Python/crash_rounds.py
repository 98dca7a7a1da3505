#!/usr/bin/env python3
"""Crash rounds (issue #18): sustained mixed load, `kill -9` at random points, restart, check that nothing is lost.

Each round: two pushers (crash_pusher.py, h2c) send pushes to many devices, to four apps — no extension, a builtin
extension, an exec extension (a shell script whose `sleep` child must die with it; some take longer than the budget)
and a webhook extension (answered by this script, a few with 500) — while two Server-Sent Event readers follow the
event log (resuming with Last-Event-ID) and every event goes to a flaky webhook receiver (this script: some requests
answered 500, some connections dropped unanswered). At a random moment the server gets SIGKILL; sometimes it gets a
second one moments after its restart, while it recovers. Then, before the restart:

- no process of an extension instance and no guardian survives (checked in /proc);
- `PRAGMA integrity_check` passes on a copy of both SQLite files (the copy: the server's own restart must recover
  the write-ahead log, not this check);

and after it:

- every apns-id any round's pushers got a 200 for is in the store once, and final;
- the SSE readers saw each event once, in id order, across every restart, and saw each acknowledged push's
  `push.accepted` and its final event;
- every event the readers saw reached the webhook receiver at least once, correctly signed.

The totals are printed at the end; the exit status is 1 if any check failed (each failure is printed).

Usage: crash_rounds.py --binary .build/debug/apns-sandbox [--rounds 20] [--seed N] [--rate 300] [--keep]
"""

from __future__ import annotations

import argparse
import base64
import collections
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

HERE = os.path.dirname(os.path.abspath(__file__))
TEAM = "CRASHTEAM1"
APPS = {
    "plain": "com.crash.plain",
    "builtin": "com.crash.builtin",
    "exec": "com.crash.exec",
    "webhook": "com.crash.webhook",
}
FINAL_EVENTS = {"notification.displayed", "notification.delivered-silent", "notification.expired",
                "notification.discarded"}
EXEC_EXTENSION = """#!/bin/sh
# The crash rounds' exec extension: reads the request, waits in a child process (which must die with the
# instance), answers. "crash-slow" pushes outlast the 2 s budget (original-timeout).
IFS= read -r request
case "$request" in
  *crash-slow*) sleep 4 ;;
  *crash-medium*) sleep 1 ;;
  *) sleep 0.05 ;;
esac
printf '%s\\n' '{"type":"content","content":{"title":"exec","body":"processed by the exec extension"}}'
"""


def event_number(event_id: str) -> int:
    return int(event_id.removeprefix("evt_"))


class Receivers:
    """The webhook receiver (POST /events: flaky, verifies signatures) and the webhook extension (POST /nse)."""

    def __init__(self, secret: str, seed: int):
        self.verifier = Webhook(secret)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.delivered: set[int] = set()                 # event ids answered 2xx
        self.by_apns_id: dict[str, set[str]] = collections.defaultdict(set)
        self.failures: collections.Counter[int] = collections.Counter()  # failures dealt per event
        self.requests = 0
        self.repeats = 0          # 2xx answers to an event already delivered (at least once, not exactly once)
        self.failed_on_purpose = 0
        self.dropped_on_purpose = 0
        self.invalid = 0
        self.extension_requests = 0
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path == "/nse":
                    receivers.extension(self, body)
                else:
                    receivers.event(self, body)

            def log_message(self, *_):
                pass

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # the sandbox died mid-request (a kill): nothing to report

        self.server = Quiet(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def event(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            payload = self.verifier.verify(body, headers)
        except WebhookVerificationError:
            with self.lock:
                self.invalid += 1
            return self.answer(handler, 400)
        number = event_number(payload["id"])
        with self.lock:
            self.requests += 1
            # Flaky, but never more than twice for one event: the retry schedule must not run out.
            fail = self.failures[number] < 2 and self.rng.random() < 0.15
            drop = fail and self.rng.random() < 0.3
            if fail:
                self.failures[number] += 1
                if drop:
                    self.dropped_on_purpose += 1
                else:
                    self.failed_on_purpose += 1
            else:
                if number in self.delivered:
                    self.repeats += 1
                self.delivered.add(number)
                apns_id = (payload.get("data") or {}).get("apnsId")
                if apns_id:
                    self.by_apns_id[apns_id].add(payload["type"])
        if drop:
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)  # no answer at all
            return
        self.answer(handler, 500 if fail else 200)

    def extension(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with self.lock:
            self.extension_requests += 1
            delay = self.rng.uniform(0, 0.3)
            status = 500 if self.rng.random() < 0.05 else 200
        time.sleep(delay)
        content = {"title": "webhook", "body": "processed by the webhook extension"}
        self.answer(handler, status, json.dumps(content).encode() if status == 200 else b"")

    @staticmethod
    def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"") -> None:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


class EventReader(threading.Thread):
    """Follows GET /api/v1/events from the first event on, reconnecting with Last-Event-ID after every crash."""

    def __init__(self, port: int, query: str = ""):
        super().__init__(daemon=True)
        self.port, self.query = port, query
        self.lock = threading.Lock()
        self.last = 0
        self.seen: set[int] = set()
        self.by_apns_id: dict[str, set[str]] = collections.defaultdict(set)
        self.out_of_order: list[str] = []
        self.connections = 0
        self.stopping = False

    def run(self) -> None:
        while not self.stopping:
            try:
                self.follow()
            except (OSError, http.client.HTTPException, ValueError):
                pass
            time.sleep(0.1)

    def follow(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/api/v1/events" + self.query,
                         headers={"Accept": "text/event-stream", "Last-Event-ID": str(self.last)})
            response = conn.getresponse()
            if response.status != 200:
                return
            with self.lock:
                self.connections += 1
            number, data = None, None
            while not self.stopping:
                line = response.readline()
                if not line:
                    return
                line = line.rstrip(b"\r\n")
                if line.startswith(b"id:"):
                    number = int(line[3:].strip())
                elif line.startswith(b"data:"):
                    data = line[5:].strip()
                elif not line and number is not None:
                    self.record(number, json.loads(data or b"{}"))
                    number, data = None, None
        finally:
            conn.close()

    def record(self, number: int, envelope: dict) -> None:
        with self.lock:
            if number <= self.last:
                self.out_of_order.append(f"event {number} after {self.last}{self.query}")
            self.last = max(self.last, number)
            self.seen.add(number)
            apns_id = (envelope.get("data") or {}).get("apnsId")
            if apns_id:
                self.by_apns_id[apns_id].add(envelope.get("type", ""))


class Server:
    def __init__(self, binary: str, config: str, data: str, port: int, logs: str):
        self.binary, self.config, self.data, self.port, self.logs = binary, config, data, port, logs
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> float:
        """Starts the server and waits for /healthz; returns the seconds it took."""
        self.starts += 1
        log = open(os.path.join(self.logs, f"server-{self.starts}.log"), "wb")
        began = time.monotonic()
        self.process = subprocess.Popen(
            [self.binary, "serve", "--config", self.config, "--data-dir", self.data, "--tls-port", "0",
             "--http-port", str(self.port), "--host", "127.0.0.1", "--log-level", "notice"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        while time.monotonic() - began < 60:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode} at start {self.starts}: "
                                   + self.log_tail())
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        return time.monotonic() - began
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("the server did not become healthy in 60 s: " + self.log_tail())

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def log_tail(self) -> str:
        with open(os.path.join(self.logs, f"server-{self.starts}.log"), "rb") as f:
            return f.read()[-3000:].decode(errors="replace")

    def get(self, path: str, timeout: float = 70):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as error:  # e.g. 408 from a wait that timed out
            return error.code, {}


def process_table() -> dict[int, tuple[int, str, str, bytes]]:
    """pid → (ppid, state, comm, environ) of every process this user can read."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    environ = f.read()
            except OSError:
                environ = b""
            table[int(name)] = (int(fields[1]), fields[0], comm, environ)
        except (OSError, ValueError):
            continue
    return table


def extension_processes(data: str) -> list[int]:
    """Live (not zombie) processes of this data directory's extension instances."""
    marker = f"APNS_SANDBOX_APP_GROUP={data}".encode()
    return [pid for pid, (_, state, _, environ) in process_table().items()
            if state != "Z" and marker in environ]


def guardians(server_pid: int) -> list[int]:
    return [pid for pid, (ppid, state, comm, _) in process_table().items()
            if ppid == server_pid and comm == "nse-guardian" and state != "Z"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        return stat[stat.rindex(")") + 2:].split()[0] != "Z"
    except OSError:
        return False


def integrity(data: str, scratch: str) -> list[str]:
    """integrity_check of a copy of each SQLite file (with its WAL); returns the problems."""
    problems = []
    for name in ("sandbox.sqlite", "webhooks.sqlite"):
        source = os.path.join(data, name)
        if not os.path.exists(source):
            problems.append(f"{name} is missing")
            continue
        copy_dir = tempfile.mkdtemp(dir=scratch)
        for suffix in ("", "-wal"):
            if os.path.exists(source + suffix):
                shutil.copyfile(source + suffix, os.path.join(copy_dir, name + suffix))
        db = sqlite3.connect(os.path.join(copy_dir, name))
        try:
            result = [row[0] for row in db.execute("PRAGMA integrity_check")]
        finally:
            db.close()
        shutil.rmtree(copy_dir)
        if result != ["ok"]:
            problems.append(f"{name}: integrity_check says {result[:5]}")
    return problems


def write_setup(binary: str, work: str, receivers_port: int, secret: str, devices: list[str]) -> tuple[str, str]:
    """Writes the key, the exec extension, the configuration and the pushers' plan; returns their paths."""
    subprocess.run([binary, "keys", "create", "--team", TEAM, "--key-id", "CRASHKEY01", "--out", work],
                   check=True, capture_output=True)
    nse = os.path.join(work, "nse.sh")
    with open(nse, "w") as f:
        f.write(EXEC_EXTENSION)
    os.chmod(nse, 0o755)
    extensions = {
        "plain": None,
        "builtin": {"kind": "builtin", "steps": [{"step": "rewrite", "title": "[builtin] {{title}}"}]},
        "exec": {"kind": "exec", "path": nse, "budgetMs": 2000, "graceMs": 500},
        "webhook": {"kind": "webhook", "url": f"http://127.0.0.1:{receivers_port}/nse", "budgetMs": 2000},
    }
    config = {
        "apns": {"streamsBeforeAuthentication": 0, "unknownDeviceTokens": "autoRegister", "autoRegisterApps": True},
        "events": {"heartbeatSeconds": 1},
        "webhooks": {
            "retryScheduleMilliseconds": [0, 200, 500, 1000, 2000, 4000, 8000], "jitter": 0.1,
            "timeoutMilliseconds": 5000, "breakerCooldownMilliseconds": 500,
            "subscriptions": [{"id": "crash-rounds", "url": f"http://127.0.0.1:{receivers_port}/events",
                               "secret": secret}],
        },
        "teams": [{"teamID": TEAM, "keys": [{"keyID": "CRASHKEY01", "privateKeyFile": "AuthKey_CRASHKEY01.p8"}],
                   "apps": list(APPS.values())}],
        "apps": [{"bundleID": APPS[kind], "teamID": TEAM, "serviceExtension": extension}
                 for kind, extension in extensions.items()],
    }
    config_path = os.path.join(work, "sandbox.json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2)

    def alert(kind: str, marker: str = "") -> dict:
        aps = {"alert": {"title": kind, "body": "crash rounds"}}
        if kind != "plain":
            aps["mutable-content"] = 1
        return {"aps": aps, "marker": marker}

    # A device token belongs to one app: 40 % of the devices have the app without an extension, 20 % each of the
    # others; five pushes per device to pick from.
    kinds = ["plain", "builtin", "plain", "webhook", "exec"]
    entries = {
        "plain": [(alert("plain"), {})] * 4 + [(alert("plain"), {"apns-collapse-id": "score"})],
        "builtin": [(alert("builtin"), {})] * 5,
        "webhook": [(alert("webhook"), {})] * 5,
        "exec": [(alert("exec"), {})] * 3 + [(alert("exec", "crash-medium"), {}), (alert("exec", "crash-slow"), {})],
    }
    plan = []
    for index, device in enumerate(devices):
        kind = kinds[index % len(kinds)]
        plan += [{"device": device, "topic": APPS[kind], "payload": payload, "headers": headers}
                 for payload, headers in entries[kind]]
    plan_path = os.path.join(work, "plan.json")
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    return config_path, plan_path


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def stored_notifications(server: Server) -> dict[str, list[bool]]:
    """apns-id → the `final` flag of each record with that id."""
    records: dict[str, list[bool]] = collections.defaultdict(list)
    offset = 0
    while True:
        _, page = server.get(f"/api/v1/notifications?limit=1000&offset={offset}")
        for record in page["notifications"]:
            records[record["apnsId"]].append(record["final"])
        if len(page["notifications"]) < 1000:
            return records
        offset += len(page["notifications"])


def main() -> int:
    parser = argparse.ArgumentParser(description="kill -9 rounds under mixed load")
    parser.add_argument("--binary", required=True)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--rate", type=float, default=300, help="pushes per second (both pushers together)")
    parser.add_argument("--devices", type=int, default=40)
    parser.add_argument("--min-load", type=float, default=0.3, help="seconds of load before a kill, at least")
    parser.add_argument("--max-load", type=float, default=5, help="seconds of load before a kill, at most")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (data, logs)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"crash rounds: {args.rounds} rounds, seed {args.seed}, {args.rate:g} pushes/s, {args.devices} devices",
          flush=True)

    work = tempfile.mkdtemp(prefix="crash-rounds-")
    data = os.path.join(work, "data")
    os.makedirs(data)
    secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    receivers = Receivers(secret, rng.randrange(1 << 30))
    devices = ["%064x" % rng.getrandbits(256) for _ in range(args.devices)]
    config, plan = write_setup(os.path.abspath(args.binary), work, receivers.port, secret, devices)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = Server(os.path.abspath(args.binary), config, data, port, work)
    readers = [EventReader(port), EventReader(port, "?type=notification.displayed")]
    failures: list[str] = []
    acknowledged: set[str] = set()
    totals = collections.Counter()
    print("round  load s  acked  ext. running at kill  survivors  integrity  restart s  final after s  "
          "webhook after s", flush=True)
    try:
        server.start()
        for reader in readers:
            reader.start()
        for round_number in range(1, args.rounds + 1):
            token = subprocess.run([server.binary, "token", "--config", config], check=True, capture_output=True,
                                   text=True).stdout.strip()
            pushers = [subprocess.Popen(
                [sys.executable, os.path.join(HERE, "crash_pusher.py"), "--port", str(port), "--token", token,
                 "--plan", plan, "--rate", str(args.rate / 2), "--window", "50", "--seed", str(rng.randrange(1 << 30))],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
            load = rng.uniform(args.min_load, args.max_load)
            time.sleep(load)

            crashes = 2 if rng.random() < 0.25 else 1   # sometimes a second crash while the restart recovers
            survivors, running, problems, restart = 0, 0, [], 0.0
            for crash in range(crashes):
                watched = guardians(server.process.pid)
                running += len(extension_processes(data))
                server.kill()
                if crash == 0:
                    for pusher in pushers:
                        out, _ = pusher.communicate(timeout=30)
                        acknowledged.update(out.split())
                # The kernel and the guardian end every extension process at once; allow a moment.
                wait_for(lambda: not extension_processes(data) and not any(alive(p) for p in watched), 2)
                left = extension_processes(data) + [p for p in watched if alive(p)]
                survivors += len(left)
                if left:
                    failures.append(f"round {round_number}: processes survived the kill: {left}")
                problems += integrity(data, work)
                restart = server.start()
                if crash + 1 < crashes:
                    time.sleep(rng.uniform(0, 0.3))
            failures += [f"round {round_number}: {p}" for p in problems]

            # Every acknowledged push is there once and final.
            began = time.monotonic()
            status, _ = server.get(f"/api/v1/notifications/wait?count={len(acknowledged)}&timeout=30", timeout=40)
            missing, repeated = acknowledged, []

            def all_final() -> bool:
                nonlocal missing, repeated
                records = stored_notifications(server)
                missing = {a for a in acknowledged if records.get(a) != [True]}
                repeated = [a for a in acknowledged if len(records.get(a, [])) > 1]
                return not missing
            wait_for(all_final, 30)
            final_after = time.monotonic() - began
            if missing:
                failures.append(f"round {round_number}: {len(missing)} acknowledged pushes missing, repeated or "
                                f"not final (wait answered {status}), e.g. {sorted(missing)[:3]}; repeated {repeated[:3]}")

            # The readers saw each acknowledged push's acceptance and final event; the webhook got every event.
            def readers_caught_up() -> bool:
                with readers[0].lock:
                    return all("push.accepted" in readers[0].by_apns_id.get(a, ()) and
                               FINAL_EVENTS & readers[0].by_apns_id.get(a, set()) for a in acknowledged)
            if not wait_for(readers_caught_up, 30):
                failures.append(f"round {round_number}: the event stream lacks an acknowledged push's events")
            began = time.monotonic()

            def webhook_caught_up() -> bool:
                with readers[0].lock:
                    seen = set(readers[0].seen)
                with receivers.lock:
                    return seen <= receivers.delivered
            if not wait_for(webhook_caught_up, 60):
                with readers[0].lock, receivers.lock:
                    lacking = sorted(readers[0].seen - receivers.delivered)
                failures.append(f"round {round_number}: {len(lacking)} events never reached the webhook, "
                                f"e.g. {lacking[:5]}")
            webhook_after = time.monotonic() - began
            with receivers.lock:
                lacking = [a for a in acknowledged if "push.accepted" not in receivers.by_apns_id.get(a, ())
                           or not FINAL_EVENTS & receivers.by_apns_id.get(a, set())]
            if lacking:
                failures.append(f"round {round_number}: the webhook lacks events of {len(lacking)} acknowledged "
                                f"pushes, e.g. {lacking[:3]}")

            totals["crashes"] += crashes
            totals["extension processes running at a kill"] += running
            totals["survivors"] += survivors
            print(f"{round_number:5}  {load:6.1f}  {len(acknowledged):5}  {running:20}  {survivors:9}  "
                  f"{'ok' if not problems else 'FAILED':>9}  {restart:9.2f}  {final_after:13.1f}  "
                  f"{webhook_after:15.1f}" + ("  (two crashes)" if crashes == 2 else ""), flush=True)

        outcomes = collections.Counter()
        offset = 0
        while True:
            _, page = server.get(f"/api/v1/notifications?limit=1000&offset={offset}")
            outcomes.update(r.get("outcome", r["status"]) for r in page["notifications"])
            if len(page["notifications"]) < 1000:
                break
            offset += len(page["notifications"])
        server.process.send_signal(signal.SIGTERM)
        if server.process.wait(timeout=30) != 0:
            failures.append(f"the final SIGTERM exited {server.process.returncode}")
        failures += [f"after the rounds: {p}" for p in integrity(data, work)]
    except Exception as error:  # report what was found so far
        failures.append(f"stopped: {error!r}")
        if server.process and server.process.poll() is None:
            server.process.kill()
        outcomes = collections.Counter()
    for reader in readers:
        reader.stopping = True
        failures += reader.out_of_order[:5]

    print()
    print(f"crashes (kill -9):                         {totals['crashes']} in {args.rounds} rounds")
    print(f"pushes acknowledged (200), all checked:    {len(acknowledged)}")
    print(f"outcomes in the store:                     " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    print(f"extension processes running at the kills:  {totals['extension processes running at a kill']}")
    print(f"processes surviving a kill:                {totals['survivors']}")
    print(f"events seen by the SSE reader:             {len(readers[0].seen)} "
          f"({readers[0].connections} connections, {len(readers[0].out_of_order)} out of order)")
    print(f"webhook requests:                          {receivers.requests} ({receivers.failed_on_purpose} answered "
          f"500 and {receivers.dropped_on_purpose} dropped on purpose, {receivers.repeats} repeats of delivered "
          f"events, {receivers.invalid} badly signed)")
    print(f"webhook extension requests:                {receivers.extension_requests}")
    if receivers.invalid:
        failures.append(f"{receivers.invalid} webhook requests were not correctly signed")
    if args.keep or failures:
        print(f"work directory (kept): {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"\nFAILED ({len(failures)}):")
        for failure in failures:
            print("  " + failure)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
