"""Whether a management cluster enforces the adapter's admission policy, checked before any write relies on it.

Once per API server (and again after POLICY_CHECK_TTL_S), with get on the policy and its binding only: the installed
pair must be exactly what this release renders (delivery/admission_policy.py). The policy judges only the writes of
the identity it names; credentials that name no service account (an operator's own, running the CLI) write only when a
SelfSubjectReview says the caller is that identity.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from pullsecret import retrying
from pullsecret.delivery.direct.admission_policy import ExpectedPolicy, as_caller, policy_problem
from pullsecret.delivery.direct.kubeapi import ApiException, SecretsApi
from pullsecret.errors import TerminalError, TransientError, from_kube, is_retryable_kube, kube_status
from pullsecret.retrying import Deadline

POLICY_CHECK_TTL_S = 3600.0  # re-checked hourly: a policy removed later is noticed


def kube_call(what: str, deadline: Deadline, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """One Kubernetes call through the official client, retried on what may pass (retrying.call), raw answer."""

    def attempt() -> Any:
        return fn(*args, **kwargs, _preload_content=False, _request_timeout=deadline.call_timeout())

    return retrying.call(
        attempt,
        predicate=is_retryable_kube,
        deadline=deadline,
        on_give_up=lambda cause: from_kube(cause, what=what),
    )


class PolicyGuard:
    """Remembers, per API server, when its admission policy was last found to be exactly this release's."""

    def __init__(self, policy: ExpectedPolicy) -> None:
        self._policy = policy  # what this release renders: the installed policy must be exactly that
        self._guarded: dict[str, float] = {}  # API server URL -> monotonic time of the last successful check
        self._guard_lock = threading.Lock()

    def ensure(self, api: SecretsApi, deadline: Deadline) -> None:
        """Refuse (terminal) to write on a cluster whose API server does not enforce our admission policy."""
        host = str(getattr(getattr(api, "configuration", None), "host", ""))
        with self._guard_lock:
            checked = self._guarded.get(host)
        if checked is not None and time.monotonic() - checked < POLICY_CHECK_TTL_S:
            return
        # `api` (pullsecret.delivery.direct.kubeapi.SecretsApi) also reads the two policy objects, without importing
        # AdmissionregistrationV1Api's models on the first event.
        policy = self._read_policy("ValidatingAdmissionPolicy", api.read_validating_admission_policy, deadline)
        binding = self._read_policy(
            "ValidatingAdmissionPolicyBinding", api.read_validating_admission_policy_binding, deadline
        )
        problem = policy_problem(policy, binding, self._policy)
        if problem is not None:
            raise TerminalError(
                f"the management cluster does not enforce the adapter's admission policy: {problem}; apply "
                "`terraform output -raw kubernetes_manifests` to it (see terraform/README.md); nothing was written",
                reason="AdmissionPolicyMissing",
                service="kubernetes",
            )
        if self._policy.identity_email is None:
            self._ensure_judged(api, policy, binding, deadline)
        with self._guard_lock:
            self._guarded[host] = time.monotonic()

    def _ensure_judged(
        self, api: SecretsApi, policy: dict[str, Any], binding: dict[str, Any], deadline: Deadline
    ) -> None:
        """Credentials that name no service account (an operator's own, running the CLI): the policy judges only the
        user it names, so write only when a SelfSubjectReview says the caller is that user; else refuse, saying how to
        run as it."""
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        answer = json.loads(kube_call("SelfSubjectReview", deadline, api.create_self_subject_review, review).data)
        user = ((answer.get("status") or {}).get("userInfo") or {}).get("username")
        try:
            problem = policy_problem(policy, binding, as_caller(self._policy, str(user or "")))
        except ValueError:
            problem = "the caller's user name cannot be judged by it"
        if problem is not None:
            raise TerminalError(
                "the admission policy judges only the writes of the identity it names, and these credentials are "
                "another one (SelfSubjectReview), whose writes it would admit unchecked: run as the function's "
                "runtime service account (gcloud auth application-default login "
                "--impersonate-service-account=RUNTIME_SA, `terraform output runtime_service_account_email`); "
                "nothing was written",
                reason="PolicyIdentityMismatch",
                service="kubernetes",
            )

    def _read_policy(self, kind: str, fn: Callable[..., Any], deadline: Deadline) -> dict[str, Any]:
        name = self._policy.name  # ADMISSION_POLICY_NAME: this instance's, beside any other instance's
        what = f"read {kind} {name}"
        try:
            response = kube_call(what, deadline, fn, name)
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status[0] == 404:
                raise TerminalError(
                    f"{kind} {name} is not installed on the management cluster; apply "
                    "`terraform output -raw kubernetes_manifests` to it (see terraform/README.md); nothing was written",
                    reason="AdmissionPolicyMissing",
                    service="kubernetes",
                ) from None
            if status is not None and status[0] == 403:
                raise TerminalError(
                    f"cannot verify {kind} {name}: the runtime identity may not read it (RBAC of an older "
                    "release?); re-apply `terraform output -raw kubernetes_manifests`; nothing was written",
                    reason="AdmissionPolicyUnverified",
                    service="kubernetes",
                ) from None
            raise from_kube(exc, what=what) from None
        body: dict[str, Any] = json.loads(response.data)
        return body
