#!/usr/bin/env python3
"""The README's httpx example, parameterised: one token push over TLS (HTTP/2 via ALPN) and one over h2c.

Used by Tests/ServerTests/HTTPXClientTests.swift. Prints "<http_version> <status> <apns-id>" per push.

    httpx_client.py --token JWT --tls-port P --http-port Q --ca CA.pem --device HEX [--topic T]
"""
import argparse
import ssl

import httpx

parser = argparse.ArgumentParser()
parser.add_argument("--token", required=True)
parser.add_argument("--tls-port", type=int, required=True)
parser.add_argument("--http-port", type=int, required=True)
parser.add_argument("--ca", required=True)
parser.add_argument("--device", required=True)
parser.add_argument("--topic", default="com.example.app")
args = parser.parse_args()

headers = {"authorization": f"bearer {args.token}", "apns-topic": args.topic, "apns-push-type": "alert"}
path, payload = "/3/device/" + args.device, {"aps": {"alert": "Hello"}}
with httpx.Client(http2=True, verify=ssl.create_default_context(cafile=args.ca)) as client:
    r = client.post(f"https://localhost:{args.tls_port}" + path, headers=headers, json=payload)
    print(r.http_version, r.status_code, r.headers.get("apns-id"), flush=True)
with httpx.Client(http1=False, http2=True) as client:  # cleartext HTTP/2 (h2c, prior knowledge)
    r = client.post(f"http://localhost:{args.http_port}" + path, headers=headers, json=payload)
    print(r.http_version, r.status_code, r.headers.get("apns-id"), flush=True)
