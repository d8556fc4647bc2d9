"""Who owns a Secret Manager secret: the labels the adapter puts on its secrets, and the refusal of others'."""

from __future__ import annotations

import re

from google.api_core import exceptions as gexc

from pullsecret.errors import AdapterError, OwnershipConflict
from pullsecret.logs import log
from pullsecret.model import names
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import Calls

# OwnershipConflict: defined in pullsecret.errors
__all__ = ["OwnershipConflict", "adopt", "sm_label_value", "sm_labels"]

_LABEL_VALUE_BAD = re.compile(r"[^a-z0-9_-]")


def sm_label_value(value: str) -> str:
    """Sanitise to Secret Manager's label value rule: [a-z0-9_-]{0,63}."""
    return _LABEL_VALUE_BAD.sub("-", value.lower())[:63]


def sm_labels(*, adapter: str, cluster_id: str, cluster_name: str, deployment: str = "") -> dict[str, str]:
    """Our labels; `deployment` (DEPLOYMENT_ID) marks which deployment owns it (S5 of pullsecret.operator.sweep)."""
    return {
        **({"deployment": sm_label_value(deployment)} if deployment else {}),
        "managed-by": "hyperfleet",
        "adapter": sm_label_value(adapter),
        "cluster-id": sm_label_value(cluster_id),
        "cluster-name": sm_label_value(cluster_name),
        "resource-type": "pull-secret",
        "hyperfleet-version": "v1",
    }


def adopt(calls: Calls, current: object, labels: dict[str, str], deadline: Deadline) -> None:
    """Best effort: add the `deployment` label to a secret of ours (`current`, as GetSecret answered) written before
    the label existed (UpdateSecret with its etag; a conflict or a refusal leaves it to a later write)."""
    from google.cloud.secretmanager_v1 import types

    name, etag = str(getattr(current, "name", "")), str(getattr(current, "etag", ""))
    merged = {**dict(getattr(current, "labels", {})), "deployment": labels["deployment"]}
    try:
        calls.call(
            f"label secret {names.project_and_id(name)[1]}",
            deadline,
            calls.client.update_secret,
            secret=types.Secret(name=name, labels=merged, etag=etag),
            update_mask={"paths": ["labels"]},
        )
    except (gexc.GoogleAPICallError, AdapterError) as exc:
        log.warning(f"deployment label not added to {name}: {type(exc).__name__}", operation="secretmanager.label")
