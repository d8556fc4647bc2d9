"""Retention and deletion of a cluster's secret: old versions destroyed, DELETION_POLICY applied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc

from pullsecret.errors import OwnershipConflict, TerminalError, TransientError, from_google, mapped_pages
from pullsecret.model import names
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Calls


class Retention:
    """Old versions destroyed and DELETION_POLICY applied to a cluster's secret."""

    def __init__(self, calls: Calls) -> None:
        self._calls = calls
        self._client = calls.client  # requests go through self._calls with its methods

    def apply_retention(
        self, secret_name: str, *, keep: int, protected: set[str], deadline: Deadline
    ) -> RetentionResult:
        """Destroy versions older than the newest `keep` enabled ones, never one in `protected`.

        With a `version_destroy_ttl` on the secret the service only schedules destruction (the version
        is disabled until then); versions already scheduled are left alone. Raises TransientError /
        TerminalError when listing fails; a single destroy that fails is skipped (the next write retries).
        """
        from google.cloud.secretmanager_v1 import types

        what = f"list versions of {secret_name}"
        pager = self._calls.call(
            what,
            deadline,
            self._client.list_secret_versions,
            request=types.ListSecretVersionsRequest(parent=secret_name, page_size=100),
        )
        versions = list(mapped_pages(pager, service=SERVICE, what=what))
        # Newest first, whatever order the answer had (version ids are increasing integers).
        versions.sort(key=lambda v: names.version_number(v.name), reverse=True)
        enabled = types.SecretVersion.State.ENABLED
        destroyed_state = types.SecretVersion.State.DESTROYED
        protected_ids = {names.version_id(p) for p in protected if p}
        kept = 0
        destroyed: list[str] = []
        for version in versions:
            number = names.version_id(version.name)
            if version.state == destroyed_state or _has_schedule(version):
                continue
            if number in protected_ids:
                kept += version.state == enabled
                continue
            if kept < keep:
                # Inside the window: keep enabled versions; leave disabled ones (someone disabled them on
                # purpose, and they are not older than what we keep).
                kept += version.state == enabled
                continue
            try:
                self._calls.call(
                    f"destroy {version.name}",
                    deadline,
                    self._client.destroy_secret_version,
                    request=types.DestroySecretVersionRequest(name=version.name, etag=version.etag),
                )
            except (gexc.FailedPrecondition, gexc.NotFound):
                continue  # changed or destroyed concurrently
            except (TransientError, TerminalError):
                continue
            destroyed.append(number)
        return RetentionResult(kept=kept, destroyed=tuple(destroyed))

    def delete_secret(self, *, project: str, secret_id: str, policy: str, deadline: Deadline) -> str:
        """Apply the deletion policy to the cluster's secret; returns what happened (for the status).

        DELETE: delete with the secret's etag, only if labelled managed-by=hyperfleet. DISABLE: disable
        every enabled version. RETAIN: touch nothing. Raises OwnershipConflict (foreign secret, DELETE or
        DISABLE), TransientError, TerminalError.
        """
        from google.cloud.secretmanager_v1 import types

        name = names.secret_name(project, secret_id)
        if policy == "RETAIN":
            return "retained"
        for _ in range(5):
            try:
                current = self._calls.call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
            except gexc.NotFound:
                return "absent"
            except gexc.FailedPrecondition as exc:
                raise from_google(exc, service=SERVICE, what=f"get secret {secret_id}") from None
            if current.labels.get("managed-by") != "hyperfleet":
                raise OwnershipConflict(
                    f"Secret Manager secret {secret_id} in project {project} is not labelled managed-by=hyperfleet; "
                    "not deleting or disabling it",
                    service=SERVICE,
                )
            if policy == "DISABLE":
                return self._disable_all(current.name, secret_id, deadline)
            try:
                self._calls.call(
                    f"delete secret {secret_id}",
                    deadline,
                    self._client.delete_secret,
                    request=types.DeleteSecretRequest(name=current.name, etag=current.etag),
                )
            except gexc.NotFound:
                return "absent"
            except gexc.FailedPrecondition:
                continue  # changed since we read it (etag): read again and decide again
            return "deleted"
        raise TransientError(
            f"delete secret {secret_id}: it kept changing while deleting", reason="WriteConflict", service=SERVICE
        )

    def _disable_all(self, secret_name: str, secret_id: str, deadline: Deadline) -> str:
        from google.cloud.secretmanager_v1 import types

        what = f"list versions of secret {secret_id}"
        pager = self._calls.call(
            what,
            deadline,
            self._client.list_secret_versions,
            request=types.ListSecretVersionsRequest(parent=secret_name, filter="state:ENABLED", page_size=100),
        )
        count = 0
        for version in list(mapped_pages(pager, service=SERVICE, what=what)):
            try:
                self._calls.call(
                    f"disable {version.name}",
                    deadline,
                    self._client.disable_secret_version,
                    request=types.DisableSecretVersionRequest(name=version.name, etag=version.etag),
                )
            except (gexc.FailedPrecondition, gexc.NotFound):
                raise TransientError(
                    f"disable {version.name}: it changed while disabling", reason="WriteConflict", service=SERVICE
                ) from None
            count += 1
        return f"disabled {count} version(s)" if count else "all versions disabled"


def _has_schedule(version: Any) -> bool:
    try:
        return "scheduled_destroy_time" in version and bool(version.scheduled_destroy_time)
    except TypeError:
        return bool(getattr(version, "scheduled_destroy_time", None))


@dataclass(frozen=True)
class RetentionResult:
    kept: int
    destroyed: tuple[str, ...]  # version ids destroyed (or scheduled for destruction) by this call
