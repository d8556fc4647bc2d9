"""What each Pull Secret Service answer means, decided without a network: the DDR's retry guidance, and no token out."""

from __future__ import annotations

import json

import pytest

from pullsecret.errors import RateLimited, TerminalError, TransientError
from pullsecret.logs import event_context, protect
from pullsecret.model.dockerconfig import InvalidPullSecret
from pullsecret.source.service import answers
from pullsecret.source.service import api as service_api
from pullsecret.source.service.api import PullSecretServiceClient, _Answer

CLIENT = PullSecretServiceClient("https://pss.example.com", credential=None)


def problem(status: int, code: str | None = None, detail: str = "") -> _Answer:
    body = {"type": "about:blank", "title": "t", "status": status, "detail": detail}
    if code:
        body["code"] = code
    return _Answer(status, {"Content-Type": "application/problem+json"}, json.dumps(body).encode())


@pytest.mark.parametrize(
    ("answer", "kind", "reason"),
    [
        (problem(409, "HYPERFLEET-CNF-001", "rotation in progress"), TransientError, "RotationInProgress"),
        (problem(503), TransientError, "DependencyUnavailable"),
        (problem(500, "HYPERFLEET-INT-001"), TransientError, "DependencyUnavailable"),
        (problem(429), RateLimited, "DependencyUnavailable"),
        (problem(400, "HYPERFLEET-VAL-001", "Invalid cloud provider"), TerminalError, "PullSecretServiceRejected"),
        (problem(422), TerminalError, "PullSecretServiceRejected"),
    ],
)
def test_each_answer_class_is_transient_or_terminal_as_the_ddr_says(
    answer: _Answer, kind: type[Exception], reason: str
) -> None:
    failure = answers.failure(answer, "generate")
    assert type(failure) is kind
    assert isinstance(failure, (TransientError, TerminalError))
    assert failure.reason == reason and failure.service == "pullsecretservice"
    assert "Pull Secret Service" in failure.message


@pytest.mark.parametrize(
    ("headers", "extension", "wait_s"),
    [
        ({"Retry-After": "42"}, 42, 42.0),  # §3.5's 429: both say it
        ({}, 17, 17.0),  # the body's retry_after_seconds without the header
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None, 60.0),  # no seconds: the DDR's example
        ({"Retry-After": "999999"}, None, 3600.0),  # bounded
    ],
)
def test_a_429_carries_the_wait_it_asks_for(headers: dict[str, str], extension: int | None, wait_s: float) -> None:
    body = {"status": 429, "code": "HYPERFLEET-LMT-001", "detail": "Rate limit exceeded: 100 requests per minute"}
    if extension is not None:
        body["retry_after_seconds"] = extension
    failure = answers.failure(_Answer(429, headers, json.dumps(body).encode()), "revoke")
    assert isinstance(failure, RateLimited) and failure.retry_after_s == wait_s
    assert f"retry after {wait_s:g} s" in failure.message


def test_a_terminal_refusal_names_the_service_and_its_code() -> None:
    failure = answers.failure(problem(400, "HYPERFLEET-VAL-001", "Invalid cloud provider: x"), "generate")
    assert "HYPERFLEET-VAL-001" in failure.message and "Invalid cloud provider" in failure.message


def test_problem_details_are_bounded_printable_and_redacted() -> None:
    secret = "s3cr3t-token-value"
    with event_context(labels={}, trace=None):
        protect([secret])
        failure = answers.failure(problem(400, detail=f"bad token {secret}\x1b[31m" + "x" * 5000), "generate")
    assert secret not in failure.message and "\x1b" not in failure.message
    assert len(failure.message) < 400


@pytest.mark.parametrize(
    ("answer", "refused"),
    [
        (problem(401), True),
        (problem(403), True),  # no authorization code: our token, not a policy
        (problem(403, "HYPERFLEET-AUZ-001"), False),  # a policy: terminal, no re-read helps
        (problem(404, "HYPERFLEET-NTF-001"), False),
    ],
)
def test_which_answers_refuse_our_token(answer: _Answer, refused: bool) -> None:
    assert answers.token_refused(answer) is refused


def test_credentials_carry_no_token_and_only_a_fingerprint_of_the_username() -> None:
    found = service_api._credentials(
        [
            {
                "registry_id": "quay",
                "username": "redhat-openshift+hyperfleet_gcp_useast1_abc",
                "token": "T0KEN",
                "created_at": "2026-02-08T10:00:00Z",
            },
            {"registry_id": "rhit", "username": "|hyp-cls-abc", "created_at": "\x1b[2J"},
            {"registry_id": 7, "username": "x"},
            "not an object",
        ]
    )
    assert [c.registry_id for c in found] == ["quay", "rhit"]
    shown = json.dumps([c.data() for c in found])
    assert "T0KEN" not in shown and "redhat-openshift" not in shown and "hyp-cls" not in shown
    assert found[0].created_at == "2026-02-08T10:00:00Z" and found[1].created_at is None
    assert len(found[0].username_fingerprint) == 12
    assert all("credential" not in key and "token" not in key for c in found for key in c.data())


def test_the_clients_repr_shows_no_credentials() -> None:
    client = PullSecretServiceClient("https://user:pw@pss.example.com/base", credential=None)
    assert "pw" not in repr(client) and "user" not in repr(client)


def answer(body: object, status: int = 200) -> _Answer:
    return _Answer(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"cluster_id": "c1"}, "no pull_secret object"),
        ({"cluster_id": "c1", "pull_secret": "text"}, "no pull_secret object"),
        ({"cluster_id": "other", "pull_secret": {"auths": {"q.io": {"auth": "dTpw"}}}}, "another cluster"),
        ({"cluster_id": "c1", "pull_secret": {"auths": {}}}, "empty"),
        ({"cluster_id": "c1", "pull_secret": {"auths": {"q.io": {"auth": "not base64!"}}}}, "base64"),
    ],
)
def test_an_answer_that_is_no_valid_pull_secret_is_invalid_naming_the_service(body: object, says: str) -> None:
    with pytest.raises(InvalidPullSecret) as refused:
        CLIENT._parse(answer(body), "c1", "get")
    assert refused.value.service == "pullsecretservice" and says in refused.value.message
    assert refused.value.reason == "InvalidPullSecret"


def test_a_body_that_is_not_json_is_invalid_too() -> None:
    with pytest.raises(InvalidPullSecret, match="not JSON"):
        CLIENT._parse(_Answer(200, {}, b"<html>"), "c1", "get")


def test_the_answers_strings_are_registered_for_redaction_before_it_is_parsed() -> None:
    """A refused answer's password is still scrubbed from whatever the event logs next."""
    password = "Sup3r-Secret-Passw0rd"
    bad = {"cluster_id": "c1", "pull_secret": {"auths": {"q.io": {"username": "u", "password": password}, "": {}}}}
    with event_context(labels={}, trace=None) as ctx:
        with pytest.raises(InvalidPullSecret):
            CLIENT._parse(answer(bad), "c1", "get")
        assert password not in ctx.redactor.scrub(f"a line quoting {password}")


def test_a_registered_secret_straddling_the_cut_of_a_detail_leaves_no_prefix() -> None:
    """The detail is scrubbed before it is cut to 200 characters: cut first, 13 characters of the secret survived."""
    secret = "robot-token-" + "R" * 30
    with event_context(labels={}, trace=None):
        protect([secret])
        failure = answers.failure(problem(400, detail="." * 187 + secret), "generate")
    assert isinstance(failure, TerminalError)
    assert secret[:8] not in failure.message and "[REDACTED]" in failure.message


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("https://user:pw@moved.example.com/v1/x?token=abc#f", "https://moved.example.com/v1/x"),
        ("/elsewhere?sig=abc", "/elsewhere"),
        ("https://moved.example.com:99999/", "no Location"),  # a port out of range: nothing to show
        (None, "no Location"),
    ],
)
def test_a_redirect_is_a_configuration_error_naming_where_it_points_without_credentials(
    location: str | None, shown: str
) -> None:
    headers = {"Location": location} if location is not None else {}
    failure = answers.redirected(_Answer(307, headers, b""), "generate", url="https://pss.example.com")
    assert isinstance(failure, TransientError) and failure.reason == "EndpointRedirected"
    assert failure.location == shown and shown in failure.message
    assert "PULL_SECRET_SERVICE_URL https://pss.example.com" in failure.message
    assert "pw" not in failure.message and "abc" not in failure.message
    assert answers.is_redirect(_Answer(307, headers, b"")) and not answers.is_redirect(_Answer(400, {}, b""))
    assert answers.is_redirect(_Answer(300, {}, b"")) and not answers.is_redirect(_Answer(200, {}, b""))
