"""The recipes of docs/testing.md, run by the sandbox's own test suite (Tests/ServerTests/TestingRecipesTests.swift)."""

from __future__ import annotations

DEVICE = "ab" * 32


def test_unregistered_token_is_deleted(sandbox, backend):
    """410 Unregistered: the backend must stop pushing to the token."""
    sandbox.fault({"match": {"deviceToken": DEVICE}, "action": {"reject": {"reason": "Unregistered"}}})
    backend.tokens.add(DEVICE)
    response = backend.send(DEVICE, "hello")
    assert response.status_code == 410 and response.json()["reason"] == "Unregistered"
    assert "timestamp" in response.json()
    assert DEVICE not in backend.tokens


def test_retries_through_a_short_outage(sandbox, backend):
    """Two 503s, then APNs is back: the backend retries and the push is delivered."""
    rule = sandbox.fault({"preset": "outage", "count": 2})
    response = backend.send(DEVICE, "retry me")
    assert response.status_code == 200 and backend.retries == 2
    assert sandbox.call("GET", f"/faults/{rule['id']}")["applied"] == 2
    record = sandbox.call("GET", f"/notifications/{response.headers['apns-id']}?wait=5")
    assert record["status"] == "displayed"


def test_stored_push_expires_while_the_device_is_offline(sandbox, backend):
    """Virtual time: a push stored for an offline device expires at its apns-expiration, with no waiting."""
    device = DEVICE  # the earlier tests' device, removed by the reset: created again, offline
    sandbox.call("POST", "/devices", {"token": device, "apps": [backend.topic], "online": False})
    sandbox.call("POST", "/clock/freeze")
    now = sandbox.clock_ms() // 1000
    response = backend.send(device, "too late", expiration=now + 60)
    assert response.status_code == 200
    apns_id = response.headers["apns-id"]
    assert sandbox.poll(f"/notifications/{apns_id}", lambda record: record["status"] != "accepted")["status"] == "stored"
    sandbox.call("POST", "/clock/advance", {"seconds": 61})
    sandbox.call("PATCH", f"/devices/{device}", {"online": True})
    assert sandbox.call("GET", f"/notifications/{apns_id}")["status"] == "expired"


def test_a_lost_notification_is_not_shown(sandbox, backend):
    """APNs said 200 but the phone never got it: what the backend's delivery receipts must cope with."""
    sandbox.fault({"count": 1, "action": {"lose": {}}})
    response = backend.send(DEVICE, "into the void")
    assert response.status_code == 200
    record = sandbox.call("GET", f"/notifications/{response.headers['apns-id']}?wait=5")
    assert record["status"] == "discarded" and record["faults"][0]["action"] == "lose"
