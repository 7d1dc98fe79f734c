"""CloudWatch Logs JSON filter patterns for moto 5.2.1's FilterLogEvents (launcher process only).

Why
---
moto reads a filter pattern by its first character: a letter is a set of bare
terms, a quote a quoted term, anything else (so every JSON pattern, which
starts with ``{``) an ``UnsupportedFilterPattern`` that matches every event.
``ops trace`` selects an order's log lines with a JSON pattern
(``packages/ops/src/operations/function-logs.ts``), so locally the service would hand back
a whole log group where AWS hands back the order's lines.

What this patch does
--------------------
A pattern that starts with ``{`` is parsed into the part of CloudWatch Logs'
JSON syntax the project uses, and events are matched against it:

* selectors ``$.a.b`` and ``$.a[0]``;
* ``=`` and ``!=`` with a quoted string or a bare word, where ``*`` matches any
  run of characters (``$.key = "SO-1#*"``); ``=``, ``!=``, ``<``, ``<=``, ``>``,
  ``>=`` with a number, compared as numbers;
* ``&&`` and ``||`` (``&&`` binds tighter) and parentheses.

A message that is not a JSON object matches no JSON pattern, and a selector
that names nothing matches no comparison, as on AWS. A JSON pattern outside
this subset (``IS NULL``, ``NOT EXISTS``, ``IS TRUE``, arrays of values) keeps
moto's stock answer, every event, and says so on stderr once per pattern.
Quoted and bare terms are stock. ``packages/tools/test/integration/emulator/log-filter-patterns.test.ts``
checks the subset against what the AWS documentation's examples select.
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from typing import Any, Callable

_TOKEN = re.compile(
    r'\s*(\|\||&&|\(|\)|!=|<=|>=|=|<|>|"(?:[^"\\]|\\.)*"|\$(?:\.[A-Za-z0-9_@\-]+|\[\d+\])+|[^\s()"|&=!<>]+)'
)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$")
_warned: set[str] = set()

Matcher = Callable[[Any], bool]


class Unsupported(Exception):
    pass


def _tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        m = _TOKEN.match(text, at)
        if not m:
            raise Unsupported(text[at:])
        out.append(m.group(1))
        at = m.end()
    return out


def _lookup(document: Any, selector: str) -> tuple[bool, Any]:
    value = document
    for name, index in re.findall(r"\.([A-Za-z0-9_@\-]+)|\[(\d+)\]", selector[1:]):
        if name and isinstance(value, dict) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return False, None
    return True, value


def _comparison(selector: str, op: str, raw: str) -> Matcher:
    if _NUMBER.match(raw):
        number = float(raw)
        compare = {
            "=": lambda v: v == number, "!=": lambda v: v != number, "<": lambda v: v < number,
            "<=": lambda v: v <= number, ">": lambda v: v > number, ">=": lambda v: v >= number,
        }[op]

        def numeric(document: Any) -> bool:
            found, value = _lookup(document, selector)
            return found and isinstance(value, (int, float)) and not isinstance(value, bool) and compare(value)

        return numeric
    if op not in ("=", "!="):
        raise Unsupported(f"{op} with a string")
    text = json.loads(raw) if raw.startswith('"') else raw
    wanted = re.compile("^" + ".*".join(re.escape(part) for part in text.split("*")) + "$", re.DOTALL)

    def textual(document: Any) -> bool:
        found, value = _lookup(document, selector)
        if not found or isinstance(value, (dict, list)) or value is None:
            return False
        shown = json.dumps(value) if isinstance(value, bool) else str(value)
        return bool(wanted.match(shown)) == (op == "=")

    return textual


class _Parser:
    def __init__(self, tokens: list[str]):
        self.tokens, self.at = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise Unsupported("pattern ends early")
        self.at += 1
        return token

    def expression(self) -> Matcher:
        parts = [self.conjunction()]
        while self.peek() == "||":
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else (lambda d: any(p(d) for p in parts))

    def conjunction(self) -> Matcher:
        parts = [self.atom()]
        while self.peek() == "&&":
            self.take()
            parts.append(self.atom())
        return parts[0] if len(parts) == 1 else (lambda d: all(p(d) for p in parts))

    def atom(self) -> Matcher:
        token = self.take()
        if token == "(":
            inner = self.expression()
            if self.take() != ")":
                raise Unsupported("unbalanced parentheses")
            return inner
        if not token.startswith("$"):
            raise Unsupported(token)
        op = self.take()
        if op not in ("=", "!=", "<", "<=", ">", ">="):
            raise Unsupported(op)
        return _comparison(token, op, self.take())


# moto builds a filter for every event it tests, so a pattern is parsed once and kept.
@lru_cache(maxsize=256)
def json_pattern(pattern: str) -> Callable[[str], bool] | None:
    """The matcher of a JSON pattern, or None when it is outside the subset (stock: every event)."""
    body = pattern.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        parser = _Parser(_tokens(body[1:-1]))
        matcher = parser.expression()
        if parser.peek() is not None:
            raise Unsupported(parser.peek() or "")
    except (Unsupported, ValueError, KeyError) as error:
        if pattern not in _warned:
            _warned.add(pattern)
            print(f"emulator: JSON filter pattern not understood ({error}); every event matches: {pattern}", file=sys.stderr)
        return None

    def on_message(message: str) -> bool:
        try:
            document = json.loads(message)
        except ValueError:
            return False
        return isinstance(document, dict) and matcher(document)

    return on_message


def install() -> bool:
    """Makes moto's FilterLogEvents apply JSON patterns; False if moto's filter is not where 5.2.1 has it."""
    from moto.logs import models, utils

    stock = getattr(models, "EventMessageFilter", None)
    if stock is not utils.EventMessageFilter or not hasattr(stock, "matches"):
        print("emulator: moto's EventMessageFilter moved; JSON filter patterns NOT applied (every event matches)", file=sys.stderr)
        return False

    class EventMessageFilter(stock):  # type: ignore[misc, valid-type]
        def __init__(self, pattern: str):
            super().__init__(pattern)
            self.json_matcher = json_pattern(pattern) if pattern else None

        def matches(self, message: str) -> bool:
            if self.json_matcher is not None:
                return self.json_matcher(message)
            return super().matches(message)

    models.EventMessageFilter = EventMessageFilter
    return True
