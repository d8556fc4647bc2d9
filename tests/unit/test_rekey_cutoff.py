"""`rekey --created-before`: which of the Pull Secret Service's credentials count as created before the cutoff
(pullsecret/source/service/rekey.py `created_before`), and the CLI's reading of the time it is given."""

from __future__ import annotations

import pytest

from pullsecret.model import dockerconfig
from pullsecret.operator.rekey import parse_time
from pullsecret.source.service.api import Credential, ServiceAnswer
from pullsecret.source.service.rekey import created_before

CUTOFF = parse_time("2026-11-01T00:00:00Z")


def _answer(*created: str | None) -> ServiceAnswer:
    secret = dockerconfig.parse(b'{"auths":{"quay.io":{"auth":"dTpw"}}}', source="test")
    credentials = tuple(Credential(f"r{i}", "fp", when) for i, when in enumerate(created))
    return ServiceAnswer("cls-1", secret, credentials)


@pytest.mark.parametrize(
    ("created", "before"),
    [
        (("2026-11-02T00:00:00Z",), False),  # every credential newer: nothing to rotate
        (("2026-11-02T00:00:00Z", "2026-10-31T23:59:59Z"), True),  # one older is enough
        (("2026-11-02",), False),  # a date alone is its midnight UTC
        (("2026-10-31",), True),
        (("2026-11-02T00:00:00Z", None), True),  # an unknown time counts as before: rotated, not left exposed
        (("2026-11-02T00:00:00Z", "last tuesday"), True),  # so does one that is no time
        ((), True),  # no credential described: rotated
    ],
)
def test_created_before(created: tuple[str | None, ...], before: bool) -> None:
    assert created_before(_answer(*created), CUTOFF) is before


def test_the_cli_time_is_rfc3339_or_refused() -> None:
    assert parse_time("2026-11-01") == CUTOFF
    assert parse_time("2026-11-01T01:00:00+01:00") == CUTOFF
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        parse_time("yesterday")
