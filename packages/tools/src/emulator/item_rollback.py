"""Item-level rollback for moto's DynamoDB TransactWriteItems (moto 5.2.1).

Why
---
Stock ``DynamoDBBackend.transact_write_items`` (moto/dynamodb/models/__init__.py)
makes its "undo log" by ``copy.deepcopy``-ing the WHOLE table, once per action,
before applying anything, and on cancellation swaps the copy back in
(``self.tables[name] = copy``). The cost grows with the table, not with the
transaction: a 3-action transaction takes ~4 ms on an empty table, ~90 ms at
2,000 items and ~430 ms at 10,000 items (see docs/emulator.md). Our tests keep
idempotency records, outbox rows and ledgers in a few long-lived tables, so
every transaction got slower as the run went on.

What this patch does
--------------------
It replaces that one method with a copy whose action loop is unchanged
(same validation order, same exceptions, same CancellationReasons including
``Item`` for ReturnValuesOnConditionCheckFailure=ALL_OLD) but whose undo log
is per item: just before an action is applied we remember, for that
(table, key), either a deep copy of the stored ``Item`` or the fact that it was
absent, plus the length of the table's stream shard. On cancellation we undo
in reverse order: put the copies back, delete items that did not exist, drop
the stream records the cancelled actions appended. Cost: O(actions), not
O(table size).

How moto stores items (why this is enough)
------------------------------------------
* ``Table.items`` is a ``defaultdict(dict)``: ``items[hash] = Item`` for
  hash-only tables, ``items[hash][range] = Item`` for composite keys. That is
  the ONLY item storage; there is no ``_items`` or per-index copy.
* GSIs and LSIs are not materialised: ``query``/``scan`` with ``IndexName``
  derive the index view from ``Table.items`` on every call
  (``has_idx_items``, ``all_items`` + ``sorted_items``). Restoring the base
  items therefore restores every index exactly.
* ``update_item`` mutates the stored ``Item`` in place (and may create a
  key-only item before a failing update expression), so we keep a *deep copy*
  taken before the action, never a reference.
* Streams: ``put/update/delete`` append ``StreamRecord``s to
  ``table.stream_shard.items``; stock's table swap discarded them on
  cancellation, so we truncate the shard back as well.

Deliberate differences from stock (both are stock bugs; we follow AWS)
---------------------------------------------------------------------
* A ``TableName`` given as an ARN: stock backs up tables by *name* only, so a
  cancelled transaction addressing a table by ARN kept its partial writes.
  We resolve the table object and roll it back too.
* An element with two operations (``{"Put":..,"Delete":..}``) raises
  ``TransactWriteSingleOpException`` in the middle of the loop; stock raised it
  without rolling back the earlier actions. We roll back first (AWS rejects
  such a request before applying anything). The SDK cannot produce this shape.

Guard: the replacement mirrors moto 5.2.1's method line by line. If the
installed moto's method source differs, ``install()`` refuses to patch (stock
behaviour stays, only slower; the launcher's lock keeps it correct) and says so
on stderr.
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import sys
from typing import Any

# sha256 of inspect.getsource(DynamoDBBackend.transact_write_items) in moto 5.2.1.
_STOCK_SOURCE_SHA256 = "81db2cb7d94e39c90b3a2077e1f4bb41a449c558ef9b1b1e2910fdaa39978ad4"

_ABSENT = object()

_installed = False


class _ItemUndoLog:
    """Pre-transaction state of every item a transaction is about to write."""

    def __init__(self) -> None:
        # (table, hash_value, range_value, bucket_existed, old_item_copy | _ABSENT)
        self._items: list[tuple[Any, Any, Any, bool, Any]] = []
        # id(table) -> (table, shard, shard.items list object, its length)
        self._streams: dict[int, tuple[Any, Any, list[Any] | None, int]] = {}

    def remember(self, table: Any, key: dict[str, Any]) -> None:
        from moto.dynamodb.models.dynamo_type import DynamoType

        try:
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = (
                DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            )
        except Exception:
            # Malformed key: the action's own get_item raises before any write,
            # so there is nothing to undo for it.
            return
        if id(table) not in self._streams:
            shard = table.stream_shard
            items = shard.items if shard is not None else None
            self._streams[id(table)] = (table, shard, items, len(items) if items is not None else 0)
        store = table.items
        # Mirror Table.get_item/put_item/delete_item: composite only if range is truthy.
        if range_value:
            bucket = store.get(hash_value)  # .get: never creates a defaultdict entry
            old = bucket.get(range_value, _ABSENT) if bucket is not None else _ABSENT
            self._items.append((table, hash_value, range_value, bucket is not None,
                                old if old is _ABSENT else copy.deepcopy(old)))
        else:
            old = store.get(hash_value, _ABSENT)
            self._items.append((table, hash_value, None, True,
                                old if old is _ABSENT else copy.deepcopy(old)))

    def rollback(self) -> None:
        for table, hash_value, range_value, bucket_existed, old in reversed(self._items):
            store = table.items
            if range_value:
                if old is _ABSENT:
                    bucket = store.get(hash_value)
                    if bucket is not None:
                        bucket.pop(range_value, None)
                        if not bucket and not bucket_existed:
                            del store[hash_value]
                else:
                    store[hash_value][range_value] = old
            elif old is _ABSENT:
                store.pop(hash_value, None)
            else:
                store[hash_value] = old
        for table, shard, items, length in self._streams.values():
            if shard is None or table.stream_shard is not shard:
                continue
            if shard.items is not items:
                # StreamShard.add() replaced the list after delivering to a Lambda ESM.
                shard.items = items
            del items[length:]  # type: ignore[index]
        self._items.clear()
        self._streams.clear()


def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto 5.2.1's DynamoDBBackend.transact_write_items with an item-level undo log.

    The loop body is stock, line for line; only the backup/restore changed
    (marked "# CHANGED").
    """
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )
    from moto.dynamodb.models import get_filter_expression  # the name stock's method uses

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    undo = _ItemUndoLog()  # CHANGED: was a deepcopy of every table per action

    target_items: set[tuple[str, str]] = set()

    def check_unicity(table_name: str, key: dict[str, Any]) -> None:
        item = (str(table_name), str(dict(sorted(key.items()))))
        if item in target_items:
            raise MultipleTransactionsException()
        target_items.add(item)

    errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
    try:  # CHANGED: any escaping exception leaves no partial writes behind
        for item in transact_items:
            original_item: dict[str, Any] | None = None
            if len(list(item.keys())) > 1:
                undo.rollback()  # CHANGED: stock raised here without rolling back
                raise TransactWriteSingleOpException

            try:
                op_type, op = next(iter(item.items()))
                if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                    raise ValueError("Unsupported transaction operation")

                table_name = op["TableName"]
                condition_expression = op.get("ConditionExpression")
                expression_attribute_names = op.get("ExpressionAttributeNames")
                expression_attribute_values = op.get("ExpressionAttributeValues")
                return_values_on_condition_check_failure = op.get(
                    "ReturnValuesOnConditionCheckFailure"
                )

                if op_type == "Put":
                    attrs = op["Item"]
                    table = self.get_table(table_name)
                    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                    if table.range_key_attr is not None:
                        key[table.range_key_attr] = attrs[table.range_key_attr]
                else:
                    key = op["Key"]

                check_unicity(table_name, key)

                if op_type != "ConditionCheck":  # CHANGED: remember before anything touches it
                    undo.remember(self.get_table(table_name), key)

                current = self.get_item(table_name, key)
                if condition_expression is not None:
                    condition_op = get_filter_expression(
                        condition_expression,
                        expression_attribute_names,
                        expression_attribute_values,
                    )
                    if not condition_op.expr(current):
                        if return_values_on_condition_check_failure == "ALL_OLD" and current:
                            original_item = current.to_json()["Attributes"]
                        raise ConditionalCheckFailed(item=original_item)

                if op_type == "Put":
                    attrs = op["Item"]
                    self.put_item(
                        table_name,
                        attrs,
                        condition_expression=condition_expression,
                        expression_attribute_names=expression_attribute_names,
                        expression_attribute_values=expression_attribute_values,
                    )
                elif op_type == "Delete":
                    self.delete_item(
                        table_name,
                        key,
                        condition_expression=condition_expression,
                        expression_attribute_names=expression_attribute_names,
                        expression_attribute_values=expression_attribute_values,
                    )
                elif op_type == "Update":
                    update_expression = op["UpdateExpression"]
                    self.update_item(
                        table_name,
                        key,
                        update_expression=update_expression,
                        condition_expression=condition_expression,
                        expression_attribute_names=expression_attribute_names,
                        expression_attribute_values=expression_attribute_values,
                    )
                errors.append((None, None, None))
            except (MultipleTransactionsException, MockValidationException):
                undo.rollback()  # CHANGED
                raise
            except ConditionalCheckFailed as e:
                errors.append(("ConditionalCheckFailed", str(e.message), original_item))  # type: ignore
            except Exception as e:  # noqa: BLE001 - stock captures everything else as a reason
                errors.append((type(e).__name__, str(e), original_item))  # type: ignore
    except BaseException:
        undo.rollback()  # idempotent: a second call finds an empty log
        raise

    if any(code is not None for code, _, _ in errors):
        undo.rollback()  # CHANGED
        raise TransactionCanceledException(errors)


def stock_source_sha256() -> str:
    from moto.dynamodb.models import DynamoDBBackend

    src = inspect.getsource(DynamoDBBackend.transact_write_items)
    return hashlib.sha256(src.encode()).hexdigest()


def install(force: bool = False) -> bool:
    """Patch DynamoDBBackend.transact_write_items in this process. Returns whether it did."""
    global _installed
    if _installed:
        return True
    from moto.dynamodb.models import DynamoDBBackend

    digest = stock_source_sha256()
    if digest != _STOCK_SOURCE_SHA256 and not force:
        print(
            "emulator: moto's DynamoDBBackend.transact_write_items is not the 5.2.1 code this "
            f"patch mirrors (sha256 {digest[:12]}); item-level rollback NOT installed, "
            "transactions stay correct (serialised) but slow on big tables",
            file=sys.stderr,
            flush=True,
        )
        return False
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    _installed = True
    return True
