"""The pull secret itself: parse, validate, canonicalise, merge and fingerprint a dockerconfigjson.

`PullSecret` holds the credential; its `repr` and `str` are redacted, and `sensitive_strings()`
lists every form of it (raw auth, decoded `user:password`, passwords, tokens) for log redaction.
Validation errors name the source, the registry and the rule broken, never the credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pullsecret.errors import TerminalError

MAX_PAYLOAD_BYTES = 64 * 1024  # Secret Manager's payload limit
# Registries one pull secret may name (docs/contract.md §5): a real one names a handful; the bound keeps what one
# cluster owner's pull secret costs every other cluster (parsing, redaction, verification) small and known.
MAX_REGISTRIES = 256
_SECRET_FIELDS = ("auth", "password", "identitytoken", "registrytoken")


class InvalidPullSecret(TerminalError):
    """A pull secret that breaks a rule of docs/contract.md §5."""

    default_reason = "InvalidPullSecret"


@dataclass(frozen=True)
class PullSecret:
    """A validated dockerconfigjson in canonical form (sorted keys, compact)."""

    canonical: bytes = field(repr=False)
    registries: tuple[str, ...]

    def __repr__(self) -> str:
        return f"PullSecret(registries={list(self.registries)!r}, fingerprint={self.short_fingerprint!r}, <redacted>)"

    __str__ = __repr__

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical bytes, hex (computed once)."""
        return hashlib.sha256(self.canonical).hexdigest()

    @property
    def short_fingerprint(self) -> str:
        return self.fingerprint[:12]

    def document(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.canonical)
        return parsed

    @cached_property
    def _sensitive(self) -> tuple[str, ...]:
        return tuple(sensitive_strings_of(self.document()))

    def sensitive_strings(self) -> list[str]:
        """Every string whose appearance in output would leak this credential."""
        return list(self._sensitive)

    @cached_property
    def _registry_fingerprints(self) -> tuple[tuple[str, str], ...]:
        # Computed once per object: `canonical` is immutable, and the platform's object serves every event
        # whose cluster has no pull secret of its own (merge returns it as is).
        auths = self.document()["auths"]
        return tuple(
            (registry, hashlib.sha256(canonical_bytes(entry)).hexdigest()[:12]) for registry, entry in auths.items()
        )

    def registry_fingerprints(self) -> dict[str, str]:
        """Per-registry short fingerprints (safe to report: SHA-256 of the canonical entry); a new dict each call."""
        return dict(self._registry_fingerprints)


def canonical_bytes(document: Any) -> bytes:
    # Registry names stay UTF-8, not \u escapes (ensure_ascii=None would do the same: it is only tested for truth).
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sensitive_strings_of(document: Any) -> list[str]:
    """Every credential form in a dockerconfigjson, valid or not (an object, or its JSON text): each secret field,
    an `auth` padded and unpadded, its decoded `user:password` and the password (which may hold `:`).

    Asked before validation too, so that the credentials of a pull secret refused for one bad entry are
    redacted from the event's output all the same. Never raises.
    """
    if isinstance(document, (str, bytes)):
        try:
            document = json.loads(document)
        except (ValueError, RecursionError):
            return []
    return sorted(set(_sensitive(document)))


def _sensitive(document: Any) -> Iterator[str]:
    auths = document.get("auths") if isinstance(document, dict) else None
    if not isinstance(auths, dict):
        return
    for entry in auths.values():
        if not isinstance(entry, dict):
            continue  # a malformed entry hides nothing that follows it
        for key in _SECRET_FIELDS:
            value = entry.get(key)
            if isinstance(value, str) and value:
                yield value
        yield from _basic_forms(entry.get("username"), entry.get("password"))
        auth = entry.get("auth")
        if isinstance(auth, str) and auth:
            yield from _auth_forms(auth)


def _basic_forms(user: Any, password: Any) -> Iterator[str]:
    """A username/password entry's basic form, as registry verification sends it (credential_of): registered
    here, once, with the rest of the pull secret."""
    if isinstance(user, str) and isinstance(password, str) and user and password:
        basic = base64.b64encode(f"{user}:{password}".encode(errors="replace")).decode()
        yield from (basic, basic.rstrip("="), f"{user}:{password}")


def _auth_forms(auth: str) -> Iterator[str]:
    """An `auth` in both base64 padding forms, its decoded text and the password after its first colon."""
    yield auth.rstrip("=")
    yield auth.rstrip("=") + "=" * (-len(auth.rstrip("=")) % 4)
    decoded = _b64decode(auth)
    if decoded is not None:
        text = decoded.decode(errors="replace")
        yield text
        if ":" in text:
            yield text.split(":", 1)[1]  # the password is all after the first colon


def _b64decode(value: str) -> bytes | None:
    padded = value + "=" * (-len(value) % 4)
    try:
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Duplicate(key)
        result[key] = value
    return result


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__()  # parse reports `key` in its own message
        self.key = key


def _safe_name(registry: str) -> str:
    printable = "".join(ch if ch.isprintable() else "?" for ch in registry)
    return printable[:100]


def parse(raw: bytes | str | dict[str, Any], *, source: str) -> PullSecret:
    """Validate a dockerconfigjson (bytes, text or object); raises InvalidPullSecret naming the rule."""
    document = raw if isinstance(raw, dict) else _document_of(raw, source)
    if not isinstance(document, dict):
        raise InvalidPullSecret(f"{source}: the pull secret must be a JSON object with an 'auths' object")
    auths = document.get("auths")
    if not isinstance(auths, dict):
        raise InvalidPullSecret(f"{source}: the pull secret has no 'auths' object")
    if not auths:
        raise InvalidPullSecret(f"{source}: the pull secret's 'auths' is empty; it needs at least one registry")
    if len(auths) > MAX_REGISTRIES:
        raise InvalidPullSecret(
            f"{source}: the pull secret names {len(auths)} registries; at most {MAX_REGISTRIES} are accepted"
        )
    for registry, entry in auths.items():
        _validate_entry(registry, entry, source)
    try:
        canonical = canonical_bytes({"auths": auths})
    except UnicodeEncodeError:  # a string holding a lone surrogate ("\ud800" in the JSON): no UTF-8 form exists
        raise InvalidPullSecret(
            f"{source}: a string of the pull secret is not valid Unicode (a lone surrogate)"
        ) from None
    if len(canonical) > MAX_PAYLOAD_BYTES:
        raise InvalidPullSecret(f"{source}: the pull secret is {len(canonical)} bytes, over the 64 KiB limit")
    return PullSecret(canonical=canonical, registries=tuple(sorted(auths)))


def _document_of(raw: bytes | str, source: str) -> Any:
    """The JSON document of a pull secret's text: UTF-8, within the size limit, keys unique."""
    try:
        size = len(raw.encode() if isinstance(raw, str) else raw)
    except UnicodeEncodeError:
        raise InvalidPullSecret(f"{source}: the pull secret is not valid Unicode text (a lone surrogate)") from None
    if size > MAX_PAYLOAD_BYTES:
        raise InvalidPullSecret(f"{source}: the pull secret is {size} bytes, over the 64 KiB limit")
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw  # UTF-8 only (json.loads would guess UTF-16)
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    except _Duplicate as dup:
        raise InvalidPullSecret(
            f"{source}: the pull secret repeats the key {_safe_name(dup.key)!r}; keys must be unique"
        ) from None
    except UnicodeDecodeError:
        raise InvalidPullSecret(f"{source}: the pull secret is not UTF-8 text") from None
    except (ValueError, RecursionError):
        # RecursionError: nesting deeper than the JSON parser's stack; no pull secret looks like that.
        raise InvalidPullSecret(f"{source}: the pull secret is not valid JSON") from None


def _validate_entry(registry: Any, entry: Any, source: str) -> None:
    name = _safe_name(str(registry))
    if not isinstance(registry, str) or not registry.strip():
        raise InvalidPullSecret(f"{source}: a registry key is empty")
    if not isinstance(entry, dict):
        raise InvalidPullSecret(f"{source}: registry {name!r}: the entry must be a JSON object")
    for key, value in entry.items():
        if not isinstance(value, str):
            raise InvalidPullSecret(f"{source}: registry {name!r}: field {_safe_name(key)!r} must be a string")
    auth = entry.get("auth")
    if auth:
        _validate_auth(auth, name=name, source=source)
        return
    if entry.get("identitytoken") or entry.get("registrytoken"):
        return
    if entry.get("username") and entry.get("password"):
        return
    raise InvalidPullSecret(
        f"{source}: registry {name!r}: the entry has no credential ('auth', 'username'/'password' or 'identitytoken')"
    )


def _validate_auth(auth: str, *, name: str, source: str) -> None:
    """An entry's `auth`: base64 of UTF-8 `user:password`, neither part empty."""
    decoded = _b64decode(auth)
    if decoded is None:
        raise InvalidPullSecret(f"{source}: registry {name!r}: 'auth' is not valid base64")
    try:
        text = decoded.decode()
    except UnicodeDecodeError:
        raise InvalidPullSecret(f"{source}: registry {name!r}: 'auth' does not decode to UTF-8 text") from None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise InvalidPullSecret(f"{source}: registry {name!r}: 'auth' must decode to 'user:password'")


DOCKER_HUB = "docker.io"
# The names that all mean Docker Hub (registry/credentials.py maps them to the host that serves /v2/).
DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def canonical_registry(key: str) -> str:
    """The canonical form of a registry key: no scheme, no trailing slash, lower case, Docker Hub as docker.io.

    `https://index.docker.io/v1/`, `registry-1.docker.io` and `docker.io` all become `docker.io` (the
    path of a Docker Hub key is the legacy API version, not a repository). Other paths are kept
    (a key may scope a credential to a repository namespace).
    """
    text = key.strip().lower()
    for scheme in ("https://", "http://"):
        if text.startswith(scheme):
            text = text[len(scheme) :]
            break
    text = text.rstrip("/")  # (the text is lower case: a mutant adding "X" to the characters stripped is no change)
    host, _, _path = text.partition("/")
    if host in DOCKER_HUB_ALIASES:
        return DOCKER_HUB
    return text


def _entry_fingerprint(entry: Any) -> str:
    return hashlib.sha256(canonical_bytes(entry)).hexdigest()[:12]


def canonicalize(auths: dict[str, Any], *, source: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Fold registry keys to their canonical form; returns (auths, shadowed duplicates).

    When several keys of one source fold to the same registry, the key already in canonical form wins,
    else the first key in sorted order; the others are reported as shadowed (names and fingerprints only).
    """
    groups: dict[str, list[str]] = {}
    for key in sorted(auths):
        groups.setdefault(canonical_registry(key), []).append(key)
    folded: dict[str, Any] = {}
    shadowed: list[dict[str, Any]] = []
    for registry, keys in sorted(groups.items()):
        kept = registry if registry in keys else keys[0]
        folded[registry] = auths[kept]
        for other in keys:
            if other == kept:
                continue
            shadowed.append(
                {
                    "source": source,
                    "registry": _safe_name(registry),
                    "kept": _safe_name(kept),
                    "shadowed": _safe_name(other),
                    "kept_fingerprint": _entry_fingerprint(auths[kept]),
                    "shadowed_fingerprint": _entry_fingerprint(auths[other]),
                    "same_entry": auths[kept] == auths[other],  # not "credential": the API masks such data keys
                }
            )
    return folded, shadowed


@dataclass(frozen=True)
class MergeResult:
    secret: PullSecret
    conflicts: tuple[str, ...]  # registries defined by both sources with different entries
    # per conflict: registry, both sides' short fingerprints, the winning side (never a credential)
    conflict_details: tuple[dict[str, str], ...] = ()
    # keys of one source that fold to the same canonical registry (canonical_keys=True only)
    shadowed: tuple[dict[str, Any], ...] = ()


def merge(
    platform: PullSecret | None,
    cluster: PullSecret | None,
    *,
    precedence: str = "platform",
    canonical_keys: bool = False,
) -> MergeResult:
    """Merge per registry; on a conflicting registry the `precedence` side wins and the conflict is listed.

    With `canonical_keys`, registry keys are compared and written in canonical form (see
    `canonical_registry`), so `https://quay.io/` and `quay.io` are one registry. Raises InvalidPullSecret.
    """
    if platform is None and cluster is None:
        raise InvalidPullSecret("no pull secret source: neither PULL_SECRET_SOURCE nor spec.pullSecret is set")
    if (platform is None or cluster is None) and not canonical_keys:
        only = platform or cluster
        assert only is not None
        return MergeResult(only, ())  # one side, taken as it is: nothing to parse
    sides, shadowed = _sides(platform, cluster, canonical_keys=canonical_keys)
    base = sides.get("platform", {})
    other = sides.get("cluster", {})
    conflicts = tuple(sorted(r for r in set(base) & set(other) if base[r] != other[r]))
    details = _conflict_details(conflicts, base=base, other=other, precedence=precedence)
    winner, loser = (base, other) if precedence == "platform" else (other, base)
    merged = dict(loser)
    merged.update(winner)
    doc = {"auths": merged}
    canonical = canonical_bytes(doc)
    if len(canonical) > MAX_PAYLOAD_BYTES:
        raise InvalidPullSecret(f"merged pull secret is {len(canonical)} bytes, over the 64 KiB limit")
    return MergeResult(
        PullSecret(canonical=canonical, registries=tuple(sorted(merged))), conflicts, details, tuple(shadowed)
    )


def _sides(
    platform: PullSecret | None, cluster: PullSecret | None, *, canonical_keys: bool
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Each present source's `auths` by side name (canonicalized when asked), and the keys that folding shadowed."""
    sides: dict[str, dict[str, Any]] = {}
    shadowed: list[dict[str, Any]] = []
    for name, secret in (("platform", platform), ("cluster", cluster)):
        if secret is None:
            continue
        auths = secret.document()["auths"]
        if canonical_keys:
            auths, hidden = canonicalize(auths, source=name)
            shadowed.extend(hidden)
        sides[name] = auths
    return sides, shadowed


def _conflict_details(
    conflicts: tuple[str, ...], *, base: dict[str, Any], other: dict[str, Any], precedence: str
) -> tuple[dict[str, str], ...]:
    """Per conflicting registry: its name, both sides' short fingerprints and the winning side (no credential)."""
    return tuple(
        {
            "registry": _safe_name(r),
            "platform": _entry_fingerprint(base[r]),
            "cluster": _entry_fingerprint(other[r]),
            "winner": precedence,
        }
        for r in conflicts
    )
