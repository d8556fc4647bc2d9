"""Splitting an API answer the JSON decoder refuses for its depth into the members and elements it can decode.

Python's JSON decoder recurses once per nesting level and gives up (RecursionError) near depth 1,000: one
cluster nested that deep, 2 KB of brackets, makes the whole `list clusters` page undecodable. This walker does
not recurse: it finds where each member of the top-level object and each element of its `items` array starts
and ends (brackets on an explicit stack, strings read by the json module's own `scanstring`), so each element
is decoded on its own and only the deep one is refused. It validates the structure it walks (matching
brackets, member syntax); anything else wrong is a ValueError, as from the decoder. It walks at most
`MAX_BYTES` of text and `MAX_ITEMS` elements.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]  # the decoder's own (C) string reader

MAX_BYTES = 8 * 1024 * 1024
MAX_ITEMS = 10_000

_WS = re.compile(r"[ \t\n\r]*")
_BRACKET_OR_STRING = re.compile(r'["\[\]{}]')
_SCALAR = re.compile(r"[^,:\[\]{}\" \t\n\r]+")
_CLOSER = {"[": "]", "{": "}"}


class Unparseable:
    """An element the decoder refused (too deep, or not JSON): its `id`, when that member is a JSON string."""

    __slots__ = ("id",)

    def __init__(self, element_id: str | None) -> None:
        self.id = element_id

    def __repr__(self) -> str:
        return f"Unparseable(id={self.id!r})"


def _skip_ws(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def value_end(text: str, pos: int) -> int:
    """The index just past the JSON value starting at `pos` (no whitespace before it); ValueError if none."""
    if pos >= len(text):
        raise ValueError("a value was expected at the end of the text")
    first = text[pos]
    if first == '"':
        return int(scanstring(text, pos + 1, True)[1])
    if first not in _CLOSER:
        scalar = _SCALAR.match(text, pos)
        if scalar is None:
            raise ValueError(f"a value was expected at {pos}")
        return scalar.end()
    stack = [_CLOSER[first]]
    cursor = pos + 1
    while stack:
        found = _BRACKET_OR_STRING.search(text, cursor)
        if found is None:
            raise ValueError("an array or object is not closed")
        char, cursor = found.group(), found.end()
        if char == '"':
            cursor = int(scanstring(text, cursor, True)[1])
        elif char in _CLOSER:
            stack.append(_CLOSER[char])
        elif stack.pop() != char:
            raise ValueError(f"a mismatched {char!r} at {found.start()}")
    return cursor


def members(text: str, pos: int = 0) -> Iterator[tuple[str, int, int]]:
    """(key, start, end) of each member of the object starting at `pos` (after whitespace), end excluded."""
    pos = _skip_ws(text, pos)
    if text[pos : pos + 1] != "{":
        raise ValueError("an object was expected")
    pos = _skip_ws(text, pos + 1)
    if text[pos : pos + 1] == "}":
        return
    while True:
        if text[pos : pos + 1] != '"':
            raise ValueError(f"a member name was expected at {pos}")
        key, pos = scanstring(text, pos + 1, True)
        pos = _skip_ws(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"':' was expected at {pos}")
        start = _skip_ws(text, pos + 1)
        end = value_end(text, start)
        yield key, start, end
        pos = _skip_ws(text, end)
        separator = text[pos : pos + 1]
        pos = _skip_ws(text, pos + 1)
        if separator == "}":
            return
        if separator != ",":
            raise ValueError(f"',' or '}}' was expected at {pos}")


def elements(text: str, pos: int) -> list[tuple[int, int]]:
    """(start, end) of each element of the array starting at `pos`; at most MAX_ITEMS of them."""
    if text[pos : pos + 1] != "[":
        raise ValueError("an array was expected")
    spans: list[tuple[int, int]] = []
    pos = _skip_ws(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return spans
    while True:
        if len(spans) >= MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS} elements")
        end = value_end(text, pos)
        spans.append((pos, end))
        pos = _skip_ws(text, end)
        separator = text[pos : pos + 1]
        pos = _skip_ws(text, pos + 1)
        if separator == "]":
            return spans
        if separator != ",":
            raise ValueError(f"',' or ']' was expected at {pos}")


def _decode(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None


def string_member(text: str, name: str) -> str | None:
    """The top-level member `name` of the object `text` when it is a JSON string; None otherwise or if unreadable."""
    try:
        for key, start, _end in members(text):
            if key == name and text[start] == '"':
                return str(scanstring(text, start + 1, True)[0])
    except ValueError:
        return None
    return None


def int_member(text: str, name: str) -> int | None:
    """The top-level member `name` of the object `text` when it is an integer; None otherwise or if unreadable."""
    try:
        for key, start, end in members(text):
            if key == name:
                value = _decode(text[start:end]) if end - start <= 20 else None
                return value if isinstance(value, int) and not isinstance(value, bool) else None
    except ValueError:
        return None
    return None


def page_items(body: bytes) -> tuple[list[object], object]:
    """Each element of the top-level object's `items` (decoded, or Unparseable) and its `total` member (decoded,
    None when absent). ValueError when the body is not such an object, is not UTF-8, or exceeds the bounds."""
    if len(body) > MAX_BYTES:
        raise ValueError(f"the answer exceeds {MAX_BYTES} bytes")
    text = body.decode("utf-8")
    items: list[object] | None = None
    total: object = None
    last = 0
    for key, start, end in members(text):
        last = end
        if key == "items" and text[start] == "[":
            items = []
            for item_start, item_end in elements(text, start):
                piece = text[item_start:item_end]
                try:
                    items.append(_decode(piece))
                except ValueError:
                    items.append(Unparseable(string_member(piece, "id")))
        elif key == "total":
            total = _decode(text[start:end])
    rest = text.find("}", last)
    if rest < 0 or text[rest + 1 :].strip(" \t\n\r"):
        raise ValueError("text after the object")
    if items is None:
        raise ValueError("no 'items' array")
    return items, total
