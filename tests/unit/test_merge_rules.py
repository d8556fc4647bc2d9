"""Merge rules: per-registry precedence, conflict details, canonical registry keys and shadowed duplicates."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pullsecret.model import dockerconfig
from pullsecret.model.dockerconfig import canonical_registry, merge, parse


def auth(user: str, password: str) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def secret(auths: dict[str, Any]) -> dockerconfig.PullSecret:
    return parse({"auths": auths}, source="test")


@pytest.mark.parametrize(
    ("key", "canonical"),
    [
        ("quay.io", "quay.io"),
        ("https://quay.io/", "quay.io"),
        ("http://Quay.IO", "quay.io"),
        ("docker.io", "docker.io"),
        ("https://index.docker.io/v1/", "docker.io"),
        ("index.docker.io", "docker.io"),
        ("registry-1.docker.io", "docker.io"),
        ("registry.example.com:5000/team/", "registry.example.com:5000/team"),
        ("  registry.redhat.io  ", "registry.redhat.io"),
        ("docker.io.evil.example", "docker.io.evil.example"),
    ],
)
def test_canonical_registry(key: str, canonical: str) -> None:
    assert canonical_registry(key) == canonical


@pytest.mark.parametrize("precedence", ["platform", "cluster"])
def test_conflicts_name_the_winner_and_fingerprints_never_the_credential(precedence: str) -> None:
    platform = secret({"quay.io": auth("p", "platform-pass"), "a.example": auth("p", "platform-pass")})
    cluster = secret({"quay.io": auth("c", "cluster-pass"), "b.example": auth("c", "cluster-pass")})
    result = merge(platform, cluster, precedence=precedence)
    assert result.conflicts == ("quay.io",)
    (detail,) = result.conflict_details
    assert detail["registry"] == "quay.io" and detail["winner"] == precedence
    assert detail["platform"] == platform.registry_fingerprints()["quay.io"]
    assert detail["cluster"] == cluster.registry_fingerprints()["quay.io"]
    assert detail["platform"] != detail["cluster"]
    expected_user = "p" if precedence == "platform" else "c"
    quay = result.secret.document()["auths"]["quay.io"]["auth"]
    assert base64.b64decode(quay).decode().startswith(expected_user + ":")
    assert set(result.secret.registries) == {"quay.io", "a.example", "b.example"}
    text = json.dumps(result.conflict_details) + repr(result)
    for leaked in ("platform-pass", "cluster-pass", auth("p", "platform-pass")["auth"]):
        assert leaked not in text


def test_identical_entries_are_no_conflict() -> None:
    same = auth("u", "pw")
    result = merge(secret({"quay.io": same}), secret({"quay.io": same}))
    assert result.conflicts == () and result.conflict_details == ()


def test_without_canonical_keys_aliases_stay_distinct() -> None:
    platform = secret({"https://index.docker.io/v1/": auth("p", "pw1")})
    cluster = secret({"docker.io": auth("c", "pw2")})
    result = merge(platform, cluster)
    assert result.conflicts == ()
    assert set(result.secret.registries) == {"https://index.docker.io/v1/", "docker.io"}


def test_canonical_keys_fold_aliases_across_sources_into_a_conflict() -> None:
    platform = secret({"https://index.docker.io/v1/": auth("p", "pw1"), "https://Quay.io/": auth("p", "pw1")})
    cluster = secret({"docker.io": auth("c", "pw2")})
    result = merge(platform, cluster, precedence="cluster", canonical_keys=True)
    assert result.secret.registries == ("docker.io", "quay.io")
    assert result.conflicts == ("docker.io",)
    assert base64.b64decode(result.secret.document()["auths"]["docker.io"]["auth"]).startswith(b"c:")
    assert result.shadowed == ()


def test_canonical_keys_report_shadowed_duplicates_within_one_source() -> None:
    platform = secret(
        {
            "docker.io": auth("p", "kept"),
            "index.docker.io": auth("p", "hidden"),
            "https://registry-1.docker.io/": auth("p", "kept"),
        }
    )
    result = merge(platform, None, canonical_keys=True)
    assert result.secret.registries == ("docker.io",)
    assert base64.b64decode(result.secret.document()["auths"]["docker.io"]["auth"]) == b"p:kept"
    shadowed = {d["shadowed"]: d for d in result.shadowed}
    assert set(shadowed) == {"index.docker.io", "https://registry-1.docker.io/"}
    assert shadowed["index.docker.io"]["same_entry"] is False
    assert shadowed["https://registry-1.docker.io/"]["same_entry"] is True
    assert all(d["kept"] == "docker.io" and d["source"] == "platform" for d in result.shadowed)
    assert "hidden" not in json.dumps(result.shadowed)


def test_shadowed_without_a_canonical_key_keeps_the_first_in_sorted_order() -> None:
    result = merge(
        None, secret({"https://quay.io/": auth("a", "1"), "http://quay.io": auth("b", "2")}), canonical_keys=True
    )
    (only,) = result.shadowed
    assert only["kept"] == "http://quay.io" and only["shadowed"] == "https://quay.io/"
    assert result.secret.registries == ("quay.io",)


def test_no_source_is_an_error() -> None:
    with pytest.raises(dockerconfig.InvalidPullSecret):
        merge(None, None, canonical_keys=True)
