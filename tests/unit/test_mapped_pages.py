"""errors.mapped_pages: a later page's failure is mapped onto the taxonomy; a bug stays a bug."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc

from pullsecret.errors import TerminalError, TransientError, mapped_pages


def pages(failure: Exception) -> Iterator[int]:
    yield 1
    yield 2
    raise failure


@pytest.mark.parametrize(
    ("failure", "kind", "reason"),
    [
        (gexc.ServiceUnavailable("page 2"), TransientError, "DependencyUnavailable"),
        (ConnectionResetError(), TransientError, "DependencyUnavailable"),
        (gexc.PermissionDenied("page 2"), TerminalError, "PermissionDenied"),
    ],
)
def test_a_later_page_failure_is_mapped(failure: Exception, kind: type[Exception], reason: str) -> None:
    seen: list[int] = []
    with pytest.raises(kind) as raised:
        seen.extend(mapped_pages(pages(failure), service="secretmanager", what="list versions of s"))
    assert seen == [1, 2]
    assert getattr(raised.value, "reason", None) == reason
    assert "list versions of s (a later page)" in str(raised.value)


def test_a_bug_is_not_disguised() -> None:
    with pytest.raises(KeyError):
        list(mapped_pages(pages(KeyError("x")), service="secretmanager", what="list"))
    assert list(mapped_pages(iter([1, 2, 3]), service="secretmanager", what="list")) == [1, 2, 3]
