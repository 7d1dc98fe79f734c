"""Summarise a py-spy raw profile of the emulator by AWS action.

    py-spy record --pid <emulator pid> --duration 20 --format raw -o profile.txt
    python3 packages/tools/src/emulator/profile_shares.py profile.txt

Prints each action's share of the sampled CPU (SQS GetQueueAttributes, ReceiveMessage,
DynamoDB TransactWriteItems, ...), and, inside SQS, the share spent reading moto's UTC
clock helpers (unix_time / unix_time_millis): the figures docs/emulator.md quotes.
"""
from __future__ import annotations

import re
import sys
from collections import Counter

# moto's response classes name the action: "SQSResponse.receive_message", "DynamoHandler.transact_write_items".
ACTION = re.compile(r"^(SQSResponse|DynamoHandler|DynamoDBStreamsHandler)\.(\w+) ")


def classify(frames: list[str]) -> str:
    for frame in frames:
        match = ACTION.match(frame)
        if match:
            service = "SQS" if match.group(1) == "SQSResponse" else "DynamoDB"
            return f"{service} {match.group(2)}"
    if any("werkzeug" in f or "flask" in f for f in frames):
        return "HTTP, routing and serialisation outside an action"
    return "other (server threads, signals)"


def main(path: str) -> None:
    actions: Counter[str] = Counter()
    clock = 0
    sqs = 0
    total = 0
    with open(path, encoding="utf-8") as profile:
        for line in profile:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            samples = int(count)
            frames = stack.split(";")
            action = classify(frames)
            actions[action] += samples
            total += samples
            if action.startswith("SQS"):
                sqs += samples
                if any(f.startswith(("unix_time ", "unix_time_millis ", "utcnow ", "utcfromtimestamp ")) for f in frames):
                    clock += samples
    print(f"{total} samples")
    for action, samples in actions.most_common():
        print(f"{100 * samples / total:5.1f} %  {action}")
    if total:
        print(f"{100 * clock / total:5.1f} %  of all samples inside moto's UTC clock helpers, called from SQS")
        print(f"{100 * sqs / total:5.1f} %  SQS in total")


if __name__ == "__main__":
    main(sys.argv[1])
