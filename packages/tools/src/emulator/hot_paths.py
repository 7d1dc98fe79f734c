"""Cheap SQS queue counts, request routing, update expressions and DynamoDB responses for moto 5.2.1
(launcher process only).

Why
---
Sampled during a 3,000-message chaos run (docs/emulator.md), about half of the
emulator's CPU went into one property, ``Queue.attributes``, which builds every
attribute of a queue, including the three approximate counts, each of them a
walk over every message of the queue that reads the UTC clock once or twice
*per message* (``Message.visible`` / ``Message.delayed`` call
``unix_time_millis()``, a datetime subtraction each time):

* ``ApproximateNumberOfMessages`` walks the queue calling ``visible`` and
  ``delayed`` (two clock readings a message), ``...NotVisible`` and
  ``...Delayed`` walk it again (one each): four clock readings per message
  every time ``attributes`` is evaluated;
* ``SQSBackend.get_queue_attributes`` evaluates ``queue.attributes`` three
  times per requested name (``name in queue.attributes``, then ``.get`` twice);
* ``ReceiveMessage`` calls ``is_message_valid_based_on_retention_period`` for
  *every message it returns*, which reads the retention period through
  ``get_queue_attributes`` -- three full ``attributes`` evaluations per
  returned message, to read one integer;
* ``SendMessage`` reads ``ContentBasedDeduplication`` through
  ``queue.attributes``: one evaluation per sent message.

So one ReceiveMessage of 10 messages on a queue holding 300 walked the queue
30 times and read the clock ~36,000 times.

What this patch does
--------------------
* ``Queue.attributes``: the three counts in ONE pass with ONE clock reading;
  every other attribute exactly as stock builds it, in the same order.
* ``Queue.messages`` (the visible, undelayed messages ReceiveMessage walks):
  one clock reading per call instead of two per message.
* the three ``approximate_number_of_messages*`` properties: one clock reading
  per call.
* ``SQSBackend.get_queue_attributes``: ``queue.attributes`` evaluated once.
* ``SQSBackend.is_message_valid_based_on_retention_period``: reads the
  queue's retention period directly.

The formulas are stock's, character for character (``visible`` is
``now > visible_at``, ``delayed`` is ``now < delayed_until``); the only
difference is *when* the clock is read: once per request instead of once per
message, so the three counts of one answer now describe one instant (stock
could count a message whose visibility ended between two of its walks in
none of them). Receive order, visibility, delays, receive counts, redrive to
the DLQ and FIFO group hold-back are untouched: ``receive_message``,
``send_message``, ``delete_message`` and ``change_message_visibility`` are
stock. ``packages/tools/test/integration/emulator/sqs-differential.test.ts`` runs the same
SQS calls against this and a stock moto and compares every answer.

Request routing
---------------
``DomainDispatcherApplication.get_backend_for_host`` decides which service
answers a request. For every request it tests ``host in
list_of_moto_modules()``, a generator that lists moto's package directory and
stats each of its ~200 entries, and it runs under the dispatcher's global
lock. Its answer depends on the host string alone (the directory and the URL
patterns do not change while the server runs), so it is memoised per host.

DynamoDB update expressions
---------------------------
``UpdateExpressionParser.make`` tokenises and parses an update expression into
an AST, twice per UpdateItem (the response layer checks the placeholders, the
backend validates and executes) and once per Update action of a transaction.
The AST depends on the string alone, and every consumer of it only reads it:
``find_clauses`` walks it, and the validators ``deepcopy`` it before they
resolve names, values and paths against the item. So parses are memoised per
expression string (a handful of distinct strings in this project's consumers);
an expression that fails to parse raises as before and is not cached.

The validators' ``deepcopy`` of that AST was then the single largest cost of
an UpdateItem: 400-650 us per call for this project's expressions, about a
fifth of the DynamoDB process's CPU in a chaos run (py-spy, docs/emulator.md).
A parsed AST holds only plain nodes (names, placeholders, operators; values
are put in by the validators, after the copy), so a memoised parse also keeps
its pickle, and ``Validator.__init__`` makes its working copy with
``pickle.loads`` (~3x faster than ``deepcopy``, same graph: pickle keeps
shared references and the parent links as ``deepcopy`` does). An AST that did
not come from the memo is deep-copied as before. ``launcher.test.ts``
("differential: UpdateItem") sends every kind of update expression twice to
this and to a stock moto and compares every answer and the items left.

DynamoDB responses
------------------
moto 5.2.1 serialises every response through botocore's shape model: each
attribute value of each returned item is an ``AttributeValue`` structure of ten
members (S, N, B, SS, NS, BS, M, L, NULL, BOOL), and the serializer looks each
member up through four alias providers before it finds the one that is set.
Reading the tables at the end of a 20,000-message chaos run (about 60,000 items)
took ~100 s of the DynamoDB process, three quarters of it there. Yet the
backend hands the serializer attribute values already in their wire form
(``{"S": "..."}``, from ``DynamoType.to_json``). So an ``AttributeValue`` that is
exactly that (one type key; S, N, BOOL, NULL, SS, NS, or M and L of such) is
written as it is; anything else (binary, which needs base64, or an unexpected
shape) goes through the stock serializer. The differential tests compare
whole responses, nested maps, lists and sets included, with stock moto.

Guard: each replaced function's stock source is hashed; if the installed moto
is not the 5.2.1 code this mirrors, nothing is patched (stderr says so) and
SQS keeps stock behaviour, only slower.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import pickle
import sys
import threading
from typing import Any, Callable

# sha256 of inspect.getsource(...) of each replaced function in moto 5.2.1.
EXPECTED_SOURCES = {
    "Queue.attributes": "40cb990b121628d535cecbcd0e0d333984024633b70a097489ae8611e1a59338",
    "Queue.messages": "03a531dbcbcf9aee2e61c7254c08946a499f5c57f2447a8f2e534aa85b067dea",
    "Queue.approximate_number_of_messages": "d357a9506a56d2f8f9f364aa1e0a4739182106db6dbcede0e0699c00d1406eec",
    "Queue.approximate_number_of_messages_not_visible": "5dbecc4dda174358d2aefa96e4b769def47fd6bb2c315241c451e8518c3fabab",
    "Queue.approximate_number_of_messages_delayed": "c3c1dadb0c42ed5f8f5e1fddc8384de67db2df9a4055504f10903bd0b55e8d2f",
    "SQSBackend.get_queue_attributes": "58417223da457b5a0aac5ccc31b6646ed9b22c3b276a0f0d9fd5f3f13bd797ec",
    "SQSBackend.is_message_valid_based_on_retention_period": "cca23b94a5f3af9d9c5af1c09ee5e615017bdf6bd032301cb321c06c7e595d4b",
    "DomainDispatcherApplication.get_backend_for_host": "1f41972c1e4e660fbf4e4ddfeeed2fdff56dc105a8f8e1bf015640f710ef511a",
    "UpdateExpressionParser.make": "2c00ed96d6e191f243b449166e75bfb38f307b2e19405bc0981847061e0dbee3",
    "BaseJSONSerializer._serialize_type_structure": "36873909cd0aeb4defa91cc9912c6e90a62d7d92ced6150ac7de92fd10a81967",
    "Validator.__init__": "9489b532dd0fb359e273711c1a67971f1b73af47ddbaa91868e9cc42a26ddbb3",
}


def _targets() -> dict[str, Callable[..., Any]]:
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser
    from moto.core.serialize import BaseJSONSerializer
    from moto.dynamodb.parsing.validators import Validator
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    from moto.sqs.models import Queue, SQSBackend

    return {
        "BaseJSONSerializer._serialize_type_structure": BaseJSONSerializer._serialize_type_structure,
        "UpdateExpressionParser.make": UpdateExpressionParser.make.__func__,
        "Validator.__init__": Validator.__init__,
        "Queue.attributes": Queue.attributes.fget,
        "Queue.messages": Queue.messages.fget,
        "Queue.approximate_number_of_messages": Queue.approximate_number_of_messages.fget,
        "Queue.approximate_number_of_messages_not_visible": Queue.approximate_number_of_messages_not_visible.fget,
        "Queue.approximate_number_of_messages_delayed": Queue.approximate_number_of_messages_delayed.fget,
        "SQSBackend.get_queue_attributes": SQSBackend.get_queue_attributes,
        "SQSBackend.is_message_valid_based_on_retention_period": SQSBackend.is_message_valid_based_on_retention_period,
        "DomainDispatcherApplication.get_backend_for_host": DomainDispatcherApplication.get_backend_for_host,
    }


def stock_source_digests() -> dict[str, str]:
    return {name: hashlib.sha256(inspect.getsource(fn).encode()).hexdigest() for name, fn in _targets().items()}


_COUNT_NAMES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


def _counts(queue: Any) -> tuple[int, int, int]:
    """(visible and not delayed, not visible, delayed) at one instant, in one pass."""
    from moto.sqs.models import unix_time_millis

    now = unix_time_millis()
    ready = not_visible = delayed = 0
    # A list snapshot: other request threads may append or replace the list meanwhile,
    # exactly as during stock's list comprehensions.
    for message in list(queue._messages):
        is_visible = now > message.visible_at
        is_delayed = now < message.delayed_until
        if is_visible and not is_delayed:
            ready += 1
        if not is_visible:
            not_visible += 1
        if is_delayed:
            delayed += 1
    return ready, not_visible, delayed


def _attributes(self: Any) -> dict[str, Any]:
    import json

    from moto.core.utils import camelcase_to_underscores

    counts = dict(zip(_COUNT_NAMES, _counts(self)))
    result: dict[str, Any] = {}

    for attribute in self.BASE_ATTRIBUTES:
        result[attribute] = counts[attribute] if attribute in counts else getattr(self, camelcase_to_underscores(attribute))

    if self.fifo_queue:
        for attribute in self.FIFO_ATTRIBUTES:
            result[attribute] = getattr(self, camelcase_to_underscores(attribute))

    if self.kms_master_key_id:
        for attribute in self.KMS_ATTRIBUTES:
            result[attribute] = getattr(self, camelcase_to_underscores(attribute))

    if self.policy:
        result["Policy"] = self.policy

    if self.redrive_policy:
        result["RedrivePolicy"] = json.dumps(self.redrive_policy)

    for key in result:
        if isinstance(result[key], bool):
            result[key] = str(result[key]).lower()

    return result


def _messages(self: Any) -> list[Any]:
    from moto.sqs.models import unix_time_millis

    now = unix_time_millis()
    return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]


def _get_queue_attributes(self: Any, queue_name: str, attribute_names: list[str]) -> dict[str, Any]:
    from moto.sqs.exceptions import InvalidAttributeName

    queue = self.get_queue(queue_name)
    if not attribute_names:
        return {}

    valid_names = ["All"] + queue.BASE_ATTRIBUTES + queue.FIFO_ATTRIBUTES + queue.KMS_ATTRIBUTES
    invalid_name = next((name for name in attribute_names if name not in valid_names), None)

    if invalid_name or invalid_name == "":
        raise InvalidAttributeName(invalid_name)

    current = queue.attributes
    if "All" in attribute_names:
        return current
    attributes = {}
    for name in attribute_names:
        if name in current and current.get(name) is not None:
            attributes[name] = current.get(name)
    return attributes


def _is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
    from moto.sqs.models import unix_time

    retention_period = self.get_queue(queue_name).message_retention_period
    retain_until = retention_period + message.sent_timestamp / 1000
    if retain_until <= unix_time():
        return False
    return True


def _memoised_backend_for_host(stock: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    answers: dict[Any, Any] = {}
    lock = threading.Lock()

    def get_backend_for_host(self: Any, host: Any) -> Any:
        key = (id(self), host)
        with lock:
            if key in answers:
                return answers[key]
        answer = stock(self, host)
        with lock:
            answers[key] = answer
        return answer

    return get_backend_for_host


# id(ast) -> (ast, its pickle) for every AST the memoised parser handed out; the tuple keeps the
# AST alive, so an id is never reused for another object while it is here.
_pristine: dict[int, tuple[Any, bytes]] = {}
_PRISTINE_LIMIT = 4096


def _memoised_update_expression_parse(stock: Callable[[Any, str], Any]) -> classmethod:
    @functools.lru_cache(maxsize=1024)
    def parsed(cls: Any, expression_str: str) -> Any:
        ast = stock(cls, expression_str)
        if len(_pristine) >= _PRISTINE_LIMIT:
            _pristine.clear()  # the ASTs still cached fall back to deepcopy: slower, same result
        _pristine[id(ast)] = (ast, pickle.dumps(ast, pickle.HIGHEST_PROTOCOL))
        return ast

    return classmethod(lambda cls, expression_str: parsed(cls, expression_str))


def _validator_init(self: Any, expression: Any, expression_attribute_names: Any, expression_attribute_values: Any, item: Any, table: Any) -> None:
    # Stock's body, but for the working copy of a memoised AST.
    self.expression_attribute_names = expression_attribute_names
    self.expression_attribute_values = expression_attribute_values
    self.item = item
    self.table = table
    self.processors = self.get_ast_processors()
    entry = _pristine.get(id(expression))
    self.node_to_validate = pickle.loads(entry[1]) if entry is not None and entry[0] is expression else copy.deepcopy(expression)


_WIRE_STRINGS = frozenset({"S", "N"})
_WIRE_BOOLEANS = frozenset({"BOOL", "NULL"})
_WIRE_SETS = frozenset({"SS", "NS"})


def _is_wire_attribute_value(value: Any) -> bool:
    """True if ``value`` is an AttributeValue exactly as the JSON wire carries it, binary excepted."""
    if type(value) is not dict or len(value) != 1:
        return False
    ((kind, inner),) = value.items()
    if kind in _WIRE_STRINGS:
        return type(inner) is str
    if kind in _WIRE_BOOLEANS:
        return type(inner) is bool
    if kind in _WIRE_SETS:
        return type(inner) is list and all(type(x) is str for x in inner)
    if kind == "M":
        return type(inner) is dict and all(type(k) is str and _is_wire_attribute_value(x) for k, x in inner.items())
    if kind == "L":
        return type(inner) is list and all(_is_wire_attribute_value(x) for x in inner)
    return False


_DYNAMODB_SERVICES = frozenset({"dynamodb", "dynamodbstreams"})


def _attribute_values_as_they_are(stock: Callable[..., None]) -> Callable[..., None]:
    def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if (
            key
            and shape.name == "AttributeValue"
            and self.operation_model.service_model.service_name in _DYNAMODB_SERVICES
            and _is_wire_attribute_value(value)
        ):
            self._default_serialize(serialized, value, shape, key)
            return
        stock(self, serialized, value, shape, key)

    return _serialize_type_structure


def install(force: bool = False) -> bool:
    """Replaces the functions above in this process; False (and a note on stderr) if moto is not the 5.2.1 code they mirror."""
    from moto.core.serialize import BaseJSONSerializer
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser
    from moto.dynamodb.parsing.validators import Validator
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    from moto.sqs import models

    digests = stock_source_digests()
    changed = sorted(name for name, digest in digests.items() if digest != EXPECTED_SOURCES[name])
    if changed and not force:
        print(
            f"emulator: moto's {', '.join(changed)} differ from the 5.2.1 code the SQS/routing patch mirrors; "
            "hot-path patch NOT installed (stock behaviour, only slower)",
            file=sys.stderr,
        )
        return False
    models.Queue.attributes = property(_attributes)
    models.Queue.messages = property(_messages)
    models.Queue.approximate_number_of_messages = property(lambda self: _counts(self)[0])
    models.Queue.approximate_number_of_messages_not_visible = property(lambda self: _counts(self)[1])
    models.Queue.approximate_number_of_messages_delayed = property(lambda self: _counts(self)[2])
    models.SQSBackend.get_queue_attributes = _get_queue_attributes
    models.SQSBackend.is_message_valid_based_on_retention_period = _is_message_valid_based_on_retention_period
    DomainDispatcherApplication.get_backend_for_host = _memoised_backend_for_host(DomainDispatcherApplication.get_backend_for_host)
    UpdateExpressionParser.make = _memoised_update_expression_parse(UpdateExpressionParser.make.__func__)
    Validator.__init__ = _validator_init
    BaseJSONSerializer._serialize_type_structure = _attribute_values_as_they_are(BaseJSONSerializer._serialize_type_structure)
    return True
