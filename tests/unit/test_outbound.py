"""outbound: the one request builder of the four HTTP clients (pure: nothing is sent)."""

from __future__ import annotations

import math
import re

import pytest

from pullsecret import outbound
from pullsecret.logs import TraceContext, event_context
from pullsecret.retrying import Deadline

TRACE = TraceContext(trace_id="4bf92f3577b34da6a3ce929d0e0e4736", span_id="00f067aa0ba902b7", sampled=True)


def test_a_call_with_a_token_and_a_body_carries_both_and_says_json() -> None:
    sent = outbound.request(token="tok-123", scheme="Bearer", json_body={"a": 1}, trace=False)
    assert sent.headers == {
        "Accept": "application/json",
        "User-Agent": "hyperfleet-pullsecret-adapter",
        "Authorization": "Bearer tok-123",
        "Content-Type": "application/json",
    }
    assert sent.body == b'{"a": 1}'


def test_no_token_no_authorization_and_no_body_no_content_type() -> None:
    sent = outbound.request(trace=False)
    assert "Authorization" not in sent.headers and "Content-Type" not in sent.headers and sent.body is None


def test_the_scheme_is_the_credentials_own() -> None:
    assert outbound.request(token="t", scheme="Token", trace=False).headers["Authorization"] == "Token t"


def test_the_events_trace_goes_out_with_a_new_span_and_its_sampled_flag() -> None:
    with event_context(labels={}, trace=TRACE):
        first = outbound.request().headers["traceparent"]
        second = outbound.request().headers["traceparent"]
        untraced = outbound.request(trace=False).headers
    pattern = re.compile(r"^00-4bf92f3577b34da6a3ce929d0e0e4736-([0-9a-f]{16})-01$")
    spans = {pattern.fullmatch(first).group(1), pattern.fullmatch(second).group(1)}  # type: ignore[union-attr]
    assert len(spans) == 2 and TRACE.span_id not in spans
    assert "traceparent" not in untraced


def test_outside_an_event_there_is_no_trace_to_send() -> None:
    assert "traceparent" not in outbound.request().headers


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_number_json_cannot_carry_is_an_error_not_a_body(bad: float) -> None:
    with pytest.raises(ValueError):
        outbound.request(json_body={"n": bad}, trace=False)


def test_repr_shows_neither_the_credential_nor_the_body() -> None:
    sent = outbound.request(token="s3cr3t-token", json_body={"auth": "s3cr3t-body"}, trace=False)
    assert "s3cr3t" not in repr(sent) and "s3cr3t" not in str(sent)


def test_timeouts_are_cut_to_what_remains_of_the_deadline() -> None:
    loose = outbound.timeout(connect=5.0, read=30.0)
    assert (loose.connect_timeout, loose.read_timeout) == (5.0, 30.0)
    tight = outbound.timeout(connect=5.0, read=30.0, deadline=Deadline(2.0))
    assert tight.connect_timeout <= 2.0 and tight.read_timeout <= 2.0  # type: ignore[operator]
    spent = outbound.timeout(connect=5.0, read=30.0, deadline=Deadline(0.0))
    assert (spent.connect_timeout, spent.read_timeout) == (0.001, 0.001)  # urllib3 refuses 0: the least it takes
