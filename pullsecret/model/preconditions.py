"""Cluster + adapter statuses → a decision: act, wait (preconditions not met), or leave to deletion.

Pure: no I/O. Raises `TerminalError` subclasses for input that no retry can fix (a cluster without a
usable project, a namespace outside the configured pattern, malformed placement data).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from pullsecret.errors import TerminalError
from pullsecret.model.dockerconfig import InvalidPullSecret
from pullsecret.model.names import GKE_CLUSTER_RE, PROJECT_ID_RE, cluster_allowed, namespace_valid
from pullsecret.settings.secret_projects import project_allowed

# GKE_CLUSTER_RE admits any character but "/" in a segment; a name with whitespace or control characters
# (a trailing newline from a templated value) is no GKE cluster and must not reach the GKE API.
_NO_SPACE = re.compile(r"[^\s\x00-\x1f\x7f]+")
# https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#Cluster.FIELDS.name
_GKE_SHORT_NAME = re.compile(r"^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$")


class Settings(Protocol):
    """The settings a decision reads (config.Settings has them): passed in, so the model imports nothing above it."""

    @property
    def precondition_adapters(self) -> tuple[str, ...]: ...
    @property
    def placement_adapter(self) -> str: ...
    @property
    def secret_project_id(self) -> str | None: ...
    @property
    def allowed_secret_projects(self) -> tuple[str, ...]: ...
    @property
    def management_cluster(self) -> str | None: ...
    @property
    def allowed_management_clusters(self) -> tuple[str, ...]: ...
    @property
    def management_cluster_template(self) -> str | None: ...
    @property
    def management_namespace_template(self) -> str: ...
    @property
    def management_namespace_pattern(self) -> re.Pattern[str]: ...


class InvalidCluster(TerminalError):
    default_reason = "InvalidCluster"


class InvalidPlacement(TerminalError):
    default_reason = "InvalidPlacement"


@dataclass(frozen=True)
class Placement:
    management_cluster: str
    namespace: str


@dataclass(frozen=True)
class Act:
    """Provision: everything needed is known."""

    generation: int
    project_id: str
    placement: Placement
    cluster_pull_secret: Any  # spec.pullSecret.data (object or JSON text), or None
    region: str | None = None  # spec.platform.gcp.region when it is a GCP region name (the Pull Secret Service's)


@dataclass(frozen=True)
class NotMet:
    """Wait: report PreconditionsNotMet and acknowledge; Sentinel will send the event again."""

    generation: int
    message: str


@dataclass(frozen=True)
class Deleting:
    """The cluster is soft-deleted: clean up, never provision.

    `project_refused`: why the cluster's own project id is not used (not a project id, or not among
    ALLOWED_SECRET_PROJECTS); `project_id` is then None and Secret Manager is left alone."""

    generation: int
    project_id: str | None
    placement: Placement | None
    project_refused: InvalidCluster | None = None


Decision = Act | NotMet | Deleting


def cluster_generation(cluster: dict[str, Any]) -> int:
    """The cluster's generation; raises InvalidCluster when it is missing or not a positive integer."""
    generation = cluster.get("generation")
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 1:
        raise InvalidCluster("the cluster has no valid generation (an integer >= 1)")
    return generation


# A GCP region name (https://cloud.google.com/compute/docs/regions-zones): e.g. us-central1, europe-west10.
_REGION = re.compile(r"^[a-z]{2,16}-[a-z]{2,16}[0-9]{1,2}$")


def region_of(cluster: dict[str, Any]) -> str | None:
    """`spec.platform.gcp.region` when it is a GCP region name; None otherwise (absent, or anything else)."""
    spec = cluster.get("spec")
    platform = spec.get("platform") if isinstance(spec, dict) else None
    gcp = platform.get("gcp") if isinstance(platform, dict) else None
    value = gcp.get("region") if isinstance(gcp, dict) else None
    return value if isinstance(value, str) and _REGION.fullmatch(value) else None


def project_id_of(cluster: dict[str, Any]) -> str | None:
    """GCP project id: typed `spec.platform.gcp.projectID` first, then the older `spec.gcp.projectId`."""
    spec = cluster.get("spec")
    if not isinstance(spec, dict):
        return None
    platform = spec.get("platform")
    if isinstance(platform, dict) and isinstance(platform.get("gcp"), dict):
        value = platform["gcp"].get("projectID")
        if isinstance(value, str) and value:
            return value
    legacy = spec.get("gcp")
    if isinstance(legacy, dict):
        value = legacy.get("projectId", legacy.get("projectID"))
        if isinstance(value, str) and value:
            return value
    return None


def secret_project(cluster: dict[str, Any], settings: Settings) -> str | None:
    """The GCP project of the cluster's secret: SECRET_PROJECT_ID, else the cluster's project id when it is a
    project id that ALLOWED_SECRET_PROJECTS admits; None when neither names one.

    Raises InvalidCluster: the reason `ForbiddenSecretProject` for a project outside the list (a cluster's spec
    must not choose another customer's project to write, bill and, with external-secrets, edit IAM in)."""
    if settings.secret_project_id is not None:
        return settings.secret_project_id
    project = project_id_of(cluster)
    if project is None:
        return None
    if not PROJECT_ID_RE.fullmatch(project):
        raise InvalidCluster(f"the cluster's GCP project id {project[:40]!r} is not a valid project id")
    if settings.allowed_secret_projects and not project_allowed(project, settings.allowed_secret_projects):
        raise InvalidCluster(
            f"the cluster's GCP project {project!r} is not among ALLOWED_SECRET_PROJECTS; "
            "refusing to write the pull secret there",
            reason="ForbiddenSecretProject",
        )
    return project


def platform_type_of(cluster: dict[str, Any]) -> str | None:
    spec = cluster.get("spec")
    if not isinstance(spec, dict):
        return None
    platform = spec.get("platform")
    if isinstance(platform, dict) and isinstance(platform.get("type"), str):
        return str(platform["type"]).lower()
    provider = spec.get("provider")
    if isinstance(provider, str):
        return provider.lower()
    if isinstance(provider, dict) and isinstance(provider.get("type"), str):
        return str(provider["type"]).lower()
    return None


def cluster_pull_secret_of(cluster: dict[str, Any]) -> Any:
    spec = cluster.get("spec")
    if not isinstance(spec, dict):
        return None
    pull_secret = spec.get("pullSecret")
    if pull_secret is None:
        return None
    if not isinstance(pull_secret, dict):
        # Ignoring it would silently provision the platform secret alone.
        raise InvalidPullSecret("spec.pullSecret must be an object holding the pull secret in 'data'")
    return pull_secret.get("data")


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return None
    for item in conditions:
        if isinstance(item, dict) and item.get("type") == kind:
            return item
    return None


def statuses_by_adapter(statuses: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(s.get("adapter")): s for s in statuses if isinstance(s, dict) and isinstance(s.get("adapter"), str)}


def management_cluster_for(short_name: Any, settings: Settings) -> str:
    """The GKE resource name of a management cluster named by its short name, through
    MANAGEMENT_CLUSTER_TEMPLATE; raises InvalidPlacement."""
    if not isinstance(short_name, str) or not _GKE_SHORT_NAME.fullmatch(short_name):
        raise InvalidPlacement(
            "the placement data's managementClusterName is not a GKE cluster name "
            "(1-40 lowercase letters, digits and hyphens, starting with a letter)"
        )
    if settings.management_cluster_template is None:
        raise InvalidPlacement(
            f"the placement names management cluster {short_name!r} by its short name and "
            "MANAGEMENT_CLUSTER_TEMPLATE (projects/P/locations/L/clusters/{name}) is not set"
        )
    return settings.management_cluster_template.format(name=short_name)


def placement_of(cluster_id: str, statuses: list[dict[str, Any]], settings: Settings) -> Placement:
    """Management cluster and namespace from the placement adapter's data, else configured defaults.

    Two shapes (docs/contract.md §2): core HyperFleet's `managementCluster` (a full GKE name) and
    `namespace`, and GCP HCP's `managementClusterName` (a short name) and `managementClusterNamespace`
    (its `baseDomain` is not this adapter's business)."""
    data = _placement_data(statuses, settings)
    management = _management_cluster_of(data, settings)
    namespace = _namespace_of(data, cluster_id=cluster_id, settings=settings)
    return Placement(management_cluster=management, namespace=namespace)


def _placement_data(statuses: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """The placement adapter's `data` ({} without its status or data); raises InvalidPlacement."""
    data: Any = {}
    placement_status = statuses_by_adapter(statuses).get(settings.placement_adapter)
    if placement_status is not None:
        # Only an absent or null `data` means "use the defaults"; [], "" or false are wrong types.
        data = placement_status.get("data")
        if data is None:
            data = {}
    if not isinstance(data, dict):
        raise InvalidPlacement(f"the {settings.placement_adapter} adapter's data is not an object")
    return data


def _management_cluster_of(data: dict[str, Any], settings: Settings) -> str:
    """The management cluster the placement data names (else MANAGEMENT_CLUSTER), when it may receive the pull
    secret; raises InvalidPlacement."""
    management = data.get("managementCluster", data.get("management_cluster"))
    short_name = data.get("managementClusterName")
    if short_name is not None:
        # GCP HCP's placement-adapter names the cluster by its short name (implementation-plans/
        # adapter-placement-decision.md); configuration says where such a cluster lives.
        mapped = management_cluster_for(short_name, settings)
        if management is not None and management != mapped:
            raise InvalidPlacement(
                f"the placement data's managementCluster and managementClusterName ({mapped}) disagree"
            )
        management = mapped
    if management is None:
        management = settings.management_cluster
    if management is None:
        raise InvalidPlacement("no management cluster: the placement data names none and MANAGEMENT_CLUSTER is not set")
    if (
        not isinstance(management, str)
        or not GKE_CLUSTER_RE.fullmatch(management)
        or not _NO_SPACE.fullmatch(management)
    ):
        raise InvalidPlacement("the management cluster must be a GKE name projects/P/locations/L/clusters/C")
    if settings.allowed_management_clusters and not cluster_allowed(management, settings.allowed_management_clusters):
        # Another component's status must not decide where the platform's credentials are written.
        raise InvalidPlacement(
            f"management cluster {management[:200]!r} is not among ALLOWED_MANAGEMENT_CLUSTERS; "
            "refusing to write the pull secret there",
            reason="ForbiddenManagementCluster",
        )
    return management


def _namespace_of(data: dict[str, Any], *, cluster_id: str, settings: Settings) -> str:
    """The namespace the placement data names (else MANAGEMENT_NAMESPACE_TEMPLATE's), when it is a namespace name
    MANAGEMENT_NAMESPACE_PATTERN allows; raises InvalidPlacement."""
    namespace = data.get("namespace", data.get("managementClusterNamespace"))
    if namespace is None:
        namespace = settings.management_namespace_template.format(cluster_id=cluster_id.lower())
    if not isinstance(namespace, str):
        raise InvalidPlacement("the placement data's namespace is not a string")
    shown = namespace[:80]
    if not namespace_valid(namespace):
        raise InvalidPlacement(f"namespace {shown!r} is not a valid Kubernetes namespace name")
    if not settings.management_namespace_pattern.fullmatch(namespace):
        raise InvalidPlacement(
            f"namespace {shown!r} does not match MANAGEMENT_NAMESPACE_PATTERN "
            f"{settings.management_namespace_pattern.pattern!r}; refusing to write there",
            reason="ForbiddenNamespace",
        )
    return namespace


def evaluate(
    cluster: dict[str, Any], statuses: list[dict[str, Any]], settings: Settings, *, cluster_id: str
) -> Decision:
    """Decide what this event may do; raises InvalidCluster / InvalidPlacement for terminal problems."""
    generation = cluster_generation(cluster)
    if cluster.get("deleted_time"):
        try:
            placement: Placement | None = placement_of(cluster_id, statuses, settings)
        except TerminalError:
            placement = None
        try:
            return Deleting(generation=generation, project_id=secret_project(cluster, settings), placement=placement)
        except InvalidCluster as refused:
            return Deleting(generation=generation, project_id=None, placement=placement, project_refused=refused)

    platform = platform_type_of(cluster)
    if platform is None:
        return NotMet(generation, "the cluster spec names no platform (spec.platform.type)")
    if platform != "gcp":
        raise InvalidCluster(
            f"the cluster's platform is {platform[:40]!r}; this adapter serves gcp only",
            reason="UnsupportedPlatform",
        )
    project = secret_project(cluster, settings)
    if project is None:
        return NotMet(generation, "the cluster spec has no GCP project id (spec.platform.gcp.projectID)")
    cluster_secret = cluster_pull_secret_of(cluster)

    waiting = _waiting_for(statuses, settings=settings, generation=generation)
    if waiting:
        return NotMet(generation, "waiting for adapters: " + ", ".join(waiting))

    placement = placement_of(cluster_id, statuses, settings)
    return Act(
        generation=generation,
        project_id=project,
        placement=placement,
        cluster_pull_secret=cluster_secret,
        region=region_of(cluster),
    )


def _waiting_for(statuses: list[dict[str, Any]], *, settings: Settings, generation: int) -> list[str]:
    """The PRECONDITION_ADAPTERS not yet Available at this generation, each with what it reports."""
    by_adapter = statuses_by_adapter(statuses)
    waiting: list[str] = []
    for adapter in settings.precondition_adapters:
        status = by_adapter.get(adapter)
        available = condition(status, "Available") if status else None
        if status is None or available is None:
            waiting.append(f"{adapter} (no status)")
        elif status.get("observed_generation") != generation:
            waiting.append(f"{adapter} (at generation {status.get('observed_generation')}, cluster at {generation})")
        elif available.get("status") != "True":
            waiting.append(f"{adapter} (Available={available.get('status')})")
    return waiting


# The HyperFleet adapters a cluster's pull secret waits for by default (PRECONDITION_ADAPTERS' default).
KNOWN_ADAPTERS = ("validation", "dns", "placement")


def unknown_adapters(adapters: tuple[str, ...], known: tuple[str, ...] = KNOWN_ADAPTERS) -> str | None:
    """A sentence naming each adapter of `adapters` outside `known`, with the known name it is closest to (a typo
    such as `placment` would have every cluster wait forever, reported as normal waiting); None when all are known."""
    import difflib

    strange = [name for name in adapters if name not in known]
    if not strange:
        return None
    shown = []
    for name in strange:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        shown.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return (
        f"PRECONDITION_ADAPTERS names {', '.join(shown)}, not one of the adapters HyperFleet runs by default "
        f"({', '.join(known)}): a misspelt name is waited for forever; the doctor checks them against the statuses "
        "HyperFleet holds"
    )
