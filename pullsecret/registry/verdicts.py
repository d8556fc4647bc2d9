"""The verdicts of registry verification: a registry's Check, an event's Pending checks, their Verification.

Only fixed, credential-free texts."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from pullsecret.errors import TerminalError
from pullsecret.model.status_data import StatusData
from pullsecret.retrying import Deadline

RESULTS = ("valid", "rejected", "anonymous", "unreachable", "skipped")


class RegistryRejected(TerminalError):
    """REGISTRY_VERIFICATION=enforce: a registry refused its credential; nothing was written."""

    default_reason = "RegistryCredentialRejected"

    def __init__(self, message: str, data: StatusData) -> None:
        super().__init__(message, service="registry")
        self.data = data


@dataclass(frozen=True)
class Check:
    """The answer for one registry: a result of RESULTS, a fixed, credential-free explanation for the logs, and
    for what was never contacted the reason the status shows (what answered, and how, stays in the logs)."""

    result: str
    detail: str
    reason: str | None = None

    def to_json(self, registry: str) -> dict[str, str]:
        entry = {"registry": safe_name(registry), "result": self.result}
        if self.reason is not None:
            entry["reason"] = self.reason
        return entry


def not_contacted(reason: str) -> Check:
    return Check("skipped", reason, reason)


def safe_name(registry: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in registry)[:100]


def unexpected(who: str, status: int) -> Check:
    if 500 <= status < 600:
        return Check("unreachable", f"{who} answered {status}")
    if 300 <= status < 400:
        return Check("unreachable", f"{who} answered a redirect ({status}); redirects are not followed")
    return Check("unreachable", f"{who} answered {status}, which says nothing about the credential")


@dataclass
class Pending:
    """The checks of one event, some still running; `result()` waits for them within the overall deadline."""

    mode: str
    registries: tuple[str, ...]
    futures: dict[str, Future[Check]]
    deadline: Deadline
    enforced: frozenset[str] | None = None  # the registries enforce mode may refuse on; None: every one
    _verification: Verification | None = None

    def result(self) -> Verification:
        """Every registry's check; asked twice (enforce, then the status), the same answer both times."""
        if self._verification is not None:
            return self._verification
        checks: dict[str, Check] = {}
        for registry in self.registries:
            future = self.futures[registry]
            try:
                checks[registry] = future.result(timeout=self.deadline.remaining())
            except FutureTimeout:
                checks[registry] = Check("unreachable", "no answer within the verification deadline")
        self._verification = Verification(self.mode, checks, self.enforced)
        return self._verification


@dataclass(frozen=True)
class Verification:
    """Every registry's check for one pull secret."""

    mode: str
    checks: Mapping[str, Check]
    enforced: frozenset[str] | None = None

    @property
    def rejected(self) -> list[str]:
        return [safe_name(r) for r, c in self.checks.items() if c.result == "rejected"]

    def data(self) -> StatusData:
        """The status `data` fields (keys the HyperFleet condition mapping does not mask)."""
        return {
            "registry_verification": self.mode,
            "registry_checks": [check.to_json(registry) for registry, check in list(self.checks.items())[:100]],
        }

    def enforce(self) -> None:
        """Raise RegistryRejected when a registry refused a credential enforce mode judges (the cluster's own
        entries unless REGISTRY_ENFORCE_PLATFORM: one platform registry's 401 must not block the whole fleet)."""
        refused = [
            safe_name(r)
            for r, c in self.checks.items()
            if c.result == "rejected" and (self.enforced is None or r in self.enforced)
        ]
        if not refused:
            return
        raise RegistryRejected(
            f"the credential for {', '.join(refused[:10])} was rejected by its registry; "
            "nothing was written (REGISTRY_VERIFICATION=enforce; see data.registry_checks)",
            self.data(),
        )
