"""Launch moto server (5.2.1) for this project's local runs and tests.

    .venv/bin/python packages/tools/src/emulator/launcher.py [--port 0] [--stock] [--exit-with-stdin]

(.venv holds requirements.txt; startEmulator() in emulator.ts makes it on first use.)

Prints exactly one JSON readiness line on stdout once the socket is listening:
    {"ready": true, "endpoint": "http://127.0.0.1:PORT", "mode": "patched"}
and serves until SIGTERM/SIGINT (or, with --exit-with-stdin, until its stdin
reaches EOF, i.e. the parent died even by SIGKILL).

Why a launcher of our own instead of plain `moto_server` -- measured gaps:

1. moto's DynamoDB backend is not safe under concurrent requests. Its
   TransactWriteItems backs up the whole table (deepcopy) before applying and,
   on cancellation, swaps that stale copy back in. Timeline of the lost write:

       t0  A: TransactWriteItems starts; deepcopy(table) -> snapshot S0
       t1  B: PutItem k=v (another item) commits -> HTTP 200 to B's caller
       t2  A: ConditionCheck fails -> table := S0  (k=v is gone)
       t3  B's caller later reads k -> not found, although it was acknowledged

   Measured: 4-5 of 300 concurrent rounds lost an acknowledged put. Even with
   the item-level rollback below, A's uncommitted writes would be visible to
   concurrent readers (no isolation), a concurrent write to an item A touches
   would be undone by A's rollback, and moto iterates/deep-copies dicts that
   other threads mutate ("dictionary changed size during iteration"). So every
   DynamoDB (and DynamoDB Streams) request, plus /moto-api/reset, runs under one
   lock: DynamoDB becomes serialisable, like the real service looks to a client.
   SQS gets a lock of its own (4. below); other services stay concurrent.

2. That whole-table deepcopy makes each transaction O(table size): ~4 ms on an
   empty table, ~90 ms at 2,000 items, ~430 ms at 10,000. item_rollback.py
   replaces it (in this process only; moto on disk is untouched) with an
   item-level undo log: O(actions). See that module and docs/emulator.md.

3. moto's SQS approximate counts walk every message of a queue and read the
   clock once or twice per message, and ReceiveMessage / SendMessage /
   GetQueueAttributes evaluate them several times per request (per returned
   message, even): about half of the emulator's CPU in a chaos run.
   hot_paths.py counts in one pass with one clock reading and memoises request
   routing; same answers as stock (sqs-differential.test.ts). The readiness
   line says whether it is installed ("hotPaths").

4. moto's SQS is not safe under concurrent requests either. ``delete_message``
   rebuilds the queue's message list and assigns it back: two deletes at once
   each rebuild from the same old list and the second assignment undoes the
   first delete, so an acknowledged delete is lost and the message comes back
   when its visibility ends; and two receives at once can both take the same
   visible message before either marks it received, and a send appended while
   a delete rebuilds the list is dropped with it. Measured (4 senders, 6
   receivers deleting, 2 attribute readers, 4,000 messages): 10-50 deleted
   messages left in flight per run, once an acknowledged send lost, and 1-4
   messages received twice on stock moto. So every SQS request also runs under a lock of its own (SQS and
   DynamoDB still overlap); a long poll waits with the lock released, so the
   sends it waits for can run (``packages/tools/test/integration/emulator/launcher.test.ts``).

5. moto's FIFO deduplication forgets a message as soon as it is deleted: it
   compares a new message's deduplication id with the messages still in the
   queue only. SQS keeps the id for five minutes after the send, whatever
   happened to the message since, which is what lets a re-send after a crash
   land once (the bridge re-forwards with the RocketMQ msgId as the id, and an
   orderly group deletes each message as it consumes it). Measured on stock
   moto: a re-forward of three deleted messages was delivered a second time,
   after the messages that followed them. ``remember_fifo_deduplication_ids``
   keeps each id for the window, per queue (per group under the
   ``messageGroup`` deduplication scope).

6. moto's server is werkzeug's development server, which answers every
   request with ``Connection: close`` and starts a thread per request: each SDK
   call opened a new TCP connection and a new thread, 56 % of the emulator's CPU
   in a chaos run (py-spy). The launcher serves the same app with cheroot
   (keep-alive, a thread pool).

7. moto's FilterLogEvents treats every JSON filter pattern (``{ $.key = "SO-1" }``)
   as unsupported and returns every event. ``log_filter_patterns.py`` applies the
   part of the syntax the project uses (``packages/tools/test/integration/emulator/log-filter-patterns.test.ts``).

--stock serves moto's own behaviour (no lock, no patch; the same HTTP server and
readiness protocol); the differential/timing tests compare against it.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback

from cheroot import wsgi

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hot_paths  # noqa: E402
import item_rollback  # noqa: E402
import log_filter_patterns  # noqa: E402

_dynamodb_lock = threading.Lock()


def serialise_dynamodb_actions() -> None:
    """Every DynamoDB and DynamoDB Streams action runs under the lock.

    The lock covers ``call_action``: authorisation, the backend call and the
    serialisation of its answer (which reads the stored items), i.e. everything
    that touches the backend. Flask's dispatch and the parsing of the request
    body happen before it and touch no backend state, so they run outside: the
    lock is held only for the work that must be serialised, which is what every
    queued DynamoDB request waits for.
    """
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    for handler in (DynamoHandler, DynamoDBStreamsHandler):
        stock = handler.call_action

        def call_action(self, _stock=stock):
            with _dynamodb_lock:
                return _stock(self)

        handler.call_action = call_action


_sqs_lock = threading.Lock()


def serialise_sqs_actions() -> None:
    """Every SQS action runs under its own lock, released while a long poll waits (see 4. above)."""
    from moto.sqs.models import Queue
    from moto.sqs.responses import SQSResponse

    stock_call = SQSResponse.call_action

    def call_action(self):
        with _sqs_lock:
            return stock_call(self)

    SQSResponse.call_action = call_action

    stock_wait = Queue.wait_for_messages

    def wait_for_messages(self, timeout):
        # Only called from ReceiveMessage, i.e. under the lock: a sender needs it to add the message waited for.
        _sqs_lock.release()
        try:
            return stock_wait(self, timeout)
        finally:
            _sqs_lock.acquire()

    Queue.wait_for_messages = wait_for_messages


def remember_fifo_deduplication_ids() -> None:
    """A FIFO queue drops a message whose deduplication id was sent in the last five minutes (see 5. above)."""
    from moto.sqs.models import DEDUPLICATION_TIME_IN_SECONDS, Queue

    stock_add = Queue.add_message

    def add_message(self, message):
        if not self.fifo_queue or not message.deduplication_id:
            return stock_add(self, message)
        # Called under the SQS lock (SendMessage/SendMessageBatch); a lock of its own for other callers.
        with _dedup_lock:
            seen = self.__dict__.setdefault("_deduplication_ids_sent", {})
            now = message.sent_timestamp
            window_ms = DEDUPLICATION_TIME_IN_SECONDS * 1000
            # Entries are only ever added, in send order: the expired ones are at the front.
            while seen:
                oldest = next(iter(seen))
                if now - seen[oldest] < window_ms:
                    break
                del seen[oldest]
            scope = message.group_id if self.attributes.get("DeduplicationScope") == "messageGroup" else None
            key = (scope, message.deduplication_id)
            if key in seen:
                return None
            seen[key] = now
        return stock_add(self, message)

    Queue.add_message = add_message


_dedup_lock = threading.Lock()


def serialise_reset(app):
    # A reset must not interleave with a transaction half-way through its undo log.
    def wrapped(environ, start_response):
        if not environ.get("PATH_INFO", "").startswith("/moto-api/reset"):
            return app(environ, start_response)
        with _dynamodb_lock:
            # Materialise the response while holding the lock.
            return list(app(environ, start_response))

    return wrapped


def close_after_crash(app):
    """An exception moto does not handle (a KeyError on an undefined placeholder, say) ends as a
    500 that says ``Connection: close``. Left to cheroot it is a bare 500 after which the server
    drops the connection silently, and a keep-alive client's next call on it fails
    ("socket hang up"): one emulator bug would fail an unrelated call.
    """

    def wrapped(environ, start_response):
        try:
            return app(environ, start_response)
        except Exception:
            traceback.print_exc()
            start_response("500 Internal Server Error", [("Content-Type", "application/x-amz-json-1.0"), ("Connection", "close")], sys.exc_info())
            return [b'{"__type": "InternalServerError", "message": "the emulator failed on this request (traceback on its stderr)"}']

    return wrapped


def http_server(host: str, port: int, app) -> wsgi.Server:
    """A keep-alive HTTP/1.1 server for the app (see 6. above).

    Threads: every request in progress holds one, and a ReceiveMessage long poll holds its
    thread for up to 20 s, so the pool must outnumber the pollers of the biggest local run
    (groups x consumers, plus the bridge, the run's own readers and a test's) by a margin.
    Idle connections stay open longer than any run lasts, and as many as the clients keep:
    a connection the server closes while a client reuses it fails that call.
    """
    server = wsgi.Server((host, port), app, numthreads=64, timeout=3600, shutdown_timeout=1)
    server.keep_alive_conn_limit = None
    return server


def _watch_stdin(stop: threading.Event) -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (OSError, ValueError):
        pass
    stop.set()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = any free port")
    parser.add_argument("--stock", action="store_true", help="plain moto: no lock, no patch")
    parser.add_argument("--exit-with-stdin", action="store_true",
                        help="exit when stdin reaches EOF (parent process gone)")
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("the emulator binds to loopback only")

    app = DomainDispatcherApplication(create_backend_app)
    mode = "stock"
    hot = False
    if not args.stock:
        mode = "patched" if item_rollback.install() else "locked"
        hot = hot_paths.install()
        log_filter_patterns.install()
        serialise_dynamodb_actions()
        serialise_sqs_actions()
        remember_fifo_deduplication_ids()
        app = serialise_reset(app)
    server = http_server(args.host, args.port, close_after_crash(app))

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_with_stdin:
        threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    server.prepare()  # binds, so the port is known before the readiness line
    serving = threading.Thread(target=server.serve, daemon=True)
    serving.start()

    port = server.bind_addr[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(json.dumps({"ready": True, "endpoint": f"http://{host}:{port}", "mode": mode, "hotPaths": hot}), flush=True)
    try:
        while not stop.wait(1.0):
            if not serving.is_alive():
                sys.exit("emulator: server thread died")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
