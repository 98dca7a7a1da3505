"""Fixtures for the recipes: the sandbox's REST API, a reset before every test, and the backend under test.

    SANDBOX_API   the sandbox's REST API base, e.g. http://127.0.0.1:2196 (and APNS_* for backend.py)
"""

from __future__ import annotations

import os
import time

import httpx
import pytest

from backend import Backend


class Sandbox:
    def __init__(self, base: str) -> None:
        self.api = httpx.Client(base_url=base + "/api/v1", timeout=10)

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        response = self.api.request(method, path, json=body)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else {}

    def poll(self, path: str, done, timeout: float = 5) -> dict:
        """GET `path` until `done(answer)` (a record that is not final yet: `?wait=` waits for a final one)."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.call("GET", path)
            if done(answer) or time.monotonic() > deadline:
                return answer
            time.sleep(0.02)

    def fault(self, rule: dict) -> dict:
        return self.call("POST", "/faults", rule)

    def clock_ms(self) -> int:
        return self.call("GET", "/clock")["nowMilliseconds"]


@pytest.fixture
def sandbox() -> Sandbox:
    sandbox = Sandbox(os.environ["SANDBOX_API"])
    sandbox.call("POST", "/reset")  # every test starts from the configuration's seed: no faults, real time
    return sandbox


@pytest.fixture
def backend(sandbox: Sandbox) -> Backend:
    # iat from the sandbox's clock, so that tokens stay valid when a test moves virtual time.
    return Backend(now=lambda: sandbox.clock_ms() / 1000)
