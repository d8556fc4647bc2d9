"""The pure parts of registry verification: challenge parsing, registry names, credentials, verdicts."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pullsecret import config, status
from pullsecret.errors import ConfigError
from pullsecret.registry_verification import (
    Challenge,
    Check,
    RegistryRejected,
    Verification,
    credential_of,
    effective_domain,
    parse_challenges,
    pick_challenge,
    registry_host,
)


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


@pytest.mark.parametrize("header", ["", "   ", ",,", '"quoted"', 'Bearer realm="unterminated'])
def test_malformed_headers_yield_what_parsed_and_never_raise(header: str) -> None:
    challenges = parse_challenges([header])
    assert all(c.scheme for c in challenges)
    if header.startswith("Bearer"):
        assert challenges == [Challenge("bearer", {})]


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


def test_effective_domain_is_the_last_two_labels_or_the_ip() -> None:
    assert effective_domain("registry.redhat.io") == effective_domain("sso.redhat.io") == "redhat.io"
    assert effective_domain("registry-1.docker.io") == effective_domain("auth.docker.io:443")
    assert effective_domain("127.0.0.1:5000") == "127.0.0.1" != effective_domain("localhost:5000")
    assert effective_domain("quay.io") != effective_domain("evil.example")


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
    report = status.provisioned(3, changed=True, data={"secret_version": "v"})
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
    base = {"HYPERFLEET_API_URL": "http://hf.example"}
    default = config.load(base)
    assert default.registry_verification == "report"
    assert default.registry_skip_hosts == ("cloud.openshift.com",)
    bundle = tmp_path / "ca.pem"
    bundle.write_text("pem")
    tuned = config.load(
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
            config.load({**base, name: value})


def test_enforce_details_name_long_or_unprintable_registries_safely() -> None:
    long_key = "r" * 150 + "\n.example"
    with pytest.raises(RegistryRejected) as caught:
        Verification("enforce", {long_key: Check("rejected", "the registry refused the credential (401)")}).enforce()
    assert "r" * 100 + ": the registry refused the credential (401)" in caught.value.message
    assert "\n" not in caught.value.message
