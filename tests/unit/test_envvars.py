"""Reading one setting: each reader's accepted values and bounds, and the error an operator reads for a bad one
(it names the variable, says what is expected and quotes what was given)."""

from __future__ import annotations

import re

import pytest

from pullsecret.errors import ConfigError
from pullsecret.settings import envvars


def refused(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        call()


@pytest.mark.parametrize(
    ("raw", "value"),
    [("true", True), ("TRUE", True), (" Yes ", True), ("1", True), ("false", False), ("No", False), ("0", False)],
)
def test_a_flag_takes_every_documented_spelling_in_any_case(raw: str, value: bool) -> None:
    assert envvars.flag({"F": raw}, "F") is value
    assert envvars.flag({}, "F") is False


def test_a_flag_refuses_anything_else_saying_true_or_false() -> None:
    refused(lambda: envvars.flag({"F": "maybe"}, "F"), "F must be true or false, got 'maybe'")


def test_numbers_and_counts_accept_their_bounds_and_refuse_past_them() -> None:
    for raw in ("1", "5"):
        assert envvars.number({"N": raw}, "N", 3, minimum=1, maximum=5) == float(raw)
        assert envvars.count({"N": raw}, "N", 3, minimum=1, maximum=5) == int(raw)
    refused(lambda: envvars.number({"N": "5.5"}, "N", 3, minimum=1, maximum=5), "N must lie in [1, 5], got '5.5'")
    refused(
        lambda: envvars.count({"N": "6"}, "N", 3, minimum=1, maximum=5), "N must be a whole number from 1 to 5, got '6'"
    )
    # A long bad value is quoted by its first 40 characters only.
    refused(
        lambda: envvars.count({"N": "x" * 100}, "N", 3, minimum=1, maximum=5),
        f"N must be a whole number from 1 to 5, got {'x' * 40!r}",
    )


def test_a_template_may_index_its_cluster_id_only_as_a_cluster_id_allows() -> None:
    assert envvars.template({"T": "hf-{cluster_id}"}, "T", "{cluster_id}") == "hf-{cluster_id}"
    refused(
        lambda: envvars.template({"T": "hf-{cluster_id}-{cluster_id[1]}"}, "T", "{cluster_id}"),
        "T may only use the placeholder {cluster_id}, got 'hf-{cluster_id}-{cluster_id[1]}'",
    )
    refused(
        lambda: envvars.template({"T": "hf-{cluster_id}-{cluster_id:d}"}, "T", "{cluster_id}"),
        "T may only use the placeholder {cluster_id}, got 'hf-{cluster_id}-{cluster_id:d}'",
    )


@pytest.mark.parametrize(
    "value",
    ["http://hf.example/a b", "http://hf.example:0", "http://:8080", "ftp://hf.example", "http://hf.example:99999"],
)
def test_a_url_setting_is_refused_whole_naming_the_variable(value: str) -> None:
    refused(
        lambda: envvars.url("HYPERFLEET_API_URL", value),
        f"HYPERFLEET_API_URL must be an http(s) URL with a host and a port in 1..65535, got {value!r}",
    )


def test_a_url_on_port_1_is_a_url() -> None:
    assert envvars.url("U", "http://hf.example:1").port == 1


def test_a_loopback_address_is_localhost_or_a_loopback_ip_with_a_port_in_range() -> None:
    for value in ("localhost:8085", "127.0.0.1:8085", "[::1]:8085"):
        assert envvars.loopback_address({"E": value}, "E") == value
    refused(lambda: envvars.loopback_address({"E": "localhost"}, "E"), "E must be host:port, got 'localhost'")
    refused(
        lambda: envvars.loopback_address({"E": "localhost:99999"}, "E"),
        "E must be an http(s) URL with a host and a port in 1..65535, got 'http://localhost:99999'",
    )
    refused(
        lambda: envvars.loopback_address({"E": "emulator.example:8085"}, "E"),
        "E must name a loopback address (localhost, 127.0.0.1, [::1]), got 'emulator.example:8085'",
    )


def test_header_names_and_durations_say_what_they_expect() -> None:
    refused(
        lambda: envvars.header_name({"H": "Authorization"}, "H"),
        "H must be an HTTP header name, e.g. X-HyperFleet-System, got 'Authorization'",
    )
    refused(lambda: envvars.duration({"D": "0m"}, "D"), "D must be a non-zero duration such as 5m or 1h30m, got '0m'")
