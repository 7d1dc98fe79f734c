"""Randomised differential check: item-level rollback vs stock moto, in-process.

    .venv/bin/python packages/tools/src/emulator/fuzz_rollback.py [rounds] [seed]

Drives two DynamoDBBackend instances with the same random TransactWriteItems
(puts/updates/deletes/condition checks, failing conditions at random positions,
ALL_OLD, duplicate keys, missing tables, bad keys, failing update expressions)
-- one through stock `transact_write_items`, one through the patched copy --
and asserts identical outcomes (exception type, message, CancellationReasons)
and identical table contents after every transaction. Exits non-zero on the
first difference.
"""
from __future__ import annotations

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from moto.dynamodb.models import DynamoDBBackend  # noqa: E402

import item_rollback  # noqa: E402

STOCK = DynamoDBBackend.transact_write_items
PATCHED = item_rollback.transact_write_items


def make_backend() -> DynamoDBBackend:
    b = DynamoDBBackend("us-east-1", "123456789012")
    b.create_table(
        "simple",
        schema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        attr=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}],
        throughput=None, billing_mode="PAY_PER_REQUEST",
        indexes=None,
        global_indexes=[{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                         "Projection": {"ProjectionType": "ALL"}}],
        streams={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        sse_specification=None, tags=None, deletion_protection_enabled=False,
        warm_throughput=None,
    )
    b.create_table(
        "composite",
        schema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        attr=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
        throughput=None, billing_mode="PAY_PER_REQUEST",
        indexes=None, global_indexes=None, streams=None,
        sse_specification=None, tags=None, deletion_protection_enabled=False,
        warm_throughput=None,
    )
    return b


def key_for(rng: random.Random, table: str) -> dict:
    k = {"pk": {"S": f"p{rng.randrange(6)}"}}
    if table == "composite":
        k["sk"] = {"N": str(rng.randrange(3))}
    return k


def action(rng: random.Random) -> dict:
    table = rng.choice(["simple", "composite", "simple", "composite", "missing"])
    key = key_for(rng, table)
    if table == "missing":
        key = {"pk": {"S": "x"}}
    cond = rng.choice([None, None, "attribute_exists(pk)", "attribute_not_exists(pk)", "v < :lim"])
    values = {":lim": {"N": str(rng.randrange(5))}} if cond == "v < :lim" else None
    op: dict = {"TableName": table}
    if cond:
        op["ConditionExpression"] = cond
    if values:
        op["ExpressionAttributeValues"] = dict(values)
    if rng.random() < 0.4:
        op["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    kind = rng.choice(["Put", "Update", "Delete", "ConditionCheck"])
    if kind == "Put":
        item = dict(key)
        item["v"] = {"N": str(rng.randrange(5))}
        if rng.random() < 0.5:
            item["g"] = {"S": f"g{rng.randrange(2)}"}
        op["Item"] = item
    else:
        op["Key"] = key
        if rng.random() < 0.03:
            op["Key"] = {"pk": key["pk"]}  # missing range key on composite -> validation error
    if kind == "Update":
        op.setdefault("ExpressionAttributeValues", {})[":one"] = {"N": "1"}
        if rng.random() < 0.1:
            # ADD to a string attribute fails inside the executor, after moto created the item.
            op["UpdateExpression"] = "ADD g :one"
        else:
            op["UpdateExpression"] = "SET v = if_not_exists(v, :one) + :one, g = :g"
            op["ExpressionAttributeValues"][":g"] = {"S": f"g{rng.randrange(2)}"}
    if kind == "ConditionCheck" and not cond:
        op["ConditionExpression"] = "attribute_exists(pk)"
    return {kind: op}


def run(fn, backend, items):
    try:
        fn(backend, json.loads(json.dumps(items)))
        return ("ok",)
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, getattr(e, "message", str(e)), getattr(e, "description", None))


def dump(backend) -> str:
    out = {}
    for name, table in backend.tables.items():
        out[name] = sorted(json.dumps(i.to_json(), sort_keys=True) for i in table.all_items())
        out[name + "#gsi"] = sorted(json.dumps(i.to_json(), sort_keys=True)
                                    for i in table.has_idx_items("byG")) if table.global_indexes else []
        out[name + "#stream"] = len(table.stream_shard.items) if table.stream_shard else None
    return json.dumps(out, sort_keys=True)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    stock, patched = make_backend(), make_backend()
    outcomes: dict[str, int] = {}
    for n in range(rounds):
        items = [action(rng) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.02:
            items = items * 51  # > 100 actions
        a, b = run(STOCK, stock, items), run(PATCHED, patched, items)
        if a != b or dump(stock) != dump(patched):
            print(f"round {n}: DIFFERENCE\n items={json.dumps(items)}\n stock={a}\n patched={b}")
            print(" stock state:  ", dump(stock)[:2000])
            print(" patched state:", dump(patched)[:2000])
            sys.exit(1)
        outcomes[a[0]] = outcomes.get(a[0], 0) + 1
    print(json.dumps({"rounds": rounds, "seed": seed, "identical": True, "outcomes": outcomes}))


if __name__ == "__main__":
    main()
