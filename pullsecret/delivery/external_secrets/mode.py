"""KUBERNETES_DELIVERY=external-secrets: the pull secret reaches the management cluster through External Secrets
Operator, and the function touches Google APIs only.

GCP HCP forbids direct connections to a management cluster's API server by default (gcp-hcp
design-decisions/networking/no-direct-cross-cluster-connectivity.md) and delivers Secret Manager secrets with
ESO's namespaced SecretStores, `roles/secretmanager.secretAccessor` granted per secret to the Kubernetes service
account's own Workload Identity principal (design-decisions/identity/secret-management-strategy.md). In this mode
the function writes the Secret Manager secret as in direct mode, and keeps its access; Terraform renders the
SecretStore and ExternalSecret for the component that owns the management cluster (`external_secrets_manifests`).

What is ours in a secret's allow policy: the members EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE produces, for any
namespace, in unconditional accessor bindings. Invariants, kept by `grant` and `remove_access`:

- after `grant`, exactly one unconditional accessor binding holds the principal of the cluster's namespace, and
  no other member of ours remains (a cluster placed elsewhere before loses its old namespace's access);
- after `remove_access`, no member of ours remains; a binding it leaves empty is dropped;
- every other binding, member, condition and the policy's version are written back as read;
- the only member a write may add is the principal rendered here from a namespace that is a Kubernetes
  namespace name matching MANAGEMENT_NAMESPACE_PATTERN: anything else is refused before any call (a placement
  status cannot choose whom the secret is shared with).

Protocol: read-modify-write with the policy's etag (https://cloud.google.com/iam/docs/policies#etag). GetIamPolicy,
change, SetIamPolicy carrying the etag read; a concurrent writer changes the etag, so the write is refused with
ABORTED and nothing is lost: the whole cycle runs again on the fresh policy (MAX_ROUNDS, jittered backoff). A
policy that already holds the invariant is not written. The runtime identity holds getIamPolicy/setIamPolicy
only under the per-cluster name condition (terraform/iam.tf), so the function cannot share any other secret.

No call reaches GKE or Kubernetes in this mode: `probe` answers "no live Secret" without a request, and the
probed handle's `apply` is the grant.
"""

from __future__ import annotations

import dataclasses
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from google.api_core import exceptions as gexc

from pullsecret import retrying
from pullsecret.delivery.base import (
    Cleaned,
    Delivered,
    Desired,
    DryRun,
    Leaving,
    Stray,
    Where,
    Wiring,
    Wording,
)
from pullsecret.delivery.external_secrets import doctor as doctor_external_secrets
from pullsecret.delivery.external_secrets.reports import WORDING, ExternalSecretsData
from pullsecret.delivery.external_secrets.settings import MODE, ExternalSecretsSettings
from pullsecret.doctor.kit import DoctorCheck
from pullsecret.errors import ConfigError, TerminalError, TransientError, from_google, is_retryable_google
from pullsecret.logs import log
from pullsecret.model.names import NAMESPACE_RE
from pullsecret.model.preconditions import Placement
from pullsecret.model.status_data import OwnData, StatusData
from pullsecret.retrying import Deadline


class IamPolicyClient(Protocol):
    """The Secret Manager client calls a delivery may make on a secret's allow policy (SecretManagerServiceClient)."""

    def get_iam_policy(self, *, request: dict[str, Any], retry: Any, timeout: float) -> Any: ...

    def set_iam_policy(self, *, request: dict[str, Any], retry: Any, timeout: float) -> Any: ...


def spelled(duration: str) -> str:
    """'1h30m' -> '1 h 30 min'."""
    units = {"h": "h", "m": "min", "s": "s"}
    parts, number = [], ""
    for ch in duration:
        if ch.isdigit():
            number += ch
        elif ch in units and number:
            parts.append(f"{int(number)} {units[ch]}")
            number = ""
    return " ".join(parts) or duration


def worded(refresh: str) -> Wording:
    """WORDING with its `{refresh}` filled from a refreshInterval such as 5m."""
    return dataclasses.replace(
        WORDING,
        available_shared=WORDING.available_shared.format(refresh=spelled(refresh)),
        available_own=WORDING.available_own.format(refresh=spelled(refresh)),
    )


ACCESSOR = "roles/secretmanager.secretAccessor"
SERVICE = "secretmanager"
MAX_ROUNDS = 8


class RefusedPrincipal(TerminalError):
    """A namespace that cannot be rendered into the one principal this adapter may grant."""

    default_reason = "InvalidPlacement"


def principal_for(template: str, pattern: re.Pattern[str], namespace: str) -> str:
    """The Workload Identity principal of `namespace`'s Kubernetes service account; raises RefusedPrincipal."""
    shown = namespace[:80]
    if len(namespace) > 63 or not NAMESPACE_RE.fullmatch(namespace) or not pattern.fullmatch(namespace):
        raise RefusedPrincipal(
            f"namespace {shown!r} is not a Kubernetes namespace matching MANAGEMENT_NAMESPACE_PATTERN "
            f"{pattern.pattern!r}; no access is granted for it"
        )
    return template.format(namespace=namespace)


def ours(template: str) -> re.Pattern[str]:
    """The members the template produces, for any namespace name."""
    prefix, _, suffix = template.partition("{namespace}")
    return re.compile(re.escape(prefix) + NAMESPACE_RE.pattern.strip("^$") + re.escape(suffix))


def _unconditional_accessors(policy: Any) -> list[Any]:
    return [b for b in policy.bindings if b.role == ACCESSOR and not b.HasField("condition")]


def with_member(policy: Any, member: str, mine: re.Pattern[str]) -> bool:
    """Make `member` the one member of ours, in exactly one unconditional accessor binding; True if changed."""
    changed = False
    holders = 0
    for binding in _unconditional_accessors(policy):
        for existing in list(binding.members):
            if mine.fullmatch(existing) and (existing != member or holders):
                binding.members.remove(existing)
                changed = True
            elif existing == member:
                holders += 1
    if not holders:
        accessors = _unconditional_accessors(policy)
        binding = accessors[0] if accessors else policy.bindings.add(role=ACCESSOR)
        binding.members.append(member)
        changed = True
    return _drop_empty(policy) or changed


def without_members(policy: Any, mine: re.Pattern[str]) -> bool:
    """Remove every member of ours from the unconditional accessor bindings; True if changed."""
    changed = False
    for binding in _unconditional_accessors(policy):
        for existing in list(binding.members):
            if mine.fullmatch(existing):
                binding.members.remove(existing)
                changed = True
    return _drop_empty(policy) or changed


def _drop_empty(policy: Any) -> bool:
    empty = [b for b in _unconditional_accessors(policy) if not b.members]
    for binding in empty:
        policy.bindings.remove(binding)
    return bool(empty)


def grants(policy: Any) -> set[tuple[str, str, str]]:
    """(role, member, condition expression) of every grant in a policy."""
    found: set[tuple[str, str, str]] = set()
    for binding in policy.bindings:
        condition = binding.condition.expression if binding.HasField("condition") else ""
        found.update((binding.role, member, condition) for member in binding.members)
    return found


def check_added(before: set[tuple[str, str, str]], after: Any, allowed: str | None) -> None:
    """Refuse a write that would add anything but the one rendered principal's accessor grant."""
    added = grants(after) - before
    if added - ({(ACCESSOR, allowed, "")} if allowed else set()):
        raise TerminalError(
            "refusing to write an allow policy that grants more than the rendered principal",
            reason="RefusedPrincipal",
            service=SERVICE,
        )


@dataclass(frozen=True)
class AccessProbed:
    """No Kubernetes Secret is read in this mode: the handle is the secret the access is granted on."""

    delivery: ExternalSecretsDelivery
    secret_name: str
    placement: Placement
    present: bool = False
    recorded_generation: int = 0
    recorded_lineage: str | None = None

    def apply(self, desired: Desired, deadline: Deadline) -> Delivered:
        return self.delivery.grant(self.secret_name, desired.namespace, deadline)

    def dry_run(self, desired: Desired, *, store_writes: bool) -> DryRun:
        where = f"{self.placement.management_cluster}, namespace {self.placement.namespace}"
        line = (
            f"{MODE}: would make sure the namespace's reader may access the secret ({where}); the "
            f"operator there syncs Secret {desired.name}"
        )
        return DryRun(store_writes, [line], unless=" (unless the access grant is missing)")


class ExternalSecretsDelivery:
    """Access to each cluster's secret for its namespace's ESO service account; thread-safe (no state)."""

    mode = MODE

    def __init__(
        self,
        client: IamPolicyClient,
        *,
        principal_template: str,
        namespace_pattern: re.Pattern[str],
        refresh: str = "5m",
    ) -> None:
        self.wording = worded(refresh)
        self._client = client
        self._template = principal_template
        self._pattern = namespace_pattern
        self._mine = ours(principal_template)

    def principal(self, namespace: str) -> str:
        return principal_for(self._template, self._pattern, namespace)

    def probe(self, where: Where, deadline: Deadline) -> AccessProbed:
        """No request: the 'live state' is "no Secret", the handle the secret's name."""
        return AccessProbed(self, where.secret_name, where.placement)

    def grant(self, secret_name: str, namespace: str, deadline: Deadline) -> Delivered:
        """Grant the namespace's principal access to the secret (a write only when the policy lacks it)."""
        with log.step("secretmanager.grant_access", namespace=namespace) as fields:
            member = self.principal(namespace)
            try:
                written = self._update(secret_name, lambda p: with_member(p, member, self._mine), member, deadline)
            except gexc.NotFound:  # deleted since it was stored: the redelivery writes it again
                raise TransientError(
                    f"GetIamPolicy {secret_name}: the secret is gone", reason="SecretGone", service=SERVICE
                ) from None
            fields["written"] = written
        return Delivered(written=written, revision="")

    def remove_access(self, secret_name: str, deadline: Deadline) -> str:
        """Remove our members from the secret's policy: "removed", "absent", or "secret absent"."""
        with log.step("secretmanager.remove_access") as fields:
            try:
                removed = self._update(secret_name, lambda p: without_members(p, self._mine), None, deadline)
            except gexc.NotFound:
                fields["result"] = "secret absent"
                return "secret absent"
            fields["result"] = "removed" if removed else "absent"
        return str(fields["result"])

    def cleanup(self, leaving: Leaving, deadline: Deadline) -> Cleaned:
        """Deletion: our access removed from the secret before it is deleted or disabled (the status `data`)."""
        if leaving.secret_name is None:
            access = "no GCP project known; nothing to remove"
        else:
            access = self.remove_access(leaving.secret_name, deadline)
        left = f"left to External Secrets Operator (access {access})"
        data: ExternalSecretsData = {"delivery": MODE, "access_cleanup": access, "kubernetes_cleanup": left}
        return Cleaned(data, f"Kubernetes Secret {left}")

    def status_data(self, where: Where, applied: Delivered, *, stored_written: bool) -> OwnData:
        data: ExternalSecretsData = {"delivery": MODE, "access_member": self.principal(where.placement.namespace)}
        if applied.written and not stored_written:
            repair: StatusData = {"repaired": "access_binding"}
            return {**data, **repair}
        return data

    def after_transient(self, placement: Placement, error: TransientError) -> None:
        """Nothing is cached per cluster in this mode."""

    def inspect(self, placement: Placement, kube_name: str, deadline: Deadline) -> dict[str, Any]:
        """No cluster connection: ESO writes the Secret; the member the access is granted to."""
        return {"delivery": MODE, "access_member": self.principal(placement.namespace)}

    def doctor_checks(self) -> list[DoctorCheck]:
        return [DoctorCheck("secret-manager.iam-policy", doctor_external_secrets.policy_permissions)]

    def strays(self, where: Where, deadline: Deadline) -> list[Stray]:
        """Our accessors on the cluster's secret other than its namespace's; the fix grants the namespace's again
        (which removes every other member of ours)."""
        own, name, namespace = self.principal(where.placement.namespace), where.secret_name, where.placement.namespace

        def fixing(member: str) -> Callable[[Deadline], str]:
            def fix(deadline: Deadline) -> str:
                self.grant(name, namespace, deadline)
                return f"removed accessor {member} from {name} (kept the cluster's own, {namespace})"

            return fix

        return [
            Stray(
                "accessor", f"accessor {member} on {name}", f"not the cluster's namespace {namespace}", fixing(member)
            )
            for member in self.members(name, deadline)
            if member != own
        ]

    def left_behind(self, cluster_id: str, leaving: Leaving, deadline: Deadline) -> list[Stray]:
        """Nothing outside Secret Manager: External Secrets Operator removes what it synced."""
        return []

    def fleet_notes(self) -> list[str]:
        return []

    def members(self, secret_name: str, deadline: Deadline) -> list[str]:
        """Our principals among the secret's unconditional accessors (the fleet view's read); [] when it is gone."""
        try:
            policy = self._read(secret_name, deadline)
        except gexc.NotFound:
            return []
        return sorted({m for b in _unconditional_accessors(policy) for m in b.members if self._mine.fullmatch(m)})

    def _update(self, secret_name: str, change: Callable[[Any], bool], allowed: str | None, deadline: Deadline) -> bool:
        """One read-modify-write of the policy, run again on ABORTED; True when a write landed."""
        backoff = 0.05
        for _ in range(MAX_ROUNDS):
            policy = self._read(secret_name, deadline)
            before = grants(policy)
            if not change(policy):
                return False
            check_added(before, policy, allowed)
            try:
                self._client.set_iam_policy(
                    request={"resource": secret_name, "policy": policy},
                    retry=None,
                    timeout=deadline.call_timeout(),
                )
            except gexc.Aborted:
                log.debug("the allow policy changed since it was read; reading it again", operation="retry")
                time.sleep(min(random.uniform(0, backoff), deadline.remaining()))
                backoff = min(backoff * 2, 2.0)
                continue
            except gexc.GoogleAPICallError as exc:
                raise from_google(exc, service=SERVICE, what=f"SetIamPolicy {secret_name}") from None
            return True
        raise TransientError(
            f"SetIamPolicy {secret_name}: concurrent changes conflicted {MAX_ROUNDS} times",
            reason="ConcurrentPolicyChanges",
            service=SERVICE,
        )

    def _read(self, secret_name: str, deadline: Deadline) -> Any:
        def attempt() -> Any:
            return self._client.get_iam_policy(
                request={"resource": secret_name, "options": {"requested_policy_version": 3}},
                retry=None,
                timeout=deadline.call_timeout(),
            )

        try:
            return retrying.call(
                attempt,
                predicate=is_retryable_google,
                deadline=deadline,
                on_give_up=lambda cause: from_google(cause, service=SERVICE, what=f"GetIamPolicy {secret_name}"),
            )
        except (TerminalError, TransientError, gexc.NotFound):
            raise
        except gexc.GoogleAPICallError as exc:
            raise from_google(exc, service=SERVICE, what=f"GetIamPolicy {secret_name}") from None


def build(wiring: Wiring) -> ExternalSecretsDelivery:
    """The external-secrets delivery of `wiring`'s settings, on the shared Secret Manager client."""
    settings = wiring.settings
    own = settings.of(ExternalSecretsSettings)
    if own.principal_template is None:  # configured.load refuses that: a Settings built by hand
        raise ConfigError("EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE is required with KUBERNETES_DELIVERY=external-secrets")
    client: IamPolicyClient = wiring.secret_manager  # the shared SecretManagerServiceClient
    return ExternalSecretsDelivery(
        client,
        principal_template=own.principal_template,
        namespace_pattern=settings.management_namespace_pattern,
        refresh=own.refresh_interval,
    )
