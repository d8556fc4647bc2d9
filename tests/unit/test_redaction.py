"""Redaction finds every registered string whichever matcher holds it (a regular expression for a few, windows for
many), replaces the longest first, and never registers a short word."""

from __future__ import annotations

import json
import random
import string

import pytest

from pullsecret import redaction
from pullsecret.redaction import REDACTED, Redactor


def secrets_of(rng: random.Random, n: int) -> set[str]:
    alphabet = string.ascii_letters + string.digits + "+/=-_:"
    return {"".join(rng.choice(alphabet) for _ in range(rng.randint(4, 40))) for _ in range(n)}


@pytest.mark.parametrize("n", [1, 20, redaction.SMALL, redaction.SMALL + 1, 3000])
def test_both_matchers_find_exactly_the_strings_a_text_holds(n: int) -> None:
    rng = random.Random(n)
    secrets = secrets_of(rng, n)
    matcher = redaction._matcher(secrets)
    assert isinstance(matcher, redaction._Regex if n <= redaction.SMALL else redaction._Windows)
    chosen = rng.sample(sorted(secrets), min(5, len(secrets)))
    text = " … ".join(["a line", *chosen, "the end"])
    expected = {s for s in secrets if s in text}
    assert set(matcher.hits(text)) == expected
    other = "nothing of theirs here, or by chance a short one"
    assert set(matcher.hits(other)) == {s for s in secrets if s in other}


@pytest.mark.parametrize("many", [False, True])
def test_a_secret_holding_another_is_replaced_whole_and_json_escaped_forms_too(many: bool) -> None:
    redactor = Redactor()
    padding = secrets_of(random.Random(7), 400) if many else set()
    redactor.add(["user:Passw0rd", "Passw0rd", 'quo"te-secret', *padding])
    line = 'auth user:Passw0rd and Passw0rd and {"v": ' + json.dumps('quo"te-secret') + "}"
    scrubbed = redactor.scrub(line)
    assert "Passw0rd" not in scrubbed and "quo" not in scrubbed
    assert scrubbed.count(REDACTED) == 3


def test_strings_arriving_one_by_one_after_thousands_are_found_and_short_words_never_registered() -> None:
    redactor = Redactor()
    redactor.add(secrets_of(random.Random(3), 2000))
    redactor.scrub("first line")  # the large matcher is built
    for i in range(100):
        redactor.add([f"late-token-{i:03d}"])
        assert redactor.scrub(f"line with late-token-{i:03d} inside") == f"line with {REDACTED} inside"
    redactor.add(["abc", ""])
    assert redactor.scrub("abc") == "abc"


@pytest.mark.parametrize("many", [False, True])
@pytest.mark.parametrize(
    ("secrets", "line", "scrubbed"),
    [
        # Overlapping: replaced one after the other, `ijkl` (a part of the second) was left.
        (["abcdefgh", "efghijkl"], "token=abcdefghijkl end", f"token={REDACTED} end"),
        (["efghijkl", "abcdefgh"], "token=abcdefghijkl end", f"token={REDACTED} end"),
        # Nested: the inner one inside the outer, and also alone.
        (["Outer-Inner-Tail", "Inner"], "x Outer-Inner-Tail y Inner z", f"x {REDACTED} y {REDACTED} z"),
        # A chain of three, each overlapping the next.
        (["aaaXbbb", "bbbYccc", "cccZddd"], "[aaaXbbbYcccZddd]", f"[{REDACTED}]"),
        # One string overlapping itself.
        (["abab"], "ababab!", f"{REDACTED}!"),
        # Repeated: every occurrence, the middle ones too.
        (["tok-1234"], "a tok-1234 b tok-1234 c tok-1234 d", f"a {REDACTED} b {REDACTED} c {REDACTED} d"),
        # Touching, not overlapping: two spans.
        (["wxyz", "1234"], "wxyz1234", REDACTED * 2),
    ],
)
def test_overlapping_and_nested_secrets_leave_no_part(secrets: list[str], line: str, scrubbed: str, many: bool) -> None:
    redactor = Redactor()
    redactor.add([*secrets, *(secrets_of(random.Random(9), 400) if many else ())])
    assert redactor.scrub(line) == scrubbed


@pytest.mark.parametrize(
    "secret",
    ['quo"te-secret', "back\\slash-secret", "pässwörd-ü", "tab\there-secret", "plain-secret"],
)
def test_a_secret_quoted_inside_json_is_replaced_exactly_and_nothing_else(secret: str) -> None:
    """A log line that quotes JSON holds the secret's escaped form (`\\"`, `\\\\`, `\\u00e4`, `\\t`): that form is
    replaced whole, no character of it left on either side, and ordinary words (`null`) are untouched."""
    redactor = Redactor()
    redactor.add([secret])
    line = json.dumps({"v": secret, "w": None})
    assert redactor.scrub(line) == f'{{"v": "{REDACTED}", "w": null}}'
    assert redactor.scrub(f"raw {secret} end") == f"raw {REDACTED} end"


def test_strings_registered_before_and_after_the_tiers_merge_are_all_still_replaced() -> None:
    """Late strings (one registry token per handshake) outgrow their small matcher and join the first: every
    string, from the first registered to the last, is still replaced after that."""
    redactor = Redactor()
    early = [f"early-secret-{i:03d}" for i in range(10)]
    redactor.add(early)
    redactor.scrub("")
    late = [f"late-token-{i:03d}" for i in range(3 * Redactor._LATE_MAX)]
    for token in late:
        redactor.add([token])
        assert redactor.scrub(f"a {token} b") == f"a {REDACTED} b"
    for secret in early + late:
        assert redactor.scrub(f"x {secret} y") == f"x {REDACTED} y", secret


def test_repr_counts_the_strings_and_shows_none_of_them() -> None:
    """A Redactor printed in a log or a traceback says how many strings it holds (each and its JSON form, once)."""
    redactor = Redactor()
    redactor.add(["hunter2-secret", 'quo"te-secret', "hunter2-secret", "abc"])
    redactor.add(["hunter2-secret"])
    assert repr(redactor) == "Redactor(3 strings)"
