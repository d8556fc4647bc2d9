"""The one merge of a source's pull secret with the cluster's own `spec.pullSecret` (MERGE_PRECEDENCE decides
a registry both define; every credential is registered for redaction before anything can print it)."""

from __future__ import annotations

from pullsecret.logs import log, protect
from pullsecret.model import dockerconfig
from pullsecret.model.dockerconfig import MergeResult, PullSecret
from pullsecret.model.preconditions import Act
from pullsecret.settings.common import Settings


def merged(source: PullSecret | None, act: Act, settings: Settings) -> tuple[MergeResult, frozenset[str]]:
    """The merged pull secret, and the registries whose merged entry is the cluster's own."""
    own = _cluster_own(act)
    result = dockerconfig.merge(
        source,
        own,
        precedence=settings.merge_precedence,
        canonical_keys=settings.merge_canonical_registries,
    )
    if result.shadowed:
        log.warning(
            "registry keys that fold to the same registry (the first kept, the others ignored): "
            + ", ".join(f"{d['shadowed']} -> {d['registry']} ({d['source']})" for d in result.shadowed[:20]),
            operation="dockerconfig.merge",
        )
    if result.conflicts:
        log.warning(
            f"registries defined by both sources; the {settings.merge_precedence} entry wins: "
            + ", ".join(result.conflicts[:20]),
            operation="dockerconfig.merge",
        )
    return result, own_registries(result.secret, own)


def _cluster_own(act: Act) -> PullSecret | None:
    """The cluster's own pull secret (spec.pullSecret.data), parsed; raises InvalidPullSecret."""
    if act.cluster_pull_secret is None:
        return None
    value = act.cluster_pull_secret
    protect(dockerconfig.sensitive_strings_of(value))  # before validation: a refused one stays unprinted
    if not isinstance(value, (str, dict)):
        raise dockerconfig.InvalidPullSecret("spec.pullSecret.data must be a JSON object or a JSON string")
    own = dockerconfig.parse(value, source="spec.pullSecret.data")
    protect(own.sensitive_strings())
    return own


def own_registries(merged_secret: PullSecret, own: PullSecret | None) -> frozenset[str]:
    """The merged registries whose entry is exactly one of the cluster's own pull secret's entries."""
    if own is None:
        return frozenset()
    theirs = {dockerconfig.canonical_bytes(entry) for entry in own.document()["auths"].values()}
    return frozenset(
        r for r, e in merged_secret.document()["auths"].items() if dockerconfig.canonical_bytes(e) in theirs
    )
