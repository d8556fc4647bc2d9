"""What the HyperFleet API's answers become in messages: its problem text scrubbed before it is cut, and a redirect a
configuration error (issue 50, items 2 and 5)."""

from __future__ import annotations

import json

from pullsecret.errors import TransientError
from pullsecret.hyperfleet import answers
from pullsecret.hyperfleet.answers import Answer
from pullsecret.logs import event_context, protect


def test_a_problem_title_is_scrubbed_before_it_is_cut() -> None:
    secret = "robot-token-" + "T" * 30
    body = json.dumps({"code": "HYPERFLEET-VAL-001", "detail": "." * 187 + secret + "\x1b[2J"}).encode()
    with event_context(labels={}, trace=None):
        protect([secret])
        failure = answers.failure(Answer(400, {}, body), "get cluster c1")
    assert secret[:8] not in failure.message and "[REDACTED]" in failure.message


def test_an_echoed_bearer_token_is_redacted_unregistered() -> None:
    body = json.dumps({"detail": "it carried Authorization: Bearer hf-opaque-0123456789abcdef"}).encode()
    assert answers.problem_title(Answer(400, {}, body)) == " (it carried Authorization: Bearer [REDACTED])"


def test_a_redirect_is_a_configuration_error_naming_where_it_points() -> None:
    moved = Answer(308, {"Location": "https://u:p@api.moved.example/api/hyperfleet/v1/clusters/c1?x=secret"}, b"")
    failure = answers.redirected(moved, "get cluster c1", base_url="https://api.example")
    assert isinstance(failure, TransientError) and failure.reason == "EndpointRedirected"
    assert "HYPERFLEET_API_URL https://api.example answered 308" in failure.message
    assert "https://api.moved.example/api/hyperfleet/v1/clusters/c1" in failure.message
    assert "secret" not in failure.message and "u:p" not in failure.message
    bad = answers.redirected(Answer(307, {"Location": "https://h:70000/"}, b""), "x", base_url="https://api.example")
    assert "a redirect to no Location" in bad.message


def test_only_a_code_of_hyperfleets_shape_is_believed_or_shown() -> None:
    """`HYPERFLEET-` and then other text (a token's first characters) is no code: cut to 40, it showed 29 of them."""
    for code, believed in [
        ("HYPERFLEET-NTF-002", "HYPERFLEET-NTF-002"),
        ("HYPERFLEET-eyJhbGciOiJSUzI1NiIsImtpZCI6Ing", None),
        ("HYPERFLEET-NTF-001 and more", None),
        (7, None),
    ]:
        answer = Answer(404, {}, json.dumps({"code": code}).encode())
        assert answers.problem_code(answer) == believed
    hostile = Answer(400, {}, json.dumps({"code": "HYPERFLEET-eyJhbGciOiJSUzI1NiIsImtpZCI6Ing"}).encode())
    assert "eyJ" not in answers.failure(hostile, "get cluster c1").message
