"""Secret Manager plumbing every part of the store shares: one client, paced writes, failure classes."""

from __future__ import annotations

import random
import time
from typing import Any, Protocol

from google.api_core import exceptions as gexc

from pullsecret import retrying
from pullsecret.errors import (
    TerminalError,
    TransientError,
    from_google,
    grpc_code_name,
    is_retryable_google,
    looks_like_io,
)
from pullsecret.retrying import Deadline
from pullsecret.secretstore.pacing import PACER, WritePacer

SERVICE = "secretmanager"
_AMBIGUOUS = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL"})
_NOT_APPLIED = frozenset({"RESOURCE_EXHAUSTED", "ABORTED"})


def unix_seconds(timestamp: Any) -> int | None:
    """A response's timestamp (create_time) as unix seconds; None when absent or not a time."""
    try:
        return int(timestamp.timestamp())
    except (AttributeError, TypeError, ValueError, OSError):
        return None


def _quota_refusal(exc: BaseException) -> bool:
    """The per-project write quota refused the request (ErrorInfo reason RATE_LIMIT_EXCEEDED).

    https://cloud.google.com/secret-manager/quotas: RESOURCE_EXHAUSTED with that reason and the quota's
    metric in the ErrorInfo metadata; other RESOURCE_EXHAUSTED answers say nothing about the pace.
    """
    return grpc_code_name(exc) == "RESOURCE_EXHAUSTED" and getattr(exc, "reason", None) == "RATE_LIMIT_EXCEEDED"


def write_failure(exc: BaseException) -> str:
    """How a failed write ended: "not_applied" (send again), "ambiguous" (may have landed) or "final"."""
    name = grpc_code_name(exc)
    if name in _NOT_APPLIED:
        return "not_applied"
    if name in _AMBIGUOUS or (name is None and looks_like_io(exc)):
        return "ambiguous"
    return "final"


class Backoff:
    """Full-jitter exponential backoff between resends of one request: doubling up to 2 s, never past the deadline."""

    def __init__(self, initial: float) -> None:
        self._ceiling = initial

    def wait(self, deadline: Deadline) -> None:
        time.sleep(min(random.uniform(0, self._ceiling), deadline.remaining()))
        self._ceiling = min(self._ceiling * 2, 2.0)


class SecretManagerService(Protocol):
    """The SecretManagerServiceClient methods the store calls (the real client, or a test's in-memory one)."""

    def access_secret_version(self, *args: Any, **kwargs: Any) -> Any: ...
    def add_secret_version(self, *args: Any, **kwargs: Any) -> Any: ...
    def create_secret(self, *args: Any, **kwargs: Any) -> Any: ...
    def delete_secret(self, *args: Any, **kwargs: Any) -> Any: ...
    def destroy_secret_version(self, *args: Any, **kwargs: Any) -> Any: ...
    def disable_secret_version(self, *args: Any, **kwargs: Any) -> Any: ...
    def get_secret(self, *args: Any, **kwargs: Any) -> Any: ...
    def get_secret_version(self, *args: Any, **kwargs: Any) -> Any: ...
    def list_secret_versions(self, *args: Any, **kwargs: Any) -> Any: ...
    def list_secrets(self, *args: Any, **kwargs: Any) -> Any: ...
    def update_secret(self, *args: Any, **kwargs: Any) -> Any: ...


class Calls:
    """The one SecretManagerServiceClient of the store and how every request goes through it.

    Every part of the store holds this object and keeps its own state; requests go through `call` (reads and
    idempotent changes: retried on retryable failures) or `write` (paced, sent again only when not applied).
    """

    def __init__(
        self,
        client: SecretManagerService,
        *,
        replication_locations: tuple[str, ...] = (),
        kms_key: str | None = None,
        pacer: WritePacer = PACER,
    ) -> None:
        self.client = client
        self._locations = replication_locations
        self._kms_key = kms_key
        self._pacer = pacer

    def call(self, what: str, deadline: Deadline, fn: Any, **kwargs: Any) -> Any:
        """One request, retried on retryable failures inside the deadline; raises the outcomes callers branch on
        (NotFound, AlreadyExists, FailedPrecondition) as they are, anything else as Terminal/TransientError."""

        def attempt() -> Any:
            return fn(**kwargs, retry=None, timeout=deadline.call_timeout())

        try:
            return retrying.call(
                attempt,
                predicate=is_retryable_google,
                deadline=deadline,
                on_give_up=lambda cause: from_google(cause, service=SERVICE, what=what),
            )
        except (TerminalError, TransientError, gexc.NotFound, gexc.AlreadyExists, gexc.FailedPrecondition):
            raise  # the outcomes callers branch on (a missing secret, a lost create race, a gone version)
        except gexc.GoogleAPICallError as exc:
            raise from_google(exc, service=SERVICE, what=what) from None

    def write(self, what: str, project: str, deadline: Deadline, fn: Any, **kwargs: Any) -> Any:
        """One write request, paced; sent again only when it was not applied (quota refusal, ABORTED).

        Raises the google exception of an ambiguous or final failure (callers decide), TransientError
        when the deadline passes first.
        """
        backoff = Backoff(0.05)
        while True:
            if deadline.expired():
                raise TransientError(f"{what}: the retry deadline passed", reason="DeadlineExceeded", service=SERVICE)
            self._pacer.acquire(project, deadline)
            try:
                result = fn(**kwargs, retry=None, timeout=deadline.call_timeout())
            except Exception as exc:
                if write_failure(exc) != "not_applied":
                    raise
                if _quota_refusal(exc):
                    self._pacer.refused(project)
                else:  # ABORTED, or RESOURCE_EXHAUSTED without the quota's ErrorInfo: plain backoff
                    backoff.wait(deadline)
                continue
            self._pacer.accepted(project)
            return result

    def replication(self) -> Any:
        """The replication (and CMEK) of the secrets this store creates."""
        from google.cloud.secretmanager_v1 import types

        def cmek(location: str | None) -> Any:
            if not self._kms_key:
                return None
            key = self._kms_key.replace("{location}", location or "global")
            return types.CustomerManagedEncryption(kms_key_name=key)

        if self._locations:
            replicas = [
                types.Replication.UserManaged.Replica(location=loc, customer_managed_encryption=cmek(loc))
                for loc in self._locations
            ]
            return types.Replication(user_managed=types.Replication.UserManaged(replicas=replicas))
        return types.Replication(automatic=types.Replication.Automatic(customer_managed_encryption=cmek(None)))
