"""The secrets labelled as this adapter's in one project, page by page (the fleet view's read; no payload)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pullsecret.errors import mapped_pages
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Calls, unix_seconds
from pullsecret.secretstore.labels import sm_label_value

PAGE_SIZE = 100  # ListSecrets pages; each page is one call against the project's read quota


@dataclass(frozen=True)
class Listed:
    name: str  # projects/P/secrets/ID
    labels: dict[str, str]
    created: int | None = None  # unix seconds of its creation, when the listing says


def label_filter(adapter: str) -> str:
    """ListSecrets' filter for the labels every secret of ours carries (pullsecret.secretstore.labels)."""
    return f"labels.managed-by=hyperfleet AND labels.adapter={sm_label_value(adapter)}"


def ours(
    calls: Calls, *, project: str, adapter: str, deadline: Deadline, page_size: int = PAGE_SIZE
) -> Iterator[Listed]:
    """Every secret of `project` labelled as `adapter`'s; later pages are fetched as the caller iterates."""
    what = f"list secrets of project {project}"
    pager = calls.call(
        what,
        deadline,
        calls.client.list_secrets,
        request={"parent": f"projects/{project}", "filter": label_filter(adapter), "page_size": page_size},
    )
    for secret in mapped_pages(pager, service=SERVICE, what=what):
        yield Listed(name=str(secret.name), labels=dict(secret.labels), created=unix_seconds(secret.create_time))
