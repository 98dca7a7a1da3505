#!/usr/bin/env python3
"""Pushes to many new device tokens and, right after each 200, reads or changes that device through the REST API.

Used by Tests/ServerTests/DeviceRegistrationTests.swift (issue #12, item 2): a push's auto-registered device must be
visible to every API call made after the push's 200 — never a 404.

    new_tokens_probe.py --port P --token JWT [--count 20000] [--connections 16] [--topic com.example.app]
                        [--mode mixed|get|push] [--patch-every 10]

Each connection is a plain HTTP/1.1 keep-alive connection to the cleartext listener that alternates
POST /3/device/<new token> and, on a 200, GET or PATCH /api/v1/devices/<token> (in mixed mode every
--patch-every-th call is a PATCH, a durable write of its own; `push` sends no API calls, for timing).
Prints one JSON line: {"pushes", "pushFailures", "apiCalls", "missing", "firstMissing", "seconds"}.
"""
import argparse
import asyncio
import json
import os
import time


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return status, body


async def worker(args, tokens, totals):
    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    payload = b'{"aps":{"alert":"hi"}}'
    patch = b'{"locale":"fr_FR"}'
    try:
        for index, token in enumerate(tokens):
            writer.write(
                (f"POST /3/device/{token} HTTP/1.1\r\nhost: localhost\r\nauthorization: bearer {args.token}\r\n"
                 f"apns-topic: {args.topic}\r\ncontent-length: {len(payload)}\r\n\r\n").encode() + payload)
            status, _ = await read_response(reader)
            totals["pushes"] += 1
            if status != 200:
                totals["pushFailures"] += 1
                continue
            if args.mode == "push":
                continue
            if args.mode != "get" and index % args.patch_every == 0:
                writer.write(
                    (f"PATCH /api/v1/devices/{token} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                     f"content-length: {len(patch)}\r\n\r\n").encode() + patch)
            else:
                writer.write(f"GET /api/v1/devices/{token} HTTP/1.1\r\nhost: localhost\r\n\r\n".encode())
            status, body = await read_response(reader)
            totals["apiCalls"] += 1
            if status != 200:
                totals["missing"] += 1
                if totals["firstMissing"] is None:
                    totals["firstMissing"] = {"token": token, "status": status, "body": body.decode("utf-8", "replace")}
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--topic", default="com.example.app")
    parser.add_argument("--mode", choices=["mixed", "get", "push"], default="mixed")
    parser.add_argument("--patch-every", type=int, default=10, help="in mixed mode, every Nth API call is a PATCH")
    args = parser.parse_args()
    tokens = [os.urandom(32).hex() for _ in range(args.count)]
    totals = {"pushes": 0, "pushFailures": 0, "apiCalls": 0, "missing": 0, "firstMissing": None}
    started = time.monotonic()
    share = [tokens[i::args.connections] for i in range(args.connections)]
    await asyncio.gather(*(worker(args, part, totals) for part in share))
    totals["seconds"] = round(time.monotonic() - started, 3)
    print(json.dumps(totals))


asyncio.run(main())
