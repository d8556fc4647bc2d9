"""The Kubernetes Secret on the management cluster: probe, apply and delete it without the right to read any Secret.

The runtime identity holds create, patch and delete on Secrets and no get, list or watch
(terraform/kubernetes/rbac.yaml): on a management cluster the Secrets include every hosted cluster's admin
kubeconfig. What it learns of a Secret comes from server-side apply answers, and the API server's
ValidatingAdmissionPolicy (terraform/kubernetes/admission-policy.yaml) admits those requests only for Secrets
labelled as this adapter's (kubesecret.kube_labels) and named by KUBERNETES_SECRET_TEMPLATE after their cluster-id
label, of type kubernetes.io/dockerconfigjson, in namespaces matching MANAGEMENT_NAMESPACE_PATTERN, and never
lets an older cluster generation replace a newer one. So:

- `probe` is a dry-run apply (nothing is stored) of our label and type, values our Secret already has: its
  answer is our live Secret, "absent" (the dry run would have to create it), or a denial that names the
  reason (a foreign Secret, a wrong type, a namespace outside the pattern) and carries none of the other
  Secret's content;
- `apply` writes only when our fields differ (data[.dockerconfigjson], type, our labels and annotations;
  fields of other managers are not compared, since apply never removes them): create when absent, else an
  apply (force=false) with the probed resourceVersion as precondition; a field another manager changed is
  taken back with force=true, which the policy admits only on our Secret. When the probed managedFields show
  no manager but ours owning a field we apply (after our own create, whose Update entry the API server counts
  as a manager apart from our Apply), the apply is forced at once: one write instead of a refused one and a retry;
- `delete` deletes without reading: the policy refuses a Secret that is not ours.

`ensure_guarded` checks once per management cluster (delivery/policy_guard.py) that the policy and binding installed
are exactly the ones this release renders before any write relies on them.
"""

from __future__ import annotations

import json
from typing import Any

from pullsecret.delivery.base import Delivered
from pullsecret.delivery.direct.admission_policy import ExpectedPolicy
from pullsecret.delivery.direct.kubeapi import ApiException, SecretsApi
from pullsecret.delivery.direct.kubesecret import (
    A_CREATED_AT,
    A_LINEAGE,
    DOCKERCONFIGJSON,
    DesiredSecret,
    Probed,
    body_of,
    differs,
    field_conflict,
    generation_of,
    now,
    only_ours_own,
    policy_denial,
    probe_manifest,
    would_create_without_data,
)
from pullsecret.delivery.direct.policy_guard import PolicyGuard, kube_call
from pullsecret.errors import (
    AdapterError,
    OwnershipConflict,
    TerminalError,
    TransientError,
    from_kube,
    kube_status,
)
from pullsecret.retrying import Deadline

MAX_ATTEMPTS = 8


class KubeSecrets:
    """Probe / apply / delete the pull Secret through one Secrets API (delivery.kubeapi); verifies the admission policy
    per cluster."""

    def __init__(self, field_manager: str, policy: ExpectedPolicy) -> None:
        self._field_manager = field_manager
        self._probe_manager = f"{field_manager}-probe"
        self._guard = PolicyGuard(policy)
        self._policy_name = policy.name

    def ensure_guarded(self, api: SecretsApi, deadline: Deadline) -> None:
        """Refuse (terminal) to write on a cluster whose API server does not enforce our admission policy."""
        self._guard.ensure(api, deadline)

    # -- probe, apply, delete ---------------------------------------------------------------
    def probe(self, api: SecretsApi, ns: str, name: str, deadline: Deadline) -> Probed:
        """Our live Secret through a dry-run apply; raises OwnershipConflict / TerminalError / TransientError."""
        what = f"probe Secret {ns}/{name}"
        try:
            response = kube_call(
                what,
                deadline,
                api.patch_namespaced_secret,
                name,
                ns,
                probe_manifest(ns, name),
                field_manager=self._probe_manager,
                force=True,  # nothing is stored; force only lets the policy judge our values against the live ones
                dry_run="All",
                _content_type="application/apply-patch+yaml",
            )
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            if would_create_without_data(exc):
                return Probed(None)  # a dry-run create, refused for want of data: no Secret at that name
            raise self._refusal(exc, ns, name, what) from None
        if response.status == 201:
            return Probed(None)  # a dry-run create: there is no Secret at that name
        body: dict[str, Any] = json.loads(response.data)
        return Probed(body)

    def _refusal(self, exc: ApiException, ns: str, name: str, what: str) -> AdapterError:
        """The meaning of a refused probe or write."""
        denied = policy_denial(exc, policy_name=self._policy_name)
        if denied is not None:
            reason, message = denied
            if reason == "StaleGeneration":
                # A newer generation landed between our probe and our write: the redelivery reports stale.
                return TransientError(f"{what}: {message}", reason="WriteConflict", service="kubernetes")
            if reason == "OwnershipConflict":
                return OwnershipConflict(
                    f"Kubernetes Secret {ns}/{name} exists without this adapter's labels (hyperfleet.io/managed-by "
                    "and a cluster-id naming this Secret's cluster) or is not a dockerconfigjson Secret; refusing "
                    "to overwrite it (the admission policy denied the write)",
                    service="kubernetes",
                )
            if reason == "SecretTypeMismatch":
                return TerminalError(
                    f"Kubernetes Secret {ns}/{name} is not of type {DOCKERCONFIGJSON}; the type is immutable, "
                    "delete it to let the adapter recreate it",
                    reason="SecretTypeMismatch",
                    service="kubernetes",
                )
            return TerminalError(f"{what}: {message}", reason=reason, service="kubernetes")
        status = kube_status(exc)
        if status is not None and status[0] == 404:
            # The namespace is missing: the placement adapter may still be creating it.
            return TransientError(
                f"{what}: namespace {ns} not found (yet)", reason="NamespaceMissing", service="kubernetes"
            )
        if status is not None and status == (422, "Invalid") and "field is immutable" in str(body_of(exc)):
            # Validation runs before admission: a Secret of another type answers "type is immutable". The
            # adapter only ever writes dockerconfigjson Secrets, so that one is someone else's.
            return OwnershipConflict(
                f"Kubernetes Secret {ns}/{name} exists with a type other than {DOCKERCONFIGJSON}, so the adapter "
                "did not write it; refusing to overwrite it",
                service="kubernetes",
            )
        return from_kube(exc, what=what)

    def apply(self, api: SecretsApi, desired: DesiredSecret, deadline: Deadline, probed: Probed) -> Delivered:
        """Make the Secret equal `desired`, starting from `probed` (just probed). After a lost race it probes again.

        Raises OwnershipConflict / TerminalError / TransientError.
        """
        ns, name = desired.namespace, desired.name
        collided = False
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                probed = self.probe(api, ns, name, deadline)
            live = probed.live
            if live is None and collided:
                # Create said it exists, the probe says it cannot be shown: ours without its data key (someone
                # removed it). A full apply (no precondition: the policy still judges ownership) restores it.
                applied = self._apply(api, desired.manifest(now()), deadline, force=False)
                if applied is None:
                    continue
                return Delivered(
                    True, str(applied["metadata"].get("resourceVersion", "")), recorded_generation=desired.generation
                )
            if live is None:
                result = self._create(api, desired, deadline)
                if result is not None:
                    return result
                collided = True
                continue  # created concurrently by someone else: probe and decide again
            collided = False
            metadata = live.get("metadata") or {}
            annotations = metadata.get("annotations") or {}
            recorded = generation_of(annotations)
            if recorded > desired.generation:
                return Delivered(
                    False, str(metadata.get("resourceVersion", "")), stale=True, recorded_generation=recorded
                )
            if not differs(live, desired):
                return Delivered(False, str(metadata.get("resourceVersion", "")), recorded_generation=recorded)
            body = desired.manifest(
                annotations.get(A_CREATED_AT) or now(),
                resource_version=str(metadata.get("resourceVersion", "")),
                kept_lineage=annotations.get(A_LINEAGE),
            )
            # Force only when nobody but us owns a field we apply (our create's Update entry conflicts with our
            # Apply); the resourceVersion precondition pins the very object whose managedFields were judged.
            force = bool(metadata.get("resourceVersion")) and only_ours_own(
                live, body, {self._field_manager, self._probe_manager}
            )
            applied = self._apply(api, body, deadline, force=force)
            if applied is None:
                continue  # changed or deleted since the probe: the next round probes again
            return Delivered(
                True, str(applied["metadata"].get("resourceVersion", "")), recorded_generation=desired.generation
            )
        raise TransientError(
            f"apply Secret {ns}/{name}: kept conflicting with concurrent writers",
            reason="WriteConflict",
            service="kubernetes",
        )

    def _apply(
        self, api: SecretsApi, body: dict[str, Any], deadline: Deadline, *, force: bool
    ) -> dict[str, Any] | None:
        """One server-side apply; None when the precondition failed (probe again)."""
        ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
        what = f"apply Secret {ns}/{name}"
        try:
            response = kube_call(
                what,
                deadline,
                api.patch_namespaced_secret,
                name,
                ns,
                body,
                field_manager=self._field_manager,
                force=force,
                _content_type="application/apply-patch+yaml",
            )
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status[0] == 409 and not force and field_conflict(exc):
                # Someone else set a field we apply (e.g. kubectl edit of the data): take it back. The probe
                # showed the Secret is ours, the resourceVersion pins that object, the policy re-checks both.
                return self._apply(api, body, deadline, force=True)
            if status is not None and status[0] in (404, 409):
                return None
            denied = policy_denial(exc, policy_name=self._policy_name)
            if denied is not None and denied[0] == "StaleGeneration":
                return None  # a newer generation landed since the probe: the next probe reports it
            raise self._refusal(exc, ns, name, what) from None
        applied: dict[str, Any] = json.loads(response.data)
        return applied

    def _create(self, api: SecretsApi, desired: DesiredSecret, deadline: Deadline) -> Delivered | None:
        what = f"create Secret {desired.namespace}/{desired.name}"
        try:
            response = kube_call(
                what,
                deadline,
                api.create_namespaced_secret,
                desired.namespace,
                desired.manifest(now()),
                field_manager=self._field_manager,
            )
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status == (409, "AlreadyExists"):
                return None
            raise self._refusal(exc, desired.namespace, desired.name, what) from None
        created = json.loads(response.data)
        return Delivered(
            True, str(created["metadata"].get("resourceVersion", "")), recorded_generation=desired.generation
        )

    def delete(self, api: SecretsApi, namespace: str, name: str, deadline: Deadline) -> bool:
        """Delete our Secret; True if something was deleted. The admission policy refuses one that is not ours."""
        what = f"delete Secret {namespace}/{name}"
        try:
            kube_call(what, deadline, api.delete_namespaced_secret, name, namespace)
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status[0] == 404:
                return False
            denied = policy_denial(exc, policy_name=self._policy_name)
            if denied is not None and denied[0] == "OwnershipConflict":
                raise OwnershipConflict(
                    f"Kubernetes Secret {namespace}/{name} is not labelled as this adapter's (hyperfleet.io/managed-by "
                    "and a cluster-id naming this Secret's cluster); not deleting it",
                    service="kubernetes",
                ) from None
            raise self._refusal(exc, namespace, name, what) from None
        return True

    def read(self, api: SecretsApi, namespace: str, name: str, deadline: Deadline) -> dict[str, Any] | None:
        """The live Secret, or None: for the operator CLI's own credentials (the runtime identity may not read)."""
        what = f"read Secret {namespace}/{name}"
        try:
            response = kube_call(what, deadline, api.read_namespaced_secret, name, namespace)
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status[0] == 404:
                return None
            raise from_kube(exc, what=what) from None
        body: dict[str, Any] = json.loads(response.data)
        return body
