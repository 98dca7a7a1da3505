"""APNs Sandbox — what the Python benchmarks share (scripts/bench, scripts/bench-events); the bash ones share
scripts/lib/bench.sh. Imported after `sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))`."""
import http.client
import json
import os
import socket
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPIC = "com.example.app"


def free_port():
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_config(path, **sections):
    """Writes the configuration every benchmark runs: the demo team and key of config/keys, and "one stream until a
    valid provider token" switched off (h2load opens all its streams before it reads SETTINGS); `sections` adds
    top-level members (storage=…, extensions=…)."""
    config = {
        "apns": {"streamsBeforeAuthentication": 0},
        **sections,
        "teams": [{"teamID": "DEMOTEAM01", "apps": [TOPIC], "keys": [
            {"keyID": "DEMOKEY123", "privateKeyFile": os.path.join(ROOT, "config/keys/AuthKey_DEMOKEY123.p8")}]}],
    }
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def serve_command(binary, config, http_port, tls_port, data):
    """`apns-sandbox serve` on loopback with the given ports and data directory."""
    return [binary, "serve", "--config", config, "--host", "127.0.0.1", "--http-port", str(http_port),
            "--tls-port", str(tls_port), "--data-dir", data]


def wait_ready(process, http_port, log_name, started=None, path="/readyz", seconds=120, name="bench"):
    """Polls GET `path` until it answers 200; exits naming the log when the server ends first or after `seconds`.
    Returns the milliseconds it took since `started` (time.monotonic(); default: the call)."""
    started = time.monotonic() if started is None else started
    while time.monotonic() - started < seconds:
        if process.poll() is not None:
            raise SystemExit(f"{name}: the server exited ({process.returncode}); see {log_name}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=1)
            connection.request("GET", path)
            if connection.getresponse().status == 200:
                return (time.monotonic() - started) * 1000
        except OSError:
            pass
        time.sleep(0.002)
    raise SystemExit(f"{name}: the server did not get ready within {seconds} s; see {log_name}")
