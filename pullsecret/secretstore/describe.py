"""What the operator CLI shows of a cluster's secret: metadata and version states, never a payload."""

from __future__ import annotations

from typing import Any

from google.api_core import exceptions as gexc

from pullsecret.errors import mapped_pages
from pullsecret.model import names
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Calls


class Description:
    """The operator CLI's read of a cluster's secret."""

    def __init__(self, calls: Calls) -> None:
        self._calls = calls
        self._client = calls.client  # requests go through self._calls with its methods

    def describe(self, *, project: str, secret_id: str, deadline: Deadline) -> dict[str, Any] | None:
        """Metadata of the cluster's secret and its versions, never a payload (for `inspect`)."""
        name = names.secret_name(project, secret_id)
        try:
            secret = self._calls.call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            return None
        what = f"list versions of secret {secret_id}"
        pager = self._calls.call(what, deadline, self._client.list_secret_versions, parent=name)
        versions = sorted(
            mapped_pages(pager, service=SERVICE, what=what), key=lambda v: names.version_number(v.name), reverse=True
        )
        return {
            "name": secret.name,
            "labels": dict(secret.labels),
            "annotations": dict(secret.annotations),
            "versions": [
                {
                    "name": v.name,
                    "state": v.state.name,
                    "create_time": _iso(v.create_time),
                }
                for v in versions
            ],
        }


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return str(value.isoformat())
    except AttributeError:
        return str(value)
