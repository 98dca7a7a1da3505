#!/usr/bin/env python3
"""Pushes with the real `kalyke-apns` client (PyPI), unmodified, whose tokens carry `"iat"` as a JSON string.

Used by Tests/ServerTests/KalykeClientTests.swift (issue #32, item 2): kalyke signs `"iat": str(int(now))` in
every release since 2022 and works against APNs, so the sandbox must accept it.

    kalyke_client.py --port P --ca CA.pem --key AuthKey.p8 --key-id KID --team-id TEAM --topic TOPIC \
                     --device HEX [--bad-device TEXT] [--cert PEM --cert-key PEM]

kalyke has no host or port option: every client posts to `https://api.sandbox.push.apple.com/3/device/…`
(its `_base_url` property), through an httpx2 `AsyncClient(http2=True)` it builds per message. A subclass
points `_base_url` at the sandbox (`https://localhost:P`, a name the sandbox certificate carries); the sandbox
CA is trusted through SSL_CERT_FILE, which httpx2's default TLS context reads (also for the certificate
client's `httpx2.create_ssl_context()`). ALPN offers h2 as with Apple.

Cases, one JSON line each: {"case", "result", "apns_id", "iat_type", "iat"} — result "Success" or the name of the
kalyke exception (kalyke raises the class named by Apple's reason, e.g. BadDeviceToken); iat_type the JSON type
("string", "number", …) of the `iat` claim of the token kalyke put in the authorization header of the client it
built for the push (read from that client's headers, its claims part decoded), and iat its value; both null
without a token (the certificate case):
- token: ApnsClient, an alert (Payload with a PayloadAlert) to --device;
- bad-device: the same client to --bad-device;
- live-activity: LiveActivityClient, a LiveActivityPayload update with content-state to --device, topic
  TOPIC.push-type.liveactivity;
- certificate (with --cert): VoIPCertificateClient, a VoIP push with the client certificate, topic TOPIC.voip.
"""
import argparse
import asyncio
import base64
import json
import os
import sys
import warnings

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--ca", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--key-id", required=True)
parser.add_argument("--team-id", required=True)
parser.add_argument("--topic", required=True)
parser.add_argument("--device", required=True)
parser.add_argument("--bad-device", default="not-a-device-token")
parser.add_argument("--cert")
parser.add_argument("--cert-key")
args = parser.parse_args()

# Before kalyke (and httpx2) build any TLS context.
os.environ["SSL_CERT_FILE"] = args.ca

from kalyke import (  # noqa: E402
    ApnsClient,
    ApnsConfig,
    LiveActivityApnsConfig,
    LiveActivityClient,
    LiveActivityEvent,
    LiveActivityPayload,
    Payload,
    PayloadAlert,
    VoIPApnsConfig,
    VoIPCertificateClient,
)
from kalyke.exceptions import ApnsProviderException  # noqa: E402

BASE = f"https://localhost:{args.port}"


# The authorization header of each httpx2 client kalyke built (None without one), in order.
AUTHORIZATIONS = []


def at_sandbox(cls):
    """`cls` with its Apple URL replaced by the sandbox's, and the authorization of each client it builds noted;
    everything else is kalyke's own."""

    def _init_client(self, apns_config):
        client = cls._init_client(self, apns_config=apns_config)
        AUTHORIZATIONS.append(client.headers.get("authorization"))
        return client

    return type("Sandbox" + cls.__name__, (cls,), {"_base_url": property(lambda self: BASE), "_init_client": _init_client})


JSON_TYPES = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null", list: "array", dict: "object"}


def issued_at(authorization):
    """(JSON type, value) of the `iat` claim of `bearer <JWT>`, or (None, None) without a token."""
    if not authorization:
        return None, None
    claims_part = authorization.split()[-1].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(claims_part + "=" * (-len(claims_part) % 4)))
    if "iat" not in claims:
        return "missing", None
    return JSON_TYPES.get(type(claims["iat"]), type(claims["iat"]).__name__), claims["iat"]


async def attempt(name, send):
    built = len(AUTHORIZATIONS)
    try:
        apns_id = await send()
        result = "Success"
    except ApnsProviderException as error:
        apns_id, result = None, type(error).__name__
    iat_type, iat = issued_at(AUTHORIZATIONS[-1] if len(AUTHORIZATIONS) > built else None)
    print(json.dumps({"case": name, "result": result, "apns_id": apns_id, "iat_type": iat_type, "iat": iat}), flush=True)


async def main():
    token = {"use_sandbox": True, "team_id": args.team_id, "auth_key_id": args.key_id, "auth_key_filepath": args.key}
    client = at_sandbox(ApnsClient)(**token)
    alert = Payload(alert=PayloadAlert(title="Hello", body="from kalyke-apns"), badge=1, sound="default")
    config = ApnsConfig(topic=args.topic)
    await attempt("token", lambda: client.send_message(device_token=args.device, payload=alert, apns_config=config))
    await attempt("bad-device", lambda: client.send_message(device_token=args.bad_device, payload=alert, apns_config=config))

    live = at_sandbox(LiveActivityClient)(**token)
    update = LiveActivityPayload(
        alert=PayloadAlert(title="Delivery", body="Your order is on its way"),
        event=LiveActivityEvent.UPDATE, content_state={"status": "on the way", "progress": 0.5})
    live_config = LiveActivityApnsConfig(topic=args.topic + ".push-type.liveactivity")
    await attempt("live-activity", lambda: live.send_message(device_token=args.device, payload=update, apns_config=live_config))

    if args.cert:
        with warnings.catch_warnings():  # VoIPCertificateClient is deprecated (kalyke prefers .p8 keys), still shipped
            warnings.simplefilter("ignore", DeprecationWarning)
            voip = at_sandbox(VoIPCertificateClient)(use_sandbox=True, auth_key_filepath=args.cert, key_filepath=args.cert_key)
        voip_config = VoIPApnsConfig(topic=args.topic + ".voip")
        await attempt("certificate", lambda: voip.send_message(
            device_token=args.device, payload={"aps": {}, "caller": "Alice"}, apns_config=voip_config))


asyncio.run(main())
sys.exit(0)
