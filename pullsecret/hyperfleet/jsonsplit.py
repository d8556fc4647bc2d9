"""Splitting an API answer the JSON decoder refuses for its depth into the members and elements it can decode.

Python's JSON decoder recurses once per nesting level and gives up (RecursionError) near depth 1,000: one
cluster nested that deep, 2 KB of brackets, makes the whole `list clusters` page undecodable. This walker does
not recurse: it finds where each member of the top-level object and each element of its `items` array starts
and ends (brackets on an explicit stack, strings read by the json module's own `scanstring`), so each element
is decoded on its own and only the deep one is refused. It validates the structure it walks (matching
brackets, member syntax); anything else wrong is a ValueError, as from the decoder. It walks at most
`MAX_BYTES` of text and `MAX_ITEMS` elements.

Cost: every member and element is first handed to the decoder (C, `raw_decode`); only a value it refuses for its
depth is walked by hand, a run of brackets at a time. That hand walk has a `Budget`: WALK_BYTES of text and
WALK_SECONDS of CPU time per event (one cluster's answer) and per list page; past either the walk stops with
`OverBudget` (a ValueError): the cluster is terminal (reported at the event's generation when its own cannot be
read), and the caller serves the page without it (pullsecret.hyperfleet.client). Duplicate member names are
answered as `json` answers them: the last one wins.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]  # the decoder's own (C) string reader

MAX_BYTES = 8 * 1024 * 1024
MAX_ITEMS = 10_000
WALK_BYTES = 128 * 1024  # text walked by hand (values the decoder refuses) per event or per list page
WALK_SECONDS = 0.05  # CPU time (this thread's: other load does not count) per event or per list page

_WS = re.compile(r"[ \t\n\r]*")
# A string's opening quote, or a run of opening or of closing brackets (a deep chain is one run, not one step each).
_BRACKETS_OR_STRING = re.compile(r'"|[\[{]+|[\]}]+')
_SCALAR = re.compile(r"[^,:\[\]{}\" \t\n\r]+")
_CLOSER = {"[": "]", "{": "}"}
_CLOSERS = str.maketrans("[{", "]}")
_DECODER = json.JSONDecoder()


class OverBudget(ValueError):
    """The hand walk passed its Budget (bytes or time); `total`: a page's total read before it stopped."""

    total: object = None


def sub_pages(page: int, size: int) -> list[tuple[int, int]]:
    """The (page, size) pages that hold exactly the items of page `page` of `size`, split by size's smallest
    prime factor (page numbers count from 1): a page over budget is asked again in parts, down to single items."""
    factor = next((f for f in range(2, size + 1) if size % f == 0), 1)
    part = size // factor
    return [((page - 1) * factor + i, part) for i in range(1, factor + 1)]


class Budget:
    """What the hand walk may still spend: bytes of text and this thread's CPU time (one per event or page)."""

    __slots__ = ("bytes_left", "until")

    def __init__(self, walk_bytes: int = WALK_BYTES, seconds: float = WALK_SECONDS) -> None:
        self.bytes_left = walk_bytes
        self.until = time.thread_time() + seconds

    def check(self, walked: int) -> None:
        if walked > self.bytes_left or time.thread_time() > self.until:
            raise OverBudget(f"more than {WALK_BYTES} bytes or {WALK_SECONDS} s of text walked by hand")

    def spend(self, walked: int) -> None:
        self.check(walked)
        self.bytes_left -= walked


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


def value_end(text: str, pos: int, budget: Budget | None = None) -> int:
    """The index just past the JSON value starting at `pos` (no whitespace before it); ValueError if none,
    OverBudget when walking a container by hand passes `budget`."""
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
    budget = budget or Budget()
    stack: list[str] = []  # the closers expected, innermost last
    cursor = pos
    steps = 0
    while True:
        found = _BRACKETS_OR_STRING.search(text, cursor)
        if found is None:
            raise ValueError("an array or object is not closed")
        run, cursor = found.group(), found.end()
        steps += 1
        if steps % 256 == 0:
            budget.check(cursor - pos)
        if run == '"':
            cursor = int(scanstring(text, cursor, True)[1])
        elif run[0] in _CLOSER:
            stack.extend(run.translate(_CLOSERS))
        else:
            closing = run[: len(stack)]  # closers past this value's end belong to its container
            if "".join(reversed(stack[-len(closing) :])) != closing:
                raise ValueError(f"a mismatched bracket at {found.start()}")
            del stack[-len(closing) :]
            if not stack:
                end = found.start() + len(closing)
                budget.spend(end - pos)
                return end


def _skip_value(text: str, pos: int, budget: Budget | None) -> int:
    """`value_end`, by the decoder when it takes the value (C speed), by hand when it is too deep for it."""
    try:
        return int(_DECODER.raw_decode(text, pos)[1])
    except RecursionError:
        return value_end(text, pos, budget)
    except ValueError:
        return value_end(text, pos, budget)


def members(
    text: str, pos: int = 0, budget: Budget | None = None, *, walk: Callable[[str, int], int | None] | None = None
) -> Iterator[tuple[str, int, int]]:
    """(key, start, end) of each member of the object starting at `pos` (after whitespace), end excluded.
    `walk(key, start)` may find a member's end itself (None: the usual way)."""
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
        walked = walk(key, start) if walk is not None else None
        end = walked if walked is not None else _skip_value(text, start, budget)
        yield key, start, end
        pos = _skip_ws(text, end)
        separator = text[pos : pos + 1]
        if separator == "}":
            return
        if separator != ",":
            raise ValueError(f"',' or '}}' was expected at {pos}")
        pos = _skip_ws(text, pos + 1)


def elements(text: str, pos: int, budget: Budget | None = None) -> tuple[list[tuple[int, int]], int]:
    """(start, end) of each element of the array starting at `pos` (at most MAX_ITEMS), and the array's end."""
    if text[pos : pos + 1] != "[":
        raise ValueError("an array was expected")
    spans: list[tuple[int, int]] = []
    pos = _skip_ws(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return spans, pos + 1
    while True:
        if len(spans) >= MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS} elements")
        end = _skip_value(text, pos, budget)
        spans.append((pos, end))
        pos = _skip_ws(text, end)
        separator = text[pos : pos + 1]
        if separator == "]":
            return spans, pos + 1
        if separator != ",":
            raise ValueError(f"',' or ']' was expected at {pos}")
        pos = _skip_ws(text, pos + 1)


def _decode(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None


def string_member(text: str, name: str, budget: Budget | None = None) -> str | None:
    """The top-level member `name` of the object `text` when it is a JSON string (the last of that name, as `json`
    takes it); None otherwise, if unreadable or past `budget`."""
    found: str | None = None
    budget = budget or Budget()
    try:
        for key, start, _end in members(text, 0, budget):
            if key == name:
                found = str(scanstring(text, start + 1, True)[0]) if text[start] == '"' else None
    except ValueError:
        return None
    return found


def int_member(text: str, name: str, budget: Budget | None = None) -> int | None:
    """The top-level member `name` of the object `text` when it is an integer (the last of that name, as `json`
    takes it); None otherwise or if unreadable. OverBudget past `budget`: the member may follow where the walk
    stopped, and the caller says the cluster is too costly to read rather than that it names no such member."""
    found: int | None = None
    budget = budget or Budget()
    try:
        for key, start, end in members(text, 0, budget):
            if key == name:
                value = _decode(text[start:end]) if end - start <= 20 else None
                found = value if isinstance(value, int) and not isinstance(value, bool) else None
    except OverBudget:
        raise
    except ValueError:
        return None
    return found


def page_items(body: bytes, budget: Budget | None = None) -> tuple[list[object], object]:
    """Each element of the top-level object's `items` (decoded, or Unparseable) and its `total` member (decoded,
    None when absent); of duplicate members the last counts. ValueError when the body is not such an object, is
    not UTF-8 or exceeds the bounds; OverBudget when the values too deep to decode pass `budget` (one per page)."""
    if len(body) > MAX_BYTES:
        raise ValueError(f"the answer exceeds {MAX_BYTES} bytes")
    budget = budget or Budget()
    text = body.decode("utf-8")
    items: list[object] | None = None
    total: object = None
    last = 0

    def walk(key: str, start: int) -> int | None:
        nonlocal items
        if key != "items":
            return None
        items = None  # a later `items` that is not an array wins too
        if text[start : start + 1] != "[":
            return None
        items, end = _items(text, start, budget)
        return end

    try:
        for key, start, end in members(text, 0, budget, walk=walk):
            last = end
            if key == "total":
                total = _decode(text[start:end])
    except OverBudget as exc:
        exc.total = total  # the page's total as read before the walk stopped (it precedes `items` in the API's)
        raise
    rest = text.find("}", last)
    if rest < 0 or text[rest + 1 :].strip(" \t\n\r"):
        raise ValueError("text after the object")
    if items is None:
        raise ValueError("no 'items' array")
    return items, total


def _items(text: str, start: int, budget: Budget) -> tuple[list[object], int]:
    """The elements of the array at `start`, each decoded or Unparseable, and the array's end."""
    items: list[object] = []
    spans, end = elements(text, start, budget)
    for item_start, item_end in spans:
        piece = text[item_start:item_end]
        try:
            items.append(_decode(piece))
        except ValueError:
            items.append(Unparseable(string_member(piece, "id", budget)))
    return items, end
