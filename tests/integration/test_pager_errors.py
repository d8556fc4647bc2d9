"""A failure while a pager fetches a later page is mapped like any other call's failure.

Secret Manager lists 100 versions per page here; the second page is fetched while iterating, outside the
call that returned the pager. Its failure must not surface as an unexpected error (a terminal
"UnexpectedError" after a successful apply); it is a transient failure of that step.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from pullsecret.retrying import Deadline
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-pages"
PROJECT = "hf-demo-project"
PROJECT_NUMBER = "123456789012"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
SECOND_PAGE_FAILS = {"service": "secretmanager", "method": "ListSecretVersions", "code": "UNAVAILABLE", "count": 1}


def seed_many_versions(admin: Admin, count: int = 101) -> None:
    """The cluster's secret (ours by its label) with more versions than one page holds."""
    versions = [base64.b64encode(b'{"auths":{"old%d.example":{"auth":"eDp5"}}}' % i).decode() for i in range(count)]
    labels = {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": CID}
    body = {"labels": labels, "versions": versions}
    admin.call("PUT", f"/secretmanager/projects/{PROJECT}/secrets/{SECRET_ID}", body)


def deliver(adapter: Adapter) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, 1)))


def test_retention_whose_second_page_fails_leaves_the_event_applied(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, CID)
    seed_many_versions(admin)
    store = adapter.store
    secret_name = f"projects/{PROJECT_NUMBER}/secrets/{SECRET_ID}"
    admin.fault(**SECOND_PAGE_FAILS, skip=1)
    with pytest.raises(TransientError) as failed:
        store.retention.apply_retention(secret_name, keep=3, protected=set(), deadline=Deadline(10))
    assert failed.value.reason == "DependencyUnavailable" and "later page" in failed.value.message
    admin.call("DELETE", "/faults")
    # End to end: the version is written and applied; retention's page 2 fails; the outcome is the apply.
    admin.fault(**SECOND_PAGE_FAILS, skip=1)
    assert deliver(adapter).result == "applied"
    report = [r for r in admin.reports() if r["cluster_id"] == CID][-1]
    assert {c["type"]: c["status"] for c in report["body"]["conditions"]}["Available"] == "True"
    assert report["body"]["data"]["retention"] == {"keep": 3, "error": "DependencyUnavailable"}
    assert world.book.faults_injected()["secretmanager"]["ListSecretVersions"] == 2  # one in each part


def test_deletion_whose_second_page_fails_is_redelivered(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    monkeypatch.setenv("DELETION_POLICY", "DISABLE")
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, CID)
    seed_many_versions(admin)
    admin.patch_cluster(CID, {"deleted_time": "2026-11-22T10:00:00Z"})
    admin.fault(**SECOND_PAGE_FAILS, skip=1)
    with pytest.raises(TransientError):
        deliver(adapter)
    admin.call("DELETE", "/faults")
    assert deliver(adapter).result == "finalized"
    versions = world.secretmanager.versions(PROJECT, SECRET_ID)
    assert {v["state"] for v in versions} == {"DISABLED"}
