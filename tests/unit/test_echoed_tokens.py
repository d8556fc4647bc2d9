"""The texts GKE and a Kubernetes API server answer with, as they reach an exception or a status: a token they quote
back (ours, held by the process; or any bearer token or JWT) is scrubbed, and before the text is cut (issue 50)."""

from __future__ import annotations

import json

from kubernetes.client.exceptions import ApiException

from pullsecret import errors, logs
from pullsecret.gke.api import api_error

ACCESS_TOKEN = "ya29.held-access-token-" + "A" * 40


def test_gke_quoting_our_access_token_leaves_none_of_it_in_the_exception() -> None:
    logs.hold([ACCESS_TOKEN])  # what RuntimeIdentity.token() does with every token it hands out
    body = json.dumps({"error": {"status": "INVALID_ARGUMENT", "message": "." * 290 + ACCESS_TOKEN}}).encode()
    raised = api_error(400, body)
    assert ACCESS_TOKEN[:8] not in str(raised) and "[REDACTED]" in str(raised)


def test_a_kubernetes_status_message_quoting_a_bearer_token_is_scrubbed() -> None:
    exc = ApiException(status=422, reason="Invalid")
    exc.body = json.dumps(
        {"kind": "Status", "reason": "Invalid", "message": "sent Authorization: Bearer abc.def-ghij.k"}
    )
    mapped = errors.from_kube(exc, what="patch secret s")
    assert "abc.def" not in mapped.message and "Bearer [REDACTED]" in mapped.message
