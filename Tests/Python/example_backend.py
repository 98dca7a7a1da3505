"""Runs Examples/backend/send.py, unchanged, against a local sandbox instead of Apple's servers.

In Docker Compose, Apple's host names are aliases of the sandbox's container and it listens on 443. Here the
sandbox is a local process on another port, so this wrapper does what the compose network does: it answers
the client's own resolver (socket.getaddrinfo, which asyncio's create_connection calls) for Apple's names with
127.0.0.1 and the sandbox's TLS port. TLS is verified as in the container: SSL_CERT_FILE holds the sandbox CA,
and the certificate must be valid for the Apple name the client asked for (SNI and hostname check).

    SSL_CERT_FILE=data/ca.pem APNS_KEY_FILE=… APNS_KEY_ID=… APNS_TEAM_ID=… APNS_TOPIC=… \\
        python3 Tests/Python/example_backend.py --port 2197
"""
import argparse
import os
import runpy
import socket
import sys

APPLE_HOSTS = {'api.push.apple.com', 'api.sandbox.push.apple.com', 'api.development.push.apple.com'}
SENDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'Examples', 'backend', 'send.py')

parser = argparse.ArgumentParser()
parser.add_argument('--port', type=int, required=True, help="the sandbox's TLS port, standing in for 443")
options = parser.parse_args()

resolve = socket.getaddrinfo
asked = []


def apple_names_are_the_sandbox(host, port, *args, **kwargs):
    if host in APPLE_HOSTS:
        asked.append(f'{host}:{port}')
        assert int(port) == 443, f'the client asked for {host}:{port}, not the default port 443'
        return resolve('127.0.0.1', options.port, *args, **kwargs)
    return resolve(host, port, *args, **kwargs)


socket.getaddrinfo = apple_names_are_the_sandbox
try:
    runpy.run_path(SENDER, run_name='__main__')
finally:
    print(f'# resolved {", ".join(asked) or "nothing"}', file=sys.stderr, flush=True)
