"""A bounded least-recently-used map whose entries expire (the verifier's answer and challenge caches)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class Expiring:
    """A bounded LRU whose entries also expire; the least recently used goes first when full (lock held by caller)."""

    def __init__(self, capacity: int, clock: Callable[[], float]) -> None:
        self.capacity = capacity
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self._clock():
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: str, value: Any, ttl: float) -> None:
        self._items[key] = (self._clock() + ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def pop(self, key: str) -> None:
        self._items.pop(key, None)
