"""The pull-secret sources, in order of preference: the first one configured is the source; none configured, the
cluster's own pull secret is all (`NoSource`). Adding a source is one module (a `Source` and its factory) and one
line here."""

from __future__ import annotations

from typing import Any

from pullsecret.model.preconditions import Act
from pullsecret.operator import doctor_checks
from pullsecret.operator.doctor_checks import DoctorCheck
from pullsecret.retrying import Deadline
from pullsecret.source import platform, service
from pullsecret.source.base import Factory, Source, Wiring

SOURCES: tuple[Factory, ...] = (service.build, platform.build)


class NoFetch:
    """No source: no call, no pull secret."""

    ready = True

    def pull_secret(self, act: Act, deadline: Deadline) -> None:
        return None

    def status_data(self) -> dict[str, Any]:
        return {}


class NoSource:
    """PULL_SECRET_SOURCE unset (and no other source configured): only the cluster's own pull secret."""

    name = "none"
    _fetch = NoFetch()

    def start(self, cluster_id: str, deadline: Deadline) -> NoFetch:
        return self._fetch

    def revoke(self, cluster_id: str, deadline: Deadline) -> dict[str, Any]:
        return {}

    def doctor_checks(self) -> list[DoctorCheck]:
        return [DoctorCheck("pull-secret-source", doctor_checks.pull_secret_source)]  # says: nothing to check


def build(wiring: Wiring) -> Source:
    """The configured source."""
    for factory in SOURCES:
        source = factory(wiring)
        if source is not None:
            return source
    return NoSource()
