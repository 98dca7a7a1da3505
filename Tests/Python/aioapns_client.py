#!/usr/bin/env python3
"""Sends pushes to APNs Sandbox with the real `aioapns` client (https://github.com/Fatal1ty/aioapns).

It sends K alert pushes concurrently (asyncio.gather, at most C in flight), each with its own
`notification_id` (a uuid4, sent as `apns-id`), and prints one line of JSON on stdout:

    {"sent": 500, "results": {"200": 500}, "apns_ids_echoed": true, "elapsed_ms": 812,
     "connections": 1, "max_concurrent_streams": [1, 1000], "stream_resets": 0, "goaways": 0}

`results` counts outcomes as "STATUS" or "STATUS:Reason" (e.g. "403:InvalidProviderToken").
`apns_ids_echoed` is true when every response carried an `apns-id` header equal to the one its request
sent (checked on the raw HTTP/2 responses, and on the ids aioapns hands back). The other keys are
diagnostics taken from the client's HTTP/2 connections: how many aioapns opened, the
SETTINGS_MAX_CONCURRENT_STREAMS values the server advertised (in order, all connections), and the
RST_STREAM and GOAWAY frames received (aioapns does not handle RST_STREAM: a reset request never
completes, so it ends in the timeout below).

Exit status: 0 when the run completed; 2 when --expect-status was given and an outcome is not among
the expected ones or the apns-ids were not echoed; 1 on a crash or when the whole run takes longer
than --timeout (default 30 s), with a message (and the counts so far) on stderr.

How aioapns is pointed at the sandbox (aioapns 4.0; see Tests/Python/requirements.txt):

- Host and port are class attributes of the protocol classes in `aioapns.connection`:
  `APNS_SERVER` on `APNsDevelopmentClientProtocol` ("api.development.push.apple.com", chosen when
  `use_sandbox=True`) and `APNsProductionClientProtocol` ("api.push.apple.com"), and `APNS_PORT` (443)
  on their base `APNsTLSClientProtocol`. The connection pool (`APNs(...).pool`) keeps the chosen class
  in `pool.protocol_class` and connects to `protocol_class.APNS_SERVER:APNS_PORT`; the same
  `APNS_SERVER` is the TLS server name and the request's `host` header (aioapns sends `host`, not
  `:authority`). This script subclasses the chosen class with `APNS_SERVER = --server-name` and
  `APNS_PORT = --port` and assigns it to `pool.protocol_class`. When --server-name differs from --host
  (e.g. `--server-name api.push.apple.com` to reach the sandbox's production environment, which it
  picks from the host name), it also replaces the pool's `_create_connection` so that it connects to
  --host while keeping the server name for SNI, certificate verification and the `host` header.
- Trust: the pool builds `ssl.create_default_context()` unless it is given one; `APNs(ssl_context=...)`
  accepts one, so the script passes `ssl.create_default_context(cafile=--cafile)`. That context offers
  no ALPN, exactly like aioapns's default, so the server must speak HTTP/2 without ALPN. (Setting
  `SSL_CERT_FILE=ca.pem` in the environment also works, since the default context loads the default
  verify paths, but it replaces the system trust store for the whole process.)
- Key: aioapns 4.0 takes the .p8 key's *contents* (`key=`), not its path, and signs ES256 JWTs with
  PyJWT (which needs `cryptography`). --wrong-key generates a fresh P-256 key with `cryptography`
  and signs with it under the same key id and team, so the server must answer 403
  InvalidProviderToken.
- Client certificates: `--client-cert PEM [--client-key PEM]` uses aioapns's certificate pool
  (`client_cert=`), which wants certificate and key in one file; with --client-key the two are joined
  into a temporary file.

Examples (server: `apns-sandbox serve --tls-port 2197`, CA in data/ca.pem):

    python3 Tests/Python/aioapns_client.py --port 2197 --cafile data/ca.pem \
        --key-file config/keys/AuthKey_DEMOKEY123.p8 --key-id DEMOKEY123 --team-id DEMOTEAM01 \
        --topic com.example.app --count 500 --concurrency 100 --random-tokens --expect-status 200
    ... --wrong-key --expect-status 403:InvalidProviderToken

Needs aioapns (pip install -r Tests/Python/requirements.txt; scripts/setup --test does it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import ssl
import sys
import tempfile
import time
import types
import uuid
from collections import Counter

try:
    import h2.events
    import h2.settings
    from aioapns import APNs, NotificationRequest, PushType
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
except ImportError as error:  # pragma: no cover - environment problem, reported plainly
    print(f"aioapns_client: missing Python package ({error}); run "
          "`python3 -m pip install -r Tests/Python/requirements.txt` or scripts/setup --test", file=sys.stderr)
    sys.exit(1)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Send pushes to APNs Sandbox with the real aioapns client")
    p.add_argument("--host", default="127.0.0.1", help="address to connect to (default 127.0.0.1)")
    p.add_argument("--port", type=int, required=True, help="the sandbox's TLS port")
    p.add_argument("--server-name", help="TLS server name and `host` header (default: --host, or "
                   "api.push.apple.com with --production); the sandbox picks the environment from it")
    p.add_argument("--production", action="store_true",
                   help="use aioapns's production class (use_sandbox=False) and name api.push.apple.com")
    p.add_argument("--cafile", required=True, help="PEM CA to trust (the sandbox's DATA_DIR/ca.pem)")
    auth = p.add_argument_group("authentication (provider token, or client certificate)")
    auth.add_argument("--key-file", help="the .p8 signing key (e.g. config/keys/AuthKey_DEMOKEY123.p8)")
    auth.add_argument("--key-id", help="key id (JWT kid)")
    auth.add_argument("--team-id", help="team id (JWT iss)")
    auth.add_argument("--wrong-key", action="store_true",
                      help="sign with a freshly generated P-256 key instead of --key-file (same kid/iss)")
    auth.add_argument("--client-cert", help="client certificate PEM (with its key, or give --client-key)")
    auth.add_argument("--client-key", help="client certificate's private key PEM")
    p.add_argument("--topic", help="apns-topic (required with a provider token)")
    p.add_argument("--count", type=int, default=1, help="pushes to send (default 1)")
    p.add_argument("--concurrency", type=int, default=1, help="pushes in flight at once (default 1)")
    p.add_argument("--token", help="device token (64 hex); with --random-tokens, a prefix")
    p.add_argument("--random-tokens", "--token-prefix-random", dest="random_tokens", action="store_true",
                   help="send each push to a fresh random 64-hex token (starting with --token if given)")
    p.add_argument("--push-type", default="alert", choices=[t.value for t in PushType],
                   help="apns-push-type (default alert)")
    p.add_argument("--max-connections", type=int, default=10, help="aioapns max_connections (default 10)")
    p.add_argument("--expect-status", action="append", default=[], metavar="STATUS[:Reason]",
                   help="allowed outcome(s), repeatable or comma-separated (e.g. 200, 403:InvalidProviderToken);"
                        " exit 2 if any other outcome occurs or apns-ids were not echoed")
    p.add_argument("--timeout", type=float, default=30.0, help="overall timeout in seconds (default 30)")
    p.add_argument("--verbose", action="store_true", help="aioapns debug logging on stderr")
    args = p.parse_args(argv)

    if args.client_cert:
        if args.key_file or args.wrong_key:
            p.error("give either --client-cert or --key-file/--wrong-key, not both")
    else:
        if not (args.key_file or args.wrong_key) or not args.key_id or not args.team_id or not args.topic:
            p.error("provider-token auth needs --key-file (or --wrong-key), --key-id, --team-id and --topic")
    if args.count < 1 or args.concurrency < 1:
        p.error("--count and --concurrency must be at least 1")
    if not args.random_tokens and not args.token:
        p.error("give --token, or --random-tokens")
    if args.token and (len(args.token) > 64 or (not args.random_tokens and len(args.token) != 64)):
        p.error("--token must be 64 hex characters (or a shorter prefix with --random-tokens)")
    if args.server_name is None:
        args.server_name = "api.push.apple.com" if args.production else args.host
    args.expect_status = [s.strip() for value in args.expect_status for s in value.split(",") if s.strip()]
    return args


class Stats:
    """What the HTTP/2 connections saw, gathered by the protocol subclass below."""

    def __init__(self) -> None:
        self.connections = 0
        self.max_concurrent_streams: list[int] = []
        self.sent_ids: list[str] = []  # apns-id of every request, as sent
        self.echoed_ids: list[str] = []  # apns-id header of every response, in arrival order
        self.stream_resets: list[tuple[int, int]] = []  # (stream id, error code)
        self.goaways: list[tuple[int, int]] = []  # (error code, last stream id)


def make_protocol_class(base: type, server_name: str, port: int, stats: Stats) -> type:
    """Subclass of aioapns's protocol class aimed at the sandbox, recording what the server sends."""

    class SandboxProtocol(base):  # type: ignore[misc, valid-type]
        APNS_SERVER = server_name
        APNS_PORT = port

        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            stats.connections += 1
            receive = self.conn.receive_data

            def tee(data: bytes):  # look at the events aioapns is about to handle, without changing them
                events = receive(data)
                for event in events:
                    if isinstance(event, h2.events.ResponseReceived):
                        headers = {bytes(k): bytes(v) for k, v in event.headers}
                        stats.echoed_ids.append(headers.get(b"apns-id", b"").decode())
                    elif isinstance(event, h2.events.RemoteSettingsChanged):
                        for setting in event.changed_settings.values():
                            if setting.setting == h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS:
                                stats.max_concurrent_streams.append(setting.new_value)
                    elif isinstance(event, h2.events.StreamReset):
                        stats.stream_resets.append((event.stream_id, int(event.error_code)))
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        stats.goaways.append((int(event.error_code), event.last_stream_id))
                return events

            self.conn.receive_data = tee

    return SandboxProtocol


def point_at_sandbox(client: APNs, args: argparse.Namespace, stats: Stats) -> None:
    pool = client.pool
    pool.protocol_class = make_protocol_class(pool.protocol_class, args.server_name, args.port, stats)
    if args.server_name != args.host:
        # Connect to --host but keep the server name for SNI, verification and the host header.
        async def _create_connection(self, protocol_factory):
            _, protocol = await self.loop.create_connection(
                protocol_factory=protocol_factory, host=args.host, port=self.protocol_class.APNS_PORT,
                ssl=self.ssl_context, server_hostname=self.protocol_class.APNS_SERVER)
            return protocol

        pool._create_connection = types.MethodType(_create_connection, pool)


def make_client(args: argparse.Namespace, ssl_context: ssl.SSLContext, temp_files: list[str]) -> APNs:
    common = dict(topic=args.topic, max_connections=args.max_connections, use_sandbox=not args.production,
                  ssl_context=ssl_context, err_func=ignore_error)
    if args.client_cert:
        cert_file = args.client_cert
        if args.client_key:
            with open(args.client_cert) as cert, open(args.client_key) as key:
                joined = cert.read().rstrip("\n") + "\n" + key.read()
            fd, cert_file = tempfile.mkstemp(prefix="aioapns-client-", suffix=".pem")
            with os.fdopen(fd, "w") as out:
                out.write(joined)
            temp_files.append(cert_file)
        return APNs(client_cert=cert_file, **common)
    if args.wrong_key:
        key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    else:
        with open(args.key_file) as f:
            key = f.read()
    return APNs(key=key, key_id=args.key_id, team_id=args.team_id, **common)


async def ignore_error(request, result) -> None:
    """err_func: keeps aioapns from logging every non-200 as an error; outcomes are counted instead."""


def device_token(args: argparse.Namespace) -> str:
    if not args.random_tokens:
        return args.token.lower()
    prefix = (args.token or "").lower()
    return prefix + secrets.token_hex(32)[: 64 - len(prefix)]


async def run(args: argparse.Namespace, stats: Stats, results: Counter, mismatched: list) -> None:
    ssl_context = ssl.create_default_context(cafile=args.cafile)
    temp_files: list[str] = []
    try:
        client = make_client(args, ssl_context, temp_files)  # inside the loop: the pool grabs the running loop
        point_at_sandbox(client, args, stats)
        semaphore = asyncio.Semaphore(args.concurrency)
        push_type = PushType(args.push_type)

        async def send(i: int) -> None:
            request = NotificationRequest(
                device_token=device_token(args),
                message={"aps": {"alert": {"title": "aioapns", "body": f"push {i + 1} of {args.count}"}}},
                notification_id=str(uuid.uuid4()),
                push_type=push_type,
            )
            async with semaphore:
                stats.sent_ids.append(request.notification_id)
                result = await client.send_notification(request)
            key = result.status if not result.description else f"{result.status}:{result.description}"
            results[key] += 1
            if result.notification_id != request.notification_id:
                mismatched.append((request.notification_id, result.notification_id))

        try:
            await asyncio.gather(*(send(i) for i in range(args.count)))
        finally:
            client.pool.close()
            await asyncio.sleep(0)  # let the transports start closing
    finally:
        for path in temp_files:
            os.unlink(path)


class OnceFilter(logging.Filter):
    """Lets a log message that starts with `prefix` through once (aioapns repeats it every 10 ms)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix, self.seen = prefix, False

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith(self.prefix):
            return True
        seen, self.seen = self.seen, True
        return not seen


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("aioapns").addFilter(OnceFilter("Pool is completely busy"))
    stats, results, mismatched = Stats(), Counter(), []
    started = time.monotonic()

    def partial() -> str:
        return (f"results so far {dict(results)}, connections {stats.connections}, "
                f"max_concurrent_streams {stats.max_concurrent_streams}, resets {stats.stream_resets[:5]}, "
                f"goaways {stats.goaways}")

    try:
        asyncio.run(asyncio.wait_for(run(args, stats, results, mismatched), args.timeout))
    except asyncio.TimeoutError:
        print(f"aioapns_client: timed out after {args.timeout:g} s; {partial()}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 - any crash is exit 1 with the reason
        print(f"aioapns_client: {type(error).__name__}: {error}; {partial()}", file=sys.stderr)
        return 1
    elapsed_ms = round((time.monotonic() - started) * 1000)

    sent = sum(results.values())
    echoed = (not mismatched and len(stats.echoed_ids) == len(stats.sent_ids) == sent
              and sorted(stats.echoed_ids) == sorted(stats.sent_ids))
    print(json.dumps({
        "sent": sent,
        "results": dict(sorted(results.items())),
        "apns_ids_echoed": echoed,
        "elapsed_ms": elapsed_ms,
        "connections": stats.connections,
        "max_concurrent_streams": stats.max_concurrent_streams,
        "stream_resets": len(stats.stream_resets),
        "goaways": len(stats.goaways),
    }))
    if args.expect_status:
        unexpected = set(results) - set(args.expect_status)
        if unexpected or not echoed:
            print(f"aioapns_client: unexpected outcomes {sorted(unexpected)}" if unexpected
                  else "aioapns_client: apns-ids not echoed", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
