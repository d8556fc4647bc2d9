"""The HyperFleet API token file: read by content on a timer and after a refusal; never shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pullsecret.errors import TransientError
from pullsecret.identity.bearer import BearerToken


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def write_keeping_mtime(path: Path, text: str) -> None:
    before = os.stat(path)
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_the_file_is_read_again_by_content_on_the_timer(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("first-token\n", encoding="utf-8")
    clock = Clock()
    token = BearerToken(str(path), max_age_s=5.0, clock=clock)
    assert token.current() == "first-token"
    write_keeping_mtime(path, "second-token\n")
    clock.now += 4.9
    assert token.current() == "first-token"  # within the timer: no read
    clock.now += 0.2
    assert token.current() == "second-token"  # same mtime, new content: read by content


def test_a_refusal_reads_the_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("first-token", encoding="utf-8")
    token = BearerToken(str(path), max_age_s=3600.0, clock=Clock())
    assert token.current() == "first-token"
    assert token.refresh("first-token") is False  # unchanged: nothing new to try
    write_keeping_mtime(path, "second-token")
    assert token.refresh("first-token") is True
    assert token.current() == "second-token"
    assert token.refresh("first-token") is True  # another caller's refusal of the old token: the new one is held


def test_the_token_never_shows_and_a_missing_file_is_transient(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("Sup3r-Secret-HF-Token", encoding="utf-8")
    token = BearerToken(str(path))
    token.current()
    assert "Sup3r" not in repr(token) and "Sup3r" not in str(vars(token).keys())
    path.unlink()
    with pytest.raises(TransientError) as missing:
        BearerToken(str(path)).current()
    assert missing.value.reason == "CredentialsUnavailable"
    path.write_text("  \n", encoding="utf-8")
    with pytest.raises(TransientError):
        BearerToken(str(path)).current()


def test_a_token_read_from_its_file_is_scrubbed_from_any_text_even_outside_an_event(tmp_path: Path) -> None:
    """Registered when read (logs.hold): a service that quotes it back has it scrubbed, in an event or in the CLI."""
    from pullsecret import logs

    path = tmp_path / "token"
    path.write_text("file-token-never-printed-0123\n", encoding="utf-8")
    token = BearerToken(str(path)).current()
    assert logs.scrub(f"it carried {token}") == "it carried [REDACTED]"
    assert logs.answer_text("." * 195 + token, 200) == "." * 195 + "[REDA"
