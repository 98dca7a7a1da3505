#!/usr/bin/env python3
"""A local HTTP server for media downloads in tests: serves files from --dir, optionally slowly.

Prints the port it listens on (one line, flushed), then `GET <path>` (flushed) as each request arrives, and
serves until killed. `--delay S` waits S seconds before answering each request (to outlast an extension's
budget); the request line is printed before the wait, so a test can tell the download has begun.

Usage: media_server.py --dir DIR [--delay SECONDS]
"""

import argparse
import functools
import http.server
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description="serve files for media downloads, optionally slowly")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
            print("GET %s" % self.path, flush=True)
            if args.delay > 0:
                time.sleep(args.delay)
            super().do_GET()

        def log_message(self, format: str, *arguments: object) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=args.dir))
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
