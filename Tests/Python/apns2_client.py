#!/usr/bin/env python3
"""Token pushes over TLS with the real PyAPNs2-family client `apns2-up` (PyPI), which signs `"iat": time.time()`.

Used by Tests/ServerTests/PyAPNs2ClientTests.swift (issue #12, item 1): Apple accepts the fractional `iat` these
clients send, so the sandbox must too.

    apns2_client.py --port P --ca CA.pem --key AuthKey.p8 --key-id KID --team-id TEAM --topic TOPIC \
                    --device HEX [--device HEX …]

The client's host and port are class attributes (SANDBOX_SERVER, ALTERNATIVE_PORT): a subclass points them at the
sandbox ("localhost", whose name the sandbox certificate carries), and the TLS context trusts the sandbox CA.
For each --device one push (alert "Hello") is sent with `send_notification_async` and its result read with
`get_notification_result`; prints one JSON line per device: {"device", "result", "timestamp"} — result is
"Success" or Apple's reason, timestamp the 410 timestamp when there is one.
"""
import argparse
import json
import ssl

from apns2.client import APNsClient
from apns2.credentials import TokenCredentials
from apns2.payload import Payload


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--device", action="append", required=True)
    args = parser.parse_args()

    class SandboxClient(APNsClient):
        SANDBOX_SERVER = "localhost"
        ALTERNATIVE_PORT = args.port

    credentials = TokenCredentials(auth_key_path=args.key, auth_key_id=args.key_id, team_id=args.team_id)
    context = ssl.create_default_context(cafile=args.ca)
    context.set_alpn_protocols(["h2"])
    # TokenCredentials takes no TLS context of its own; its base class keeps the one every connection uses.
    credentials._Credentials__ssl_context = context
    client = SandboxClient(credentials=credentials, use_sandbox=True, use_alternative_port=True)
    for device in args.device:
        stream = client.send_notification_async(device, Payload(alert="Hello"), topic=args.topic)
        result = client.get_notification_result(stream)
        timestamp = None
        if isinstance(result, tuple):
            result, timestamp = result
        print(json.dumps({"device": device, "result": result, "timestamp": timestamp}), flush=True)


main()
