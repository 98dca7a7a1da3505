#!/usr/bin/env python3
"""A provider token against the sandbox's virtual clock, with httpx (PyPI `httpx[http2]`) over h2c.

Used by Tests/ServerTests/VirtualClockTests.swift. On one HTTP/2 connection: a push with --token, then
`POST /api/v1/clock/advance {"seconds": --advance-seconds}`, then the same push again. Prints one JSON line:

    {"before": [200, null], "advance": 200, "after": [403, "ExpiredProviderToken"]}

    clock_token_probe.py --http-port P --token JWT --device HEX [--topic T] [--advance-seconds S]
"""
import argparse
import json

import httpx

parser = argparse.ArgumentParser()
parser.add_argument("--http-port", type=int, required=True)
parser.add_argument("--token", required=True)
parser.add_argument("--device", required=True)
parser.add_argument("--topic", default="com.example.app")
parser.add_argument("--advance-seconds", type=float, default=3601)
args = parser.parse_args()

base = f"http://127.0.0.1:{args.http_port}"
headers = {"authorization": f"bearer {args.token}", "apns-topic": args.topic, "apns-push-type": "alert"}
payload = {"aps": {"alert": "Hello"}}


def push(client):
    r = client.post(f"{base}/3/device/{args.device}", headers=headers, json=payload)
    reason = r.json().get("reason") if r.content else None
    return [r.status_code, reason]


with httpx.Client(http1=False, http2=True) as client:  # cleartext HTTP/2 (h2c, prior knowledge)
    before = push(client)
    advanced = client.post(f"{base}/api/v1/clock/advance", json={"seconds": args.advance_seconds})
    after = push(client)
print(json.dumps({"before": before, "advance": advanced.status_code, "after": after}), flush=True)
