"""Validation, canonical form, merge and redaction of dockerconfigjson documents."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from pullsecret.model.dockerconfig import (
    MAX_REGISTRIES,
    InvalidPullSecret,
    canonical_bytes,
    merge,
    parse,
    sensitive_strings_of,
)

AUTH = base64.b64encode(b"robot:s3cr3t-pa55").decode()


def doc(**auths: object) -> str:
    return json.dumps({"auths": auths})


def test_valid_forms_and_canonical_bytes() -> None:
    secret = parse(
        doc(
            **{
                "quay.io": {"auth": AUTH, "email": "a@b.c"},
                "registry.redhat.io": {"username": "u", "password": "p4ssw0rd"},
                "gcr.io": {"identitytoken": "tok-123456"},
            }
        ),
        source="test",
    )
    assert secret.registries == ("gcr.io", "quay.io", "registry.redhat.io")
    assert secret.canonical.startswith(b'{"auths":{"gcr.io"')
    # same content, other key order or whitespace -> same fingerprint
    again = parse(
        json.dumps(
            {
                "auths": {
                    "registry.redhat.io": {"password": "p4ssw0rd", "username": "u"},
                    "gcr.io": {"identitytoken": "tok-123456"},
                    "quay.io": {"email": "a@b.c", "auth": AUTH},
                }
            },
            indent=4,
        ),
        source="t",
    )
    assert again.fingerprint == secret.fingerprint


def test_unpadded_base64_auth_is_accepted() -> None:
    unpadded = AUTH.rstrip("=")
    assert unpadded != AUTH  # the fixture really has padding to drop
    secret = parse(doc(**{"quay.io": {"auth": unpadded}}), source="t")
    assert secret.registries == ("quay.io",)
    assert json.loads(secret.canonical) == {"auths": {"quay.io": {"auth": unpadded}}}  # kept as given
    # Decoded, not waved through: unpadded base64 of a value without "user:password" is still refused.
    for no_password in (b"nocolon", b"nocolon!"):
        with pytest.raises(InvalidPullSecret, match="user:password"):
            parse(doc(**{"quay.io": {"auth": base64.b64encode(no_password).decode().rstrip("=")}}), source="t")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("nope", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ("{}", "no 'auths' object"),
        ('{"auths": {}}', "'auths' is empty"),
        ('{"auths": {"quay.io": "x"}}', "must be a JSON object"),
        ('{"auths": {"quay.io": {"auth": "***"}}}', "not valid base64"),
        (doc(**{"quay.io": {"auth": base64.b64encode(b"nocolon").decode()}}), "user:password"),
        (doc(**{"quay.io": {"auth": base64.b64encode(b":onlypass").decode()}}), "user:password"),
        (doc(**{"quay.io": {"email": "a@b"}}), "has no credential"),
        ('{"auths": {"quay.io": {"auth": "' + AUTH + '"}, "quay.io": {"auth": "' + AUTH + '"}}}', "repeats the key"),
        (doc(**{"quay.io": {"auth": 5}}), "must be a string"),
        ('{"auths": {"": {"auth": "' + AUTH + '"}}}', "registry key is empty"),
        ("x" * (64 * 1024 + 1), "over the 64 KiB limit"),
    ],
)
def test_invalid_documents_name_the_rule_not_the_secret(raw: str, message: str) -> None:
    with pytest.raises(InvalidPullSecret) as caught:
        parse(raw, source="spec.pullSecret.data")
    assert message in caught.value.message
    assert "spec.pullSecret.data" in caught.value.message
    assert "s3cr3t" not in str(caught.value) and AUTH not in str(caught.value)


def test_repr_is_redacted_and_sensitive_strings_cover_every_form() -> None:
    secret = parse(doc(**{"quay.io": {"auth": AUTH}, "r.io": {"username": "u", "password": "hunter2pw"}}), source="t")
    text = repr(secret) + str(secret) + f"{secret}"
    for leak in (AUTH, "s3cr3t-pa55", "robot:s3cr3t-pa55", "hunter2pw"):
        assert leak not in text
        assert leak in secret.sensitive_strings()


def test_merge_platform_wins_and_reports_conflicts() -> None:
    other = base64.b64encode(b"other:pw-other").decode()
    platform = parse(doc(**{"quay.io": {"auth": AUTH}, "registry.redhat.io": {"auth": AUTH}}), source="p")
    cluster = parse(doc(**{"quay.io": {"auth": other}, "my.registry": {"auth": other}}), source="c")
    result = merge(platform, cluster, precedence="platform")
    merged = result.secret.document()["auths"]
    assert result.conflicts == ("quay.io",)
    assert merged["quay.io"]["auth"] == AUTH
    assert set(merged) == {"quay.io", "registry.redhat.io", "my.registry"}
    assert merge(platform, cluster, precedence="cluster").secret.document()["auths"]["quay.io"]["auth"] == other


def test_merge_without_any_source_is_terminal() -> None:
    with pytest.raises(InvalidPullSecret, match="no pull secret source"):
        merge(None, None)


def test_registry_fingerprints_are_short_and_secret_free() -> None:
    secret = parse(doc(**{"quay.io": {"auth": AUTH}}), source="t")
    prints = secret.registry_fingerprints()
    assert list(prints) == ["quay.io"] and len(prints["quay.io"]) == 12


def test_registry_fingerprints_computed_once_stay_each_entrys_own_and_a_callers_edit_changes_none() -> None:
    """They are computed once per PullSecret (its canonical bytes never change): each call still answers a
    new dict, so a caller editing one cannot change what the next event is told."""
    secret = parse(doc(**{"quay.io": {"auth": AUTH}, "gcr.io": {"identitytoken": "tok-123456"}}), source="t")
    first = secret.registry_fingerprints()
    assert first == {
        registry: hashlib.sha256(canonical_bytes(entry)).hexdigest()[:12]
        for registry, entry in secret.document()["auths"].items()
    }
    first["quay.io"] = "edited"
    del first["gcr.io"]
    assert secret.registry_fingerprints()["quay.io"] != "edited"
    assert set(secret.registry_fingerprints()) == {"quay.io", "gcr.io"}


@pytest.mark.parametrize("side", ["platform", "cluster"])
def test_merge_of_one_source_with_default_settings_is_that_source(side: str) -> None:
    """The production path when only PULL_SECRET_SOURCE (or only spec.pullSecret) is set."""
    only = parse(doc(**{"https://quay.io/": {"auth": AUTH}, "gcr.io": {"identitytoken": "tok-123456"}}), source="t")
    merged = merge(only, None) if side == "platform" else merge(None, only)
    assert merged.secret == only  # keys as given: no folding without canonical_keys
    assert merged.secret.registries == ("gcr.io", "https://quay.io/")
    assert merged.conflicts == ()
    assert merged.conflict_details == ()
    assert merged.shadowed == ()


def test_merge_of_one_source_with_canonical_keys_folds_its_keys() -> None:
    only = parse(doc(**{"https://quay.io/": {"auth": AUTH}, "quay.io": {"auth": AUTH}}), source="t")
    merged = merge(None, only, canonical_keys=True)
    assert merged.secret.registries == ("quay.io",)
    assert [d["shadowed"] for d in merged.shadowed] == ["https://quay.io/"]
    assert merged.conflicts == ()


@pytest.mark.parametrize("entry", [{"username": "u"}, {"password": "p4ssw0rd"}, {"username": "", "password": "p"}])
def test_username_without_password_or_the_reverse_is_no_credential(entry: dict[str, str]) -> None:
    with pytest.raises(InvalidPullSecret, match="has no credential"):
        parse(doc(**{"quay.io": entry}), source="t")


def test_sensitive_strings_of_lists_every_form_and_nothing_else() -> None:
    """Exactly the credential forms, past a malformed entry, for each field, both paddings, decoded and password."""
    unpadded = base64.b64encode(b"ab:c:d").decode().rstrip("=")  # 6 bytes: no padding either way
    short = base64.b64encode(b"ab:cd").decode()  # "YWI6Y2Q=": one "=" of padding
    document = {
        "auths": {
            "a.io": "not an entry",  # malformed: skipped, the entries after it still count
            "b.io": {
                "auth": AUTH,
                "password": "pw-1",
                "identitytoken": "it-1",
                "registrytoken": "rt-1",
                "username": "u",
            },
            "c.io": {"auth": short.rstrip("=")},  # given unpadded: the padded form is listed too
            "d.io": {"auth": unpadded},
            "e.io": {"auth": "***"},  # not base64: its two padding forms, nothing decoded
            "f.io": {"auth": base64.b64encode(b"\xff:\xfe").decode()},  # not UTF-8: decoded with replacement
            "g.io": {"auth": base64.b64encode(b"nocolon").decode()},  # no colon: no password part
            "h.io": {"password": "", "identitytoken": 7, "auth": ""},  # empty or not text: nothing
        }
    }
    f_auth = base64.b64encode(b"\xff:\xfe").decode()
    g_auth = base64.b64encode(b"nocolon").decode()
    expected = {
        AUTH, AUTH.rstrip("="), "robot:s3cr3t-pa55", "s3cr3t-pa55", "pw-1", "it-1", "rt-1",
        short, short.rstrip("="), "ab:cd", "cd",
        unpadded, "ab:c:d", "c:d",  # the password is all after the first colon
        "***", "***=",  # the padded form is listed whether or not it decodes
        f_auth, "\ufffd:\ufffd", "\ufffd",
        g_auth, g_auth.rstrip("="), "nocolon",
        # b.io's username and password: the basic form registry verification sends, both paddings, and its text
        base64.b64encode(b"u:pw-1").decode(), base64.b64encode(b"u:pw-1").decode().rstrip("="), "u:pw-1",
    }  # fmt: skip
    assert AUTH.endswith("=") and short.endswith("=") and g_auth.endswith("=")  # both padding forms are exercised
    listed = sensitive_strings_of(document)
    assert listed == sorted(expected)
    assert sensitive_strings_of(json.dumps(document)) == listed
    assert sensitive_strings_of(json.dumps(document).encode()) == listed


@pytest.mark.parametrize(
    "document", ["not json", b"[1", "[" * 100_000, "[]", '{"auths": []}', '{"auths": {"q.io": 5}}', {}, 7]
)
def test_sensitive_strings_of_anything_else_is_empty_and_never_raises(document: object) -> None:
    assert sensitive_strings_of(document) == []


def test_pull_secret_sensitive_strings_are_those_of_its_document() -> None:
    secret = parse(doc(**{"quay.io": {"auth": AUTH}, "gcr.io": {"identitytoken": "tok-123456"}}), source="t")
    expected = sorted({AUTH, AUTH.rstrip("="), "robot:s3cr3t-pa55", "s3cr3t-pa55", "tok-123456"})
    assert secret.sensitive_strings() == expected
    assert secret.sensitive_strings() is not secret.sensitive_strings()  # a fresh list: callers may extend it


_NO_CREDENTIAL = "the entry has no credential ('auth', 'username'/'password' or 'identitytoken')"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("nope", "s: the pull secret is not valid JSON"),
        ("[" * 60_000, "s: the pull secret is not valid JSON"),  # nested deeper than the parser goes
        (b"\xff{}", "s: the pull secret is not UTF-8 text"),
        ("x" * (64 * 1024 + 1), "s: the pull secret is 65537 bytes, over the 64 KiB limit"),
        ("é" * (32 * 1024 + 1), "s: the pull secret is 65538 bytes, over the 64 KiB limit"),  # bytes, not characters
        ('{"a": 1, "a": 2}', "s: the pull secret repeats the key 'a'; keys must be unique"),
        ("[]", "s: the pull secret must be a JSON object with an 'auths' object"),
        ('{"auths": []}', "s: the pull secret has no 'auths' object"),
        ('{"auths": {}}', "s: the pull secret's 'auths' is empty; it needs at least one registry"),
        ('{"auths": {" ": {"auth": "' + AUTH + '"}}}', "s: a registry key is empty"),
        ('{"auths": {"q\\n.io": 1}}', "s: registry 'q?.io': the entry must be a JSON object"),
        (
            '{"auths": {"q.io": {"auth": "' + AUTH + '", "e\\u0000": 1}}}',
            "s: registry 'q.io': field 'e?' must be a string",
        ),
        ('{"auths": {"q.io": {"auth": "***"}}}', "s: registry 'q.io': 'auth' is not valid base64"),
        (
            doc(**{"q.io": {"auth": base64.b64encode(b"\xff:\xfe").decode()}}),
            "s: registry 'q.io': 'auth' does not decode to UTF-8 text",
        ),
        (
            doc(**{"q.io": {"auth": base64.b64encode(b"user:").decode()}}),
            "s: registry 'q.io': 'auth' must decode to 'user:password'",
        ),
        (doc(**{"q.io": {"email": "a@b"}}), f"s: registry 'q.io': {_NO_CREDENTIAL}"),
        (doc(**{"q.io": {"identitytoken": "", "registrytoken": ""}}), f"s: registry 'q.io': {_NO_CREDENTIAL}"),
    ],
)
def test_each_rule_refuses_with_its_own_message(raw: str | bytes, message: str) -> None:
    with pytest.raises(InvalidPullSecret) as caught:
        parse(raw, source="s")
    assert caught.value.message == message


@pytest.mark.parametrize(
    "entry",
    [
        {"auth": AUTH},
        {"auth": "", "identitytoken": "it-1"},
        {"registrytoken": "rt-1"},
        {"auth": "", "username": "u", "password": "p"},
    ],
)
def test_each_credential_form_is_accepted(entry: dict[str, str]) -> None:
    assert parse(doc(**{"q.io": entry}), source="s").document() == {"auths": {"q.io": entry}}


def test_a_document_parses_as_bytes_text_and_object_alike() -> None:
    document = {"auths": {"q.io": {"auth": AUTH}}, "other": 1}
    secrets = [parse(form, source="s") for form in (json.dumps(document), json.dumps(document).encode(), document)]
    assert {s.canonical for s in secrets} == {b'{"auths":{"q.io":{"auth":"' + AUTH.encode() + b'"}}}'}
    assert secrets[0].fingerprint == hashlib.sha256(secrets[0].canonical).hexdigest()
    assert secrets[0].short_fingerprint == secrets[0].fingerprint[:12]
    assert (
        repr(secrets[0]) == f"PullSecret(registries=['q.io'], fingerprint={secrets[0].fingerprint[:12]!r}, <redacted>)"
    )
    assert (
        parse("{" + '"auths": {"é.io": {"auth": "' + AUTH + '"}}}', source="s").canonical
        == ('{"auths":{"é.io":{"auth":"' + AUTH + '"}}}').encode()
    )  # UTF-8, not \\u escapes


def test_a_canonical_document_over_the_limit_is_refused() -> None:
    big = {"auths": {f"r{i:03}.io": {"auth": AUTH, "email": "x" * 400} for i in range(200)}}
    assert len(json.dumps(big, separators=(",", ":"))) > 64 * 1024
    with pytest.raises(InvalidPullSecret) as caught:
        parse(big, source="s")
    assert (
        caught.value.message.startswith("s: the pull secret is ")
        and "bytes, over the 64 KiB limit" in caught.value.message
    )


def test_a_pull_secret_naming_more_registries_than_the_bound_is_refused() -> None:
    at_bound = {"auths": {f"r{i:03}.io": {"auth": AUTH} for i in range(MAX_REGISTRIES)}}
    assert len(parse(at_bound, source="s").registries) == MAX_REGISTRIES
    over = {"auths": {**at_bound["auths"], "one-more.io": {"auth": AUTH}}}
    with pytest.raises(InvalidPullSecret, match=f"names {MAX_REGISTRIES + 1} registries; at most {MAX_REGISTRIES}"):
        parse(over, source="s")


def _fill(auths: dict[str, object], target: int) -> dict[str, object]:
    """`auths` with an `email` padded so that the canonical document is exactly `target` bytes."""
    empty = {r: {**e, "email": ""} if r == "a.io" else e for r, e in auths.items()}  # type: ignore[dict-item]
    pad = target - len(canonical_bytes({"auths": empty}))
    return {r: {**e, "email": "x" * pad} if r == "a.io" else e for r, e in auths.items()}  # type: ignore[dict-item]


def test_the_size_limits_admit_exactly_64_kib() -> None:
    raw = doc(**{"a.io": {"auth": AUTH}})
    assert parse(raw + " " * (64 * 1024 - len(raw)), source="s").registries == ("a.io",)
    exact = {"auths": _fill({"a.io": {"auth": AUTH}}, 64 * 1024)}
    assert len(parse(exact, source="s").canonical) == 64 * 1024
    over = {"auths": _fill({"a.io": {"auth": AUTH}}, 64 * 1024 + 1)}
    with pytest.raises(InvalidPullSecret) as caught:
        parse(over, source="s")
    assert caught.value.message == "s: the pull secret is 65537 bytes, over the 64 KiB limit"


def test_the_merged_size_limit_admits_exactly_64_kib() -> None:
    cluster = parse(doc(**{"b.io": {"auth": AUTH}}), source="c")
    for size in (64 * 1024, 64 * 1024 + 1):
        auths = _fill({"a.io": {"auth": AUTH}, "b.io": {"auth": AUTH}}, size)
        platform = parse({"auths": {"a.io": auths["a.io"]}}, source="p")
        if size == 64 * 1024:
            assert len(merge(platform, cluster).secret.canonical) == size
        else:
            with pytest.raises(InvalidPullSecret) as caught:
                merge(platform, cluster)
            assert caught.value.message == "merged pull secret is 65537 bytes, over the 64 KiB limit"


def test_merge_without_a_source_names_both_settings() -> None:
    with pytest.raises(InvalidPullSecret) as caught:
        merge(None, None)
    assert caught.value.message == "no pull secret source: neither PULL_SECRET_SOURCE nor spec.pullSecret is set"


def test_merge_by_default_lets_the_platform_win_and_says_so() -> None:
    other = base64.b64encode(b"other:pw-other").decode()
    platform = parse(doc(**{"q.io": {"auth": AUTH}}), source="p")
    cluster = parse(doc(**{"q.io": {"auth": other}}), source="c")
    result = merge(platform, cluster)
    assert result.secret.document() == {"auths": {"q.io": {"auth": AUTH}}}
    assert [d["winner"] for d in result.conflict_details] == ["platform"]


def test_a_shadowed_key_is_reported_with_both_fingerprints() -> None:
    hidden = {"auth": base64.b64encode(b"other:pw-other").decode()}
    only = parse(doc(**{"quay.io": {"auth": AUTH}, "https://quay.io/": hidden}), source="c")
    assert merge(None, only, canonical_keys=True).shadowed == (
        {
            "source": "cluster",
            "registry": "quay.io",
            "kept": "quay.io",
            "shadowed": "https://quay.io/",
            "kept_fingerprint": hashlib.sha256(canonical_bytes({"auth": AUTH})).hexdigest()[:12],
            "shadowed_fingerprint": hashlib.sha256(canonical_bytes(hidden)).hexdigest()[:12],
            "same_entry": False,
        },
    )


def test_a_repeated_key_is_named_safely_and_shortly() -> None:
    with pytest.raises(InvalidPullSecret) as caught:
        parse('{"auths": {}, "' + "\\u0000" + "k" * 150 + '": 1, "' + "\\u0000" + "k" * 150 + '": 2}', source="s")
    assert caught.value.message == f"s: the pull secret repeats the key {'?' + 'k' * 99!r}; keys must be unique"


def test_the_password_is_all_after_the_first_colon() -> None:
    colon = base64.b64encode(b"a::").decode()  # password ":"
    assert parse(doc(**{"q.io": {"auth": colon}}), source="s").registries == ("q.io",)
    assert sensitive_strings_of(doc(**{"q.io": {"auth": colon}})) == sorted({colon, colon.rstrip("="), "a::", ":"})


def test_utf_16_json_is_not_utf_8_text() -> None:
    with pytest.raises(InvalidPullSecret) as caught:
        parse(doc(**{"q.io": {"auth": AUTH}}).encode("utf-16"), source="s")
    assert caught.value.message == "s: the pull secret is not UTF-8 text"


def test_only_the_trailing_padding_is_dropped_for_the_unpadded_form() -> None:
    listed = sensitive_strings_of({"auths": {"q.io": {"auth": "abcX"}}})
    assert "abcX" in listed
    assert not [s for s in listed if s.startswith("abc") and s != "abcX"]
