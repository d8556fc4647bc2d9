#!/usr/bin/env python3
"""Replay dead-lettered events: each pulled message republished byte for byte to the topic, then acknowledged.

    gcloud pubsub subscriptions pull SUB --limit=N --format=json | python3 scripts/replay-dead-letters.py SUB TOPIC

gcloud's --format=json prints `message.data` in URL-safe base64 (`-` and `_` where the standard alphabet has `+`
and `/`), which `base64 -d` refuses part-way. Each message is decoded strictly here (the URL-safe alphabet, every
character checked; a lenient decoder silently drops what it does not know) and must be UTF-8 text, since
`gcloud pubsub topics publish --message` takes text. A message that fails to decode is neither published nor
acknowledged: it stays in the subscription and is named on stderr, and the exit status is 1. A message is
acknowledged only after its copy was published (a failed publish leaves it where it was, exit status 1).
"""

from __future__ import annotations

import base64
import binascii
import json
import subprocess
import sys


def decoded(data: str) -> str:
    """The message's text; raises ValueError for anything but URL-safe (or standard) base64 of UTF-8 text."""
    standard = data.translate(str.maketrans("-_", "+/"))
    raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    return raw.decode("utf-8")


def replay(subscription: str, topic: str, pulled: list[dict[str, object]]) -> int:
    failures = 0
    for item in pulled:
        ack_id = item.get("ackId")
        message = item.get("message")
        data = message.get("data", "") if isinstance(message, dict) else None
        message_id = message.get("messageId", "?") if isinstance(message, dict) else "?"
        if not isinstance(ack_id, str) or not isinstance(data, str):
            print(f"message {message_id}: no ackId or data; left in {subscription}", file=sys.stderr)
            failures += 1
            continue
        try:
            text = decoded(data)
        except (ValueError, binascii.Error) as exc:
            print(f"message {message_id}: data does not decode ({exc}); left in {subscription}", file=sys.stderr)
            failures += 1
            continue
        published = subprocess.run(["gcloud", "pubsub", "topics", "publish", topic, f"--message={text}"], check=False)
        if published.returncode != 0:
            print(f"message {message_id}: publish failed; left in {subscription}", file=sys.stderr)
            failures += 1
            continue
        acked = subprocess.run(
            ["gcloud", "pubsub", "subscriptions", "ack", subscription, f"--ack-ids={ack_id}"], check=False
        )
        failures += acked.returncode != 0
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: gcloud pubsub subscriptions pull SUB --format=json | replay-dead-letters.py SUB TOPIC")
        return 2
    try:
        pulled = json.load(sys.stdin)
    except ValueError as exc:
        print(f"gcloud's output is not JSON ({exc}); nothing published or acknowledged", file=sys.stderr)
        return 1
    if not isinstance(pulled, list):
        print("gcloud's output is not a list of messages; nothing published or acknowledged", file=sys.stderr)
        return 1
    return replay(argv[1], argv[2], pulled)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
