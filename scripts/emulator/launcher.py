"""Launch moto server for this project's local runs and tests.

Why a launcher of our own instead of plain `moto_server`:
* moto's DynamoDB backend is not safe under concurrent requests: a cancelled
  TransactWriteItems restores a deep copy of the table and can erase writes that
  other requests committed in between. We serialise every DynamoDB request
  (other services stay concurrent).
* It binds to loopback on a free port and prints one JSON readiness line, so the
  caller never races the server start.
"""
from __future__ import annotations

import argparse
import json
import socket
import sys
import threading

from werkzeug.serving import make_server

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

_dynamodb_lock = threading.Lock()


def _is_dynamodb(environ) -> bool:
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    return target.startswith("DynamoDB_")


def serialise_dynamodb(app):
    def wrapped(environ, start_response):
        if not _is_dynamodb(environ):
            return app(environ, start_response)
        with _dynamodb_lock:
            # Materialise the response while holding the lock.
            return list(app(environ, start_response))

    return wrapped


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("the emulator binds to loopback only")
    app = serialise_dynamodb(DomainDispatcherApplication(create_backend_app))
    server = make_server(args.host, args.port, app, threaded=True)
    port = server.socket.getsockname()[1]
    print(json.dumps({"ready": True, "endpoint": f"http://{args.host}:{port}"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
