"""A service's answer text on its way to a message: scrubbed before it is cut, credential shapes redacted even when
never registered, and the process's own tokens (`Held`) scrubbed wherever an event's strings are (issue 50)."""

from __future__ import annotations

import pytest

from pullsecret import logs
from pullsecret.redaction import REDACTED, Held, Redactor, bounded, redact, shaped

JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl-_x"


def test_a_secret_straddling_the_cut_leaves_no_prefix() -> None:
    """Cut first, a 13-character prefix of the secret survived (the issue's reproduction); scrubbed first, none."""
    secret = "robot-token-" + "Q" * 30
    redactor = Redactor()
    redactor.add([secret])
    text = "." * 187 + secret + " (not accepted here)"
    shown = bounded(text, 200, [redactor])
    assert shown == "." * 187 + REDACTED + " (n"  # cut after the replacement: nothing of the secret
    assert secret[:4] not in shown
    assert redactor.scrub(text[:200]) == text[:200]  # what cutting first gave: the prefix, unscrubbable


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"it carried Authorization: Bearer {JWT} ok", f"it carried Authorization: Bearer {REDACTED} ok"),
        ("authorization: ServiceAccount s3cr3t-opaque-42 end", f"authorization: ServiceAccount {REDACTED} end"),
        ('{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}', f'{{"Authorization": "Basic {REDACTED}"}}'),
        ("BEARER abcdefgh.ijkl/mn+o~p_q-r==", f"BEARER {REDACTED}"),
        (
            '{\\"authorization\\": \\"ServiceAccount s3cr3t-opaque\\"}',
            f'{{\\"authorization\\": \\"ServiceAccount {REDACTED}\\"}}',
        ),
        (f"a token {JWT} alone", f"a token {REDACTED} alone"),
        ("eyJhbGci.eyJz.", f"{REDACTED}"),  # a JWS with an empty signature still is one
    ],
)
def test_credential_shapes_are_redacted_unregistered(text: str, shown: str) -> None:
    assert redact(text, [], shapes=True) == shown
    assert redact(text, []) == text  # shapes only where asked: answer text


@pytest.mark.parametrize(
    "text",
    [
        'WWW-Authenticate: Bearer realm="https://auth.example.com/token",service="registry"',
        "Bearer realm=x",
        "send a Bearer token",
        "Bearer 1234567",  # shorter than 8: a word, not a credential
        "the eyJ prefix alone, eyJabc.def.gh",  # parts shorter than 4: not a JWS
        "the ServiceAccount hyperfleet/pullsecret-adapter is refused",  # a scheme name, not after Authorization
    ],
)
def test_texts_that_only_look_close_are_left_alone(text: str) -> None:
    assert shaped(text) == []
    assert bounded(text, 500, []) == text


def test_shapes_and_registered_strings_overlapping_are_one_span() -> None:
    """A registered string that overlaps a shaped token: one REDACTED, nothing left of either."""
    redactor = Redactor()
    redactor.add(["tail-of-it XYZ"])
    text = "Bearer abcdefgh-tail-of-it XYZ!"
    assert redact(text, [redactor], shapes=True) == f"Bearer {REDACTED}!"
    assert redact(text, [redactor]) == f"Bearer abcdefgh-{REDACTED}!"


def test_every_redactor_given_is_applied_and_spans_are_united() -> None:
    first, second = Redactor(), Redactor()
    first.add(["abcdefgh"])
    second.add(["efghijkl"])
    assert redact("x abcdefghijkl y abcdefgh z efghijkl", [first, second]) == (
        f"x {REDACTED} y {REDACTED} z {REDACTED}"
    )
    assert redact("nothing here", [first, second], shapes=True) == "nothing here"


def test_bounded_text_is_printable_and_cut_to_its_limit() -> None:
    redactor = Redactor()
    redactor.add(["tab\tsecret"])
    assert bounded("a\x1b[31mb\nc tab\tsecret", 100, [redactor]) == f"a?[31mb?c {REDACTED}"
    assert bounded("abcdef", 3, []) == "abc"
    assert bounded("", 3, [redactor]) == ""


def test_occurrences_are_every_registered_span_unmerged() -> None:
    redactor = Redactor()
    assert redactor.occurrences("abcdefgh") == []
    redactor.add(["abcd", "cdef"])
    assert sorted(redactor.occurrences("abcdef abcd")) == [(0, 4), (2, 6), (7, 11)]
    assert redactor.occurrences("nothing") == []
    assert len(redactor) == 2 and len(Redactor()) == 0


def test_held_keeps_the_newest_32_and_a_token_held_again_is_the_newest() -> None:
    held = Held()
    tokens = [f"token-{i:02d}-value" for i in range(32)]
    held.add(tokens)
    assert all(held.redactor.scrub(t) == REDACTED for t in tokens)
    held.add([tokens[0], "token-32-value"])  # tokens[0] used again: the newest, so tokens[1] goes next
    assert held.redactor.scrub(tokens[1]) == tokens[1]
    assert held.redactor.scrub(tokens[0]) == REDACTED and held.redactor.scrub("token-32-value") == REDACTED
    assert all(held.redactor.scrub(t) == REDACTED for t in tokens[2:])
    assert repr(held) == "Held(32 credentials)"


def test_held_skips_short_values_and_goes_on_with_the_rest() -> None:
    held = Held(keep=3)
    held.add(["", "abc", "abcd", "longer-token"])
    assert repr(held) == "Held(2 credentials)"  # "" and "abc" (shorter than MIN_SECRET) not held
    assert held.redactor.scrub("abc abcd longer-token") == f"abc {REDACTED} {REDACTED}"
    held.add(["third-token", "fourth-token"])  # over keep=3: "abcd" goes, the oldest
    assert held.redactor.scrub("abcd longer-token third-token fourth-token") == f"abcd {REDACTED} {REDACTED} {REDACTED}"
    assert "token" not in repr(held) and repr(held) == "Held(3 credentials)"
    assert held.values() == ["longer-token", "third-token", "fourth-token"]  # oldest first, a copy
    held.values().clear()
    assert len(held.values()) == 3


def test_logs_scrub_a_held_token_in_and_out_of_an_event_and_shapes_in_answer_text() -> None:
    token = "held-by-the-process-0123456789"
    logs.hold([token])
    assert logs.scrub(f"outside any event: {token}") == f"outside any event: {REDACTED}"
    with logs.event_context(labels={}, trace=None):
        logs.protect(["event-own-secret"])
        assert logs.scrub(f"{token} and event-own-secret") == f"{REDACTED} and {REDACTED}"
        assert logs.answer_text("." * 190 + token, 200) == "." * 190 + REDACTED
        assert logs.scrubbed({"message": [token], "n": 3}) == {"message": [REDACTED], "n": 3}
    assert logs.answer_text(f"Authorization: Bearer {JWT}", 500) == f"Authorization: Bearer {REDACTED}"
    with logs.event_context(labels={}, trace=None) as ctx:
        logs.hold(["minted-during-the-event-0123"])  # a token minted while an event runs joins its redactor
        assert ctx.redactor.scrub(f"{token} minted-during-the-event-0123") == f"{REDACTED} {REDACTED}"
