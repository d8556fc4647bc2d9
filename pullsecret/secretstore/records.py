"""Small records kept as a secret's annotations, written compare-and-swap on its etag (rotation progress)."""

from __future__ import annotations

from google.api_core import exceptions as gexc
from google.protobuf import field_mask_pb2

from pullsecret.errors import TransientError, from_google
from pullsecret.model import names
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Calls, write_failure


class Records:
    """Rotation progress records: a secret's annotations, compare-and-swap on its etag."""

    def __init__(self, calls: Calls) -> None:
        self._calls = calls
        self._client = calls.client  # requests go through self._calls with its methods

    def read_record(self, name: str, deadline: Deadline) -> tuple[dict[str, str], str] | None:
        """A record secret's annotations and etag (GetSecret: read quota); None when it does not exist."""
        try:
            current = self._calls.call(f"get {name}", deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            return None
        except gexc.FailedPrecondition as exc:
            raise from_google(exc, service=SERVICE, what=f"get {name}") from None
        return dict(current.annotations), str(current.etag)

    def write_record(
        self, name: str, annotations: dict[str, str], *, etag: str | None, labels: dict[str, str], deadline: Deadline
    ) -> str | None:
        """Create the record, or replace its annotations if its etag is still `etag` (compare-and-swap).

        Returns the new etag, or None when someone else changed (or created) it first. After an ambiguous
        failure the record is read back: our annotations there mean the write landed.
        """
        from google.cloud.secretmanager_v1 import types

        project, secret_id = names.project_and_id(name)
        what = f"write {name}"
        for _ in range(5):
            try:
                if etag is None:
                    written = self._calls.write(
                        what,
                        project,
                        deadline,
                        self._client.create_secret,
                        parent=names.project_parent(project),
                        secret_id=secret_id,
                        secret=types.Secret(
                            replication=self._calls.replication(), labels=labels, annotations=annotations
                        ),
                    )
                else:
                    written = self._calls.write(
                        what,
                        project,
                        deadline,
                        self._client.update_secret,
                        secret=types.Secret(name=name, annotations=annotations, etag=etag),
                        update_mask=field_mask_pb2.FieldMask(paths=["annotations"]),
                    )
                return str(written.etag)
            except (gexc.AlreadyExists, gexc.FailedPrecondition, gexc.Aborted):
                return None
            except gexc.GoogleAPICallError as exc:
                if write_failure(exc) != "ambiguous":
                    raise from_google(exc, service=SERVICE, what=what) from None
                found = self.read_record(name, deadline)
                if found is not None and found[0] == annotations:
                    return found[1]
                if found is not None and (etag is None or found[1] != etag):
                    return None  # someone else changed it first: the caller reads it again
        raise TransientError(f"{what}: no definite answer", reason="DependencyUnavailable", service=SERVICE)
