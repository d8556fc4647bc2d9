"""Redaction over random overlaps (hypothesis): whatever strings are registered and however their occurrences
overlap, nest or repeat in a line, no character of any occurrence is left, every other character is, and the
regular-expression matcher and the windows matcher give the same line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pullsecret import redaction
from pullsecret.redaction import REDACTED, Redactor

# A small alphabet makes overlaps, nesting and repeats the common case; no character of REDACTED's brackets.
TEXT = st.text(alphabet="abc", min_size=0, max_size=60)


@st.composite
def lines_and_secrets(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(TEXT)
    secrets: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        if len(text) >= redaction.MIN_SECRET and draw(st.booleans()):
            start = draw(st.integers(0, len(text) - redaction.MIN_SECRET))
            end = draw(st.integers(start + redaction.MIN_SECRET, len(text)))
            secrets.append(text[start:end])  # a secret the line holds
        else:
            secrets.append(draw(st.text(alphabet="abc", min_size=redaction.MIN_SECRET, max_size=8)))
    return text, secrets


def _covered(text: str, secrets: list[str]) -> list[bool]:
    """Which characters of `text` lie inside some occurrence of some secret (the statement, not the algorithm)."""
    return [
        any(text[i - k : i - k + len(s)] == s for s in secrets for k in range(len(s)) if i - k >= 0)
        for i in range(len(text))
    ]


@settings(max_examples=200, deadline=None)
@given(lines_and_secrets())
def test_no_part_of_any_occurrence_is_left_and_nothing_else_is_lost(case: tuple[str, list[str]]) -> None:
    text, secrets = case
    redactor = Redactor()
    redactor.add(secrets)
    scrubbed = redactor.scrub(text)
    covered = _covered(text, secrets)
    kept = "".join(ch for ch, hidden in zip(text, covered, strict=True) if not hidden)
    assert scrubbed.replace(REDACTED, "") == kept
    # Each maximal run of hidden characters reads as REDACTED, once per run of overlapping occurrences at most.
    runs = sum(1 for i, hidden in enumerate(covered) if hidden and (i == 0 or not covered[i - 1]))
    assert runs <= scrubbed.count(REDACTED) <= sum(text.count(s) for s in set(secrets))
    assert not [s for s in secrets if s in scrubbed]


@settings(max_examples=200, deadline=None)
@given(lines_and_secrets())
def test_both_matchers_give_the_same_line(case: tuple[str, list[str]]) -> None:
    text, secrets = case
    registered = {s for s in secrets if len(s) >= redaction.MIN_SECRET}
    regex, windows = redaction._Regex(registered), redaction._Windows(registered)
    assert sorted(regex.hits(text)) == sorted(windows.hits(text)) if registered else True
    small, large = Redactor(), Redactor()
    small.add(secrets)
    large.add(secrets)
    large.add(f"padding-{i:04d}-zzzz" for i in range(redaction.SMALL + 1))  # past SMALL: the windows matcher
    large.scrub("")
    assert isinstance(large._bulk_matcher, redaction._Windows) or isinstance(large._late_matcher, redaction._Windows)
    assert small.scrub(text) == large.scrub(text)
