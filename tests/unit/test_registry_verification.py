"""The pure parts of registry verification: challenge parsing, registry names, credentials, verdicts."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pullsecret import configured
from pullsecret.delivery.direct.reports import WORDING
from pullsecret.errors import ConfigError
from pullsecret.model import status
from pullsecret.registry.credentials import Credential, beyond_per_host, credential_of, hostname_of, registry_host
from pullsecret.registry.handshake import token_of
from pullsecret.registry.http import MAX_BODY, Answer
from pullsecret.registry.verdicts import Check, RegistryRejected, Verification, not_contacted, safe_name, unexpected
from pullsecret.registry.www_authenticate import Challenge, parse_challenges, pick_challenge


def _direct(*, changed: bool) -> dict[str, str]:
    """Direct mode's words for the platform source, as the reconcile passes them."""
    return {"applied": WORDING.applied(changed=changed), "available": WORDING.available(own_credentials=False)}


def test_bearer_challenge_as_docker_hub_sends_it() -> None:
    header = 'Bearer realm="https://auth.docker.io/token",service="registry.docker.io"'
    assert parse_challenges([header]) == [
        Challenge("bearer", {"realm": "https://auth.docker.io/token", "service": "registry.docker.io"})
    ]


def test_scheme_and_parameter_names_are_case_insensitive_values_are_not() -> None:
    (challenge,) = parse_challenges(['BEARER Realm="https://Sso.Example/Token" , Service=Reg.Example'])
    assert challenge == Challenge("bearer", {"realm": "https://Sso.Example/Token", "service": "Reg.Example"})


def test_quoted_values_keep_commas_and_unescape_backslashes() -> None:
    (challenge,) = parse_challenges([r'Bearer realm="https://a/t",scope="repository:a/b:pull,push",error="x\"y"'])
    assert challenge.params == {"realm": "https://a/t", "scope": "repository:a/b:pull,push", "error": 'x"y'}


def test_several_challenges_in_one_joined_header_and_in_several_headers() -> None:
    joined = 'Negotiate abc==, Basic realm="Registry Realm", Bearer realm="https://r/t",service="s"'
    schemes = [c.scheme for c in parse_challenges([joined])]
    assert schemes == ["negotiate", "basic", "bearer"]
    split = parse_challenges(["Negotiate", 'Basic realm="Registry Realm"'])
    assert [c.scheme for c in split] == ["negotiate", "basic"]
    assert split[1].params == {"realm": "Registry Realm"}


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        ("", []),
        ("   ", []),
        (",,", []),
        ('"quoted"', []),
        ('Bearer realm="unterminated', [Challenge("bearer", {})]),
        ('Basic realm="x", "junk", Bearer', [Challenge("basic", {"realm": "x"})]),  # stops at the malformed part
    ],
)
def test_malformed_headers_yield_what_parsed_and_never_raise(header: str, parsed: list[Challenge]) -> None:
    assert parse_challenges([header]) == parsed


def test_pick_takes_the_first_basic_or_bearer_as_go_containerregistry() -> None:
    challenges = parse_challenges(['Negotiate, Basic realm="x", Bearer realm="https://r"'])
    assert pick_challenge(challenges) == Challenge("basic", {"realm": "x"})
    assert pick_challenge(parse_challenges(["Negotiate, NTLM"])) is None


@pytest.mark.parametrize(
    ("key", "host"),
    [
        ("https://index.docker.io/v1/", "registry-1.docker.io"),
        ("docker.io", "registry-1.docker.io"),
        ("index.docker.io", "registry-1.docker.io"),
        ("registry-1.docker.io", "registry-1.docker.io"),
        ("quay.io", "quay.io"),
        ("https://Quay.IO/", "quay.io"),
        ("quay.io/my-org", "quay.io"),
        ("registry.example.com:5000", "registry.example.com:5000"),
        ("registry.example.com:443", "registry.example.com"),
        ("127.0.0.1:8443", "127.0.0.1:8443"),
        ("[::1]:5000", "[::1]:5000"),
        ("http://insecure.example.com", None),
        ("user:pw@evil.example", None),
        ("registry.example.com:99999", None),
        ("bad host", None),
        ("", None),
    ],
)
def test_registry_host_of_a_pull_secret_key(key: str, host: str | None) -> None:
    assert registry_host(key) == host


def test_credentials_in_go_containerregistry_order_and_redacted() -> None:
    auth = base64.b64encode(b"robot:S3cret-pw").decode()
    basic = credential_of({"auth": auth.rstrip("=")})
    assert basic is not None and basic.kind == "basic" and basic.secret == auth  # padding restored
    assert "S3cret-pw" in basic.sensitive() and "robot:S3cret-pw" in basic.sensitive()
    assert "S3cret" not in repr(basic) and auth not in repr(basic)
    from_fields = credential_of({"username": "robot", "password": "S3cret-pw"})
    assert from_fields is not None and from_fields.secret == auth
    identity = credential_of({"auth": auth, "identitytoken": "refresh-tok"})
    assert identity is not None and identity.kind == "identity"
    registry = credential_of({"identitytoken": "refresh-tok", "registrytoken": "bearer-tok"})
    assert registry is not None and registry.kind == "registry"
    assert credential_of({"email": "a@b.c"}) is None


def verification(mode: str, **results: str) -> Verification:
    return Verification(mode, {name: Check(result, f"{result} detail") for name, result in results.items()})


def test_enforce_raises_naming_the_refused_registries_only() -> None:
    verification("enforce", q="valid", r="unreachable").enforce()  # unreachable never blocks
    with pytest.raises(RegistryRejected) as caught:
        verification("enforce", q="rejected", r="valid", s="rejected").enforce()
    assert "q, s" in caught.value.message and "nothing was written" in caught.value.message
    assert caught.value.reason == "RegistryCredentialRejected"
    assert [c["result"] for c in caught.value.data["registry_checks"]] == ["rejected", "valid", "rejected"]


def test_report_mode_turns_health_false_never_available() -> None:
    report = status.provisioned(3, **_direct(changed=True), data={"secret_version": "v"})
    marked = status.registry_rejected(report, ["quay.io"])
    conds = {c.type: c for c in marked.conditions}
    assert conds["Available"].status == "True" and conds["Applied"].status == "True"
    assert conds["Health"].status == "False" and conds["Health"].reason == "ExecutionFailed:registry"
    assert "quay.io" in conds["Health"].message
    assert [c.type for c in marked.conditions] == [c.type for c in report.conditions]


def test_status_data_keys_are_not_masked_by_the_condition_mapping() -> None:
    data = verification("report", **{"auth.example.com": "valid"}).data()
    masked = ("secret", "auth", "token", "registrykey")

    def keys(value: object) -> list[str]:
        if isinstance(value, dict):
            return [k for k in value] + [k for v in value.values() for k in keys(v)]
        if isinstance(value, list):
            return [k for v in value for k in keys(v)]
        return []

    assert not [k for k in keys(data) if any(word in k.lower() for word in masked)]
    assert data["registry_checks"][0]["registry"] == "auth.example.com"  # a value, never a key


def test_configuration_of_registry_verification(tmp_path: Any) -> None:
    base = {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    default = configured.load(base)
    assert default.registry_verification == "report"
    assert default.registry_skip_hosts == ("cloud.openshift.com",)
    bundle = tmp_path / "ca.pem"
    bundle.write_text("pem")
    tuned = configured.load(
        {
            **base,
            "REGISTRY_VERIFICATION": "Enforce",
            "REGISTRY_SKIP_HOSTS": "Cloud.OpenShift.com, telemetry.example",
            "REGISTRY_TOKEN_SCOPES": "registry.redhat.io=repository:ubi9/ubi:pull",
            "REGISTRY_CA_BUNDLE": str(bundle),
        }
    )
    assert tuned.registry_verification == "enforce"
    assert tuned.registry_skip_hosts == ("cloud.openshift.com", "telemetry.example")
    assert tuned.registry_token_scopes == (("registry.redhat.io", "repository:ubi9/ubi:pull"),)
    assert tuned.registry_ca_bundle == str(bundle)
    for name, value in (
        ("REGISTRY_VERIFICATION", "strict"),
        ("REGISTRY_TOKEN_SCOPES", "registry.redhat.io"),
        ("REGISTRY_CA_BUNDLE", str(tmp_path / "missing.pem")),
        ("REGISTRY_TIMEOUT", "0"),
    ):
        with pytest.raises(ConfigError, match=name):
            configured.load({**base, name: value})


def test_enforce_details_name_long_or_unprintable_registries_safely() -> None:
    long_key = "r" * 150 + "\n.example"
    with pytest.raises(RegistryRejected) as caught:
        Verification("enforce", {long_key: Check("rejected", "the registry refused the credential (401)")}).enforce()
    assert "r" * 100 + " was rejected" in caught.value.message
    assert "\n" not in caught.value.message
    assert "401" not in caught.value.message  # what answered, and how, goes to the logs only


def test_enforce_judges_only_the_clusters_own_entries_by_default() -> None:
    checks = {"platform.example": Check("rejected", "x"), "own.example": Check("valid", "x")}
    Verification("enforce", checks, frozenset({"own.example"})).enforce()  # a platform 401 blocks no cluster
    with pytest.raises(RegistryRejected, match=r"platform\.example"):
        Verification("enforce", checks, None).enforce()  # REGISTRY_ENFORCE_PLATFORM=true
    with pytest.raises(RegistryRejected, match=r"own\.example"):
        Verification("enforce", {"own.example": Check("rejected", "x")}, frozenset({"own.example"})).enforce()


def test_status_shows_the_result_kind_and_only_a_policy_reason() -> None:
    data = Verification(
        "report",
        {
            "a.example": Check("unreachable", "connection failed"),
            "b.example": Check("skipped", "an IP address", "an IP address"),
        },
    ).data()
    assert data["registry_checks"] == [
        {"registry": "a.example", "result": "unreachable"},
        {"registry": "b.example", "result": "skipped", "reason": "an IP address"},
    ]


def test_the_answer_cache_is_a_bounded_lru_with_expiry() -> None:
    from pullsecret.registry.expiring import Expiring

    now = [0.0]
    cache = Expiring(3, lambda: now[0])
    for key in "abc":
        cache.put(key, key.upper(), ttl=10)
    assert cache.get("a") == "A"  # a is now the most recently used
    cache.put("d", "D", ttl=10)
    assert len(cache) == 3 and cache.get("b") is None and cache.get("a") == "A"
    now[0] = 10.0
    assert cache.get("c") is None and cache.get("d") is None


# -- exact verdicts (the texts go to the logs and, for `skipped`, to the status) -------------------------------
@pytest.mark.parametrize(
    ("status_code", "detail"),
    [
        (500, "the registry answered 500"),
        (599, "the registry answered 599"),
        (300, "the registry answered a redirect (300); redirects are not followed"),
        (302, "the registry answered a redirect (302); redirects are not followed"),
        (399, "the registry answered a redirect (399); redirects are not followed"),
        (299, "the registry answered 299, which says nothing about the credential"),
        (400, "the registry answered 400, which says nothing about the credential"),
        (499, "the registry answered 499, which says nothing about the credential"),
        (600, "the registry answered 600, which says nothing about the credential"),
    ],
)
def test_an_unexpected_answer_is_unreachable_and_says_what_answered(status_code: int, detail: str) -> None:
    assert unexpected("the registry", status_code) == Check("unreachable", detail)


_NO_TOKEN = Check("unreachable", "the registry's token service answered without a token")


@pytest.mark.parametrize(
    ("status_code", "body", "outcome"),
    [
        (200, b'{"token": "t-1"}', "t-1"),
        (200, b'{"access_token": "a-1"}', "a-1"),
        (200, b'{"token": "t-1", "access_token": "a-1"}', "t-1"),
        (200, b'{"token": "", "access_token": "a-1"}', "a-1"),
        (200, b'{"token": ""}', _NO_TOKEN),
        (200, b'{"token": 5}', _NO_TOKEN),
        (200, b"{}", _NO_TOKEN),
        (200, b'["t-1"]', _NO_TOKEN),
        (200, b"not json", _NO_TOKEN),
        (200, b"[" * 100_000, _NO_TOKEN),
        (200, b'{"token": "t-1", "pad": "' + b"x" * MAX_BODY + b'"}', _NO_TOKEN),  # over MAX_BODY: not read
        (401, b'{"token": "t-1"}', Check("rejected", "the registry's token service refused the credential (401)")),
        (503, b'{"token": "t-1"}', Check("unreachable", "the registry's token service answered 503")),
        (
            403,
            b"",
            Check("unreachable", "the registry's token service answered 403, which says nothing about the credential"),
        ),
    ],
)
def test_a_token_answer_gives_the_token_or_its_verdict(status_code: int, body: bytes, outcome: object) -> None:
    assert token_of(Answer(status_code, (), body)) == outcome


def test_a_token_answer_of_exactly_max_body_is_read() -> None:
    body = b'{"token": "t-1", "pad": "'
    body += b"x" * (MAX_BODY - len(body) - 2) + b'"}'
    assert len(body) == MAX_BODY
    assert token_of(Answer(200, (), body)) == "t-1"


def test_check_json_carries_the_reason_only_when_one_is_set() -> None:
    assert Check("valid", "accepted").to_json("quay.io") == {"registry": "quay.io", "result": "valid"}
    skipped = not_contacted("an IP address")
    assert skipped == Check("skipped", "an IP address", "an IP address")
    assert skipped.to_json("10.0.0.1\n") == {"registry": "10.0.0.1?", "result": "skipped", "reason": "an IP address"}


def test_safe_name_replaces_the_unprintable_and_cuts_at_100() -> None:
    assert safe_name("quay.io") == "quay.io"
    assert safe_name("a\tb\x00c") == "a?b?c"
    assert safe_name("r" * 101) == "r" * 100


def test_rejected_lists_the_refused_registries_in_order_and_safely() -> None:
    checks = {"b\n.io": Check("rejected", "x"), "a.io": Check("valid", "x"), "c.io": Check("rejected", "x")}
    assert Verification("report", checks).rejected == ["b?.io", "c.io"]
    assert Verification("report", {"a.io": Check("valid", "x")}).rejected == []


def test_status_lists_at_most_100_registries_and_enforce_names_at_most_10() -> None:
    checks = {f"r{i:03}.example": Check("rejected", "x") for i in range(120)}
    verified = Verification("enforce", checks)
    data = verified.data()
    assert data["registry_verification"] == "enforce"
    assert [c["registry"] for c in data["registry_checks"]] == [f"r{i:03}.example" for i in range(100)]
    with pytest.raises(RegistryRejected) as caught:
        verified.enforce()
    names = ", ".join(f"r{i:03}.example" for i in range(10))
    assert caught.value.message == (
        f"the credential for {names} was rejected by its registry; "
        "nothing was written (REGISTRY_VERIFICATION=enforce; see data.registry_checks)"
    )
    assert caught.value.data == data
    assert caught.value.service == "registry"


def test_basic_credential_sensitive_forms_exactly() -> None:
    auth = base64.b64encode(b"robot:pw:with-colon").decode()
    assert auth.endswith("=")
    assert credential_of({"auth": auth.rstrip("=")}).sensitive() == [  # type: ignore[union-attr]
        auth,
        auth.rstrip("="),
        "robot:pw:with-colon",
        "pw:with-colon",
    ]
    assert Credential("identity", "tok=").sensitive() == ["tok=", "tok"]
    assert Credential("basic", "YWI").sensitive() == ["YWI", "YWI"]  # bad padding: nothing decoded, never raises
    undecodable = base64.b64encode(b"\xff:\xfe").decode()
    assert Credential("basic", undecodable).sensitive() == [undecodable, undecodable, "\ufffd:\ufffd", "\ufffd"]


@pytest.mark.parametrize(
    ("entry", "credential"),
    [
        ({"registrytoken": "", "identitytoken": "i-1"}, Credential("identity", "i-1")),
        ({"registrytoken": 5, "auth": "YTpi"}, Credential("basic", "YTpi")),
        ({"identitytoken": "", "auth": "YTpi"}, Credential("basic", "YTpi")),
        ({"identitytoken": 5, "username": "a", "password": "b"}, Credential("basic", "YTpi")),
        ({"auth": "", "username": "a", "password": "b"}, Credential("basic", "YTpi")),
        ({"auth": 5, "username": "a", "password": "b"}, Credential("basic", "YTpi")),
        ({"auth": "YQ"}, Credential("basic", "YQ==")),
        ({"auth": "YWI"}, Credential("basic", "YWI=")),
        ({"username": "a", "password": ""}, None),
        ({"username": "", "password": "b"}, None),
        ({"username": "a", "password": 5}, None),
        ({"username": 5, "password": "b"}, None),
        ({}, None),
    ],
)
def test_credential_of_each_field_in_turn(entry: dict[str, Any], credential: Credential | None) -> None:
    assert credential_of(entry) == credential


@pytest.mark.parametrize(
    ("host", "name"), [("quay.io", "quay.io"), ("Quay.IO:5000", "quay.io"), ("[::1]:5000", "::1"), ("", "")]
)
def test_hostname_of(host: str, name: str) -> None:
    assert hostname_of(host) == name


@pytest.mark.parametrize(
    ("header", "challenges"),
    [
        (', Basic realm="x"', [Challenge("basic", {"realm": "x"})]),  # leading separators
        ("Bearer realm=!~", [Challenge("bearer", {"realm": "!~"})]),  # the ends of visible ASCII are token chars
        ("Bearer realm=a\x7fb", [Challenge("bearer", {"realm": "a"})]),  # DEL is not
        ("Bearer realm=a\x80b", [Challenge("bearer", {"realm": "a"})]),  # nor anything past ASCII
        ("Bearer realm=", [Challenge("bearer", {"realm": ""})]),  # a value cut off at the end
        ('Bearer realm="a\\', [Challenge("bearer", {})]),  # a backslash at the very end: unterminated
        ('Bearer realm="a\\"', [Challenge("bearer", {})]),  # an escaped closing quote: unterminated
        ('Bearer realm="a\\"b",service=s', [Challenge("bearer", {"realm": 'a"b', "service": "s"})]),
        ('Bearer realm="r"service=s', [Challenge("bearer", {"realm": "r", "service": "s"})]),
        ("Negotiate abc==x=y", [Challenge("negotiate", {"abc": "", "x": "y"})]),  # padding, then a parameter
    ],
)
def test_challenge_parsing_at_its_edges(header: str, challenges: list[Challenge]) -> None:
    assert parse_challenges([header]) == challenges


def test_pick_takes_a_bearer_challenge_too() -> None:
    bearer = Challenge("bearer", {"realm": "https://r"})
    assert pick_challenge([Challenge("negotiate"), bearer]) == bearer


@pytest.mark.parametrize(
    ("key", "host"),
    [
        ("quay.io/org/repo", "quay.io"),
        ("QUAY.IO", "quay.io"),
        ("quay.io?x=1", None),
        ("quay.io#x", None),
        ("u@quay.io", None),
        (":443", None),
        # One registry however its key spells it (the egress check's normal form), its port kept unless 443.
        ("quay.io.", "quay.io"),
        ("quay.io../ns", "quay.io"),
        ("\uff51uay.io", "quay.io"),
        ("https://QUAY.io.:443/v1/", "quay.io"),
        ("B\u00fccher.example:5000", "xn--bcher-kva.example:5000"),
        ("mirror:5000", "mirror:5000"),
        ("[::1]:443", "[::1]"),
        ("quay..io", None),  # an empty label: no host name
        ("quay.io:99999", None),
    ],
)
def test_registry_host_at_its_edges(key: str, host: str | None) -> None:
    assert registry_host(key) == host


def test_credential_forms_at_their_edges() -> None:
    assert credential_of({"registrytoken": "r-1", "identitytoken": "i-1"}) == Credential("registry", "r-1")
    assert Credential("identity", "tokX=").sensitive() == ["tokX=", "tokX"]
    assert Credential("basic", "é").sensitive() == ["é", "é"]  # not ASCII: nothing decoded, never raises


def test_beyond_per_host_counts_distinct_credentials_per_host_name() -> None:
    a, b, c, d = (Credential("basic", s) for s in ("YTpx", "YjpxMg==", "Yzpx", "ZDpx"))
    token = Credential("registry", "YTpx")  # the same text as `a`, another kind: another credential
    candidates = [("quay.io", a), ("quay.io", b), ("quay.io", a), ("quay.io", c), ("quay.io", d), ("quay.io", token)]
    assert beyond_per_host(candidates, limit=3) == [False, False, False, False, True, True]
    # Hosts count apart; a credential already counted stays allowed after the limit is reached.
    mixed = [("quay.io", a), ("quay.io", b), ("docker.io", c), ("docker.io", d), ("quay.io", d), ("quay.io", b)]
    assert beyond_per_host(mixed, limit=2) == [False, False, False, False, True, False]
    assert beyond_per_host(candidates, limit=1) == [False, True, False, True, True, True]
    assert beyond_per_host(candidates, limit=0) == [True] * 6
    assert beyond_per_host([], limit=3) == []
