"""WWW-Authenticate challenges (RFC 7235 §4.1), parsed as the Docker registry clients parse them.

As distribution's registry/client/auth/challenge/authchallenge.go (parseValueAndParams) and
go-containerregistry's ping (pick): pure text in, challenges out; a malformed header never raises.
The registry handshake (pullsecret/registry/verification.py) is the one user.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Challenge:
    """One auth challenge of a WWW-Authenticate header: the scheme (lower case) and its parameters."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)


# RFC 7230 tchar: any visible ASCII except separators (distribution's octetTypes isToken).
_SEPARATORS = frozenset(' \t"(),/:;<=>?@[]\\{}')
_SPACE = frozenset(" \t\r\n")


def _is_token_char(ch: str) -> bool:
    return "!" <= ch <= "~" and ch not in _SEPARATORS  # visible ASCII: 0x21-0x7e


def _token(text: str, i: int) -> tuple[str, int]:
    j = i
    while j < len(text) and _is_token_char(text[j]):
        j += 1
    return text[i:j], j


def _skip(text: str, i: int, chars: frozenset[str] = _SPACE) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _quoted(text: str, i: int) -> tuple[str | None, int]:
    """A quoted-string starting at text[i] == '"' (backslash escapes); None when unterminated."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            out.append(text[j + 1])
            j += 2
            continue
        if ch == '"':
            return "".join(out), j + 1
        out.append(ch)
        j += 1
    return None, j


def parse_challenges(values: Iterable[str]) -> list[Challenge]:
    """Every challenge of the given WWW-Authenticate header values (RFC 7235 §4.1).

    As distribution's parseValueAndParams: the scheme and parameter names are case-insensitive
    (lower-cased), values are tokens or quoted strings. One header value may hold several challenges
    separated by commas (HTTP clients join repeated headers that way); a token not followed by `=`
    starts the next challenge. Parsing stops quietly at the first malformed part, keeping what came before.
    """
    found: list[Challenge] = []
    for text in values:
        i = _skip(text, 0, _SPACE | {","})
        while i < len(text):  # (the body stops at the end as well: `<=` here and below changes nothing)
            scheme, i = _token(text, i)
            if not scheme:
                break
            params: dict[str, str] = {}
            i = _skip(text, i)
            while i < len(text):
                start = _skip(text, i, _SPACE | {","})
                name, j = _token(text, start)
                k = _skip(text, j)
                if not name or k >= len(text) or text[k] != "=":
                    i = start
                    break  # the next challenge's scheme (or the end)
                k = _skip(text, k + 1)
                if k < len(text) and text[k] == '"':
                    value, k = _quoted(text, k)
                    if value is None:
                        i = len(text)
                        break
                else:
                    value, k = _token(text, k)
                    while k < len(text) and text[k] == "=":  # token68 padding (e.g. Negotiate abc==)
                        k += 1
                params[name.lower()] = value
                i = _skip(text, k)
            found.append(Challenge(scheme.lower(), params))  # i is past the separators already (or at the end)
    return found


def pick_challenge(challenges: Iterable[Challenge]) -> Challenge | None:
    """The first challenge the handshake can answer (basic or bearer), as go-containerregistry's ping picks."""
    for challenge in challenges:
        if challenge.scheme in ("basic", "bearer"):
            return challenge
    return None
