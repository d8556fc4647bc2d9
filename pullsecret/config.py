"""Typed settings from the environment, validated once at cold start.

A bad value raises `ConfigError` naming the variable, so a deployment with a typo fails at start
instead of on the first event.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from pullsecret.errors import ConfigError

SOURCE_VERSION_RE = re.compile(r"^projects/([^/]+)/secrets/([A-Za-z0-9_-]{1,255})/versions/(latest|[1-9][0-9]*)$")
GKE_CLUSTER_RE = re.compile(r"^projects/([^/]+)/locations/([^/]+)/clusters/([^/]+)$")
PROJECT_ID_RE = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
HOSTPORT_RE = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")
KMS_KEY_RE = re.compile(r"^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$")
TOPIC_RE = re.compile(r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$")
ADAPTER_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")

DELETION_POLICIES = ("DELETE", "DISABLE", "RETAIN")
API_AUTH_MODES = ("token-file", "google-id-token")
MERGE_PRECEDENCES = ("platform", "cluster")
REGISTRY_VERIFICATION_MODES = ("off", "report", "enforce")
# Hosts in pull secrets that are not image registries (OpenShift's telemetry/Insights key).
REGISTRY_SKIP_DEFAULT = ("cloud.openshift.com",)


@dataclass(frozen=True)
class Settings:
    """Everything the function reads from its environment (README lists each variable)."""

    hyperfleet_api_url: str
    hyperfleet_api_token_file: str | None = None
    hyperfleet_api_auth: str = "token-file"
    hyperfleet_api_audience: str = "hyperfleet-api"
    hyperfleet_status_method: str = "PUT"
    hyperfleet_timeout_s: float = 10.0
    adapter_name: str = "pullsecret"
    precondition_adapters: tuple[str, ...] = ("validation", "dns", "placement")
    placement_adapter: str = "placement"
    pull_secret_source: str | None = None
    pull_secret_source_ttl_s: float = 30.0
    merge_precedence: str = "platform"
    secret_project_id: str | None = None
    secret_id_template: str = "hyperfleet-{cluster_id}-pull-secret"
    secret_replication_locations: tuple[str, ...] = ()
    secret_kms_key: str | None = None
    management_cluster: str | None = None
    management_cluster_template: str | None = None  # projects/P/locations/L/clusters/{name}, for short names
    management_endpoint: str = "ip"
    vpc_egress: bool = False  # the function has Direct VPC egress: private control-plane endpoints are reachable
    management_namespace_template: str = "clusters-{cluster_id}"
    management_namespace_pattern: re.Pattern[str] = field(default_factory=lambda: re.compile(r"^clusters-[a-z0-9-]+$"))
    kubernetes_secret_template: str = "{cluster_id}-pull-secret"
    field_manager: str = "hyperfleet-pullsecret"
    secret_manager_emulator_host: str | None = None
    gke_emulator_host: str | None = None
    log_level: str = "INFO"
    max_event_age_s: float = 3600.0
    retry_deadline_s: float = 60.0
    deletion_policy: str = "DELETE"
    retain_versions: int = 3
    merge_canonical_registries: bool = False
    adapter_topic: str | None = None
    rotation_publish_rate: float | None = None  # None: derived from the write quota (`publish_rate`)
    secret_write_quota: float = 600.0  # Secret Manager writes per minute per project
    rotation_writes_per_cluster: float = 1.0  # writes one changed cluster costs
    rotation_slice_s: float = 480.0  # fan-out time per invocation before handing the rest on

    registry_verification: str = "report"
    registry_skip_hosts: tuple[str, ...] = REGISTRY_SKIP_DEFAULT
    registry_token_scopes: tuple[tuple[str, str], ...] = ()
    registry_timeout_s: float = 5.0
    registry_deadline_s: float = 15.0
    registry_cache_ttl_s: float = 3600.0
    registry_concurrency: int = 16
    registry_ca_bundle: str | None = None

    def publish_rate(self) -> float:
        """Rotation events per second: ROTATION_PUBLISH_RATE, else 90 % of the write quota's pace per cluster."""
        if self.rotation_publish_rate is not None:
            return self.rotation_publish_rate
        return max(0.1, 0.9 * self.secret_write_quota / 60.0 / self.rotation_writes_per_cluster)


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float, maximum: float) -> float:
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ConfigError(f"{name} must lie in [{minimum:g}, {maximum:g}], got {raw!r}")
    return value


def _list(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = env.get(name)
    if raw is None:
        return default
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _template(env: Mapping[str, str], name: str, default: str) -> str:
    value = _get(env, name) or default
    if "{cluster_id}" not in value:
        raise ConfigError(f"{name} must contain the placeholder {{cluster_id}}, got {value!r}")
    try:
        value.format(cluster_id="x")
    except (KeyError, IndexError, ValueError):
        raise ConfigError(f"{name} may only use the placeholder {{cluster_id}}, got {value!r}") from None
    return value


def load(env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate settings; raises ConfigError naming the first bad variable."""
    env = os.environ if env is None else env

    url = _get(env, "HYPERFLEET_API_URL")
    if url is None:
        raise ConfigError("HYPERFLEET_API_URL is required (the HyperFleet API base URL, e.g. https://hf.example.com)")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"HYPERFLEET_API_URL must be an http(s) URL, got {url!r}")

    token_file = _get(env, "HYPERFLEET_API_TOKEN_FILE")
    if token_file is not None and not os.path.isfile(token_file):
        raise ConfigError(f"HYPERFLEET_API_TOKEN_FILE names no readable file: {token_file!r}")

    api_auth = (_get(env, "HYPERFLEET_API_AUTH") or "token-file").lower()
    if api_auth not in API_AUTH_MODES:
        raise ConfigError(f"HYPERFLEET_API_AUTH must be one of {API_AUTH_MODES}, got {api_auth!r}")
    if api_auth == "google-id-token" and token_file is not None:
        raise ConfigError("HYPERFLEET_API_TOKEN_FILE must be unset with HYPERFLEET_API_AUTH=google-id-token")
    audience = _get(env, "HYPERFLEET_API_AUDIENCE") or "hyperfleet-api"
    if len(audience) > 256 or not audience.isprintable() or " " in audience:
        raise ConfigError(f"HYPERFLEET_API_AUDIENCE must be one printable word (an audience), got {audience!r}")

    method = (_get(env, "HYPERFLEET_STATUS_METHOD") or "PUT").upper()
    if method not in ("PUT", "POST"):
        raise ConfigError(f"HYPERFLEET_STATUS_METHOD must be PUT or POST, got {method!r}")

    adapter = _get(env, "ADAPTER_NAME") or "pullsecret"
    if not ADAPTER_RE.match(adapter):
        raise ConfigError(f"ADAPTER_NAME must match {ADAPTER_RE.pattern}, got {adapter!r}")
    adapters = _list(env, "PRECONDITION_ADAPTERS", ("validation", "dns", "placement"))
    for name in adapters:
        if not ADAPTER_RE.match(name):
            raise ConfigError(f"PRECONDITION_ADAPTERS has a malformed adapter name {name!r}")
    placement = _get(env, "PLACEMENT_ADAPTER") or "placement"

    source = _get(env, "PULL_SECRET_SOURCE")
    if source is not None and not SOURCE_VERSION_RE.match(source):
        raise ConfigError(f"PULL_SECRET_SOURCE must be projects/P/secrets/S/versions/(latest|N), got {source!r}")
    precedence = (_get(env, "MERGE_PRECEDENCE") or "platform").lower()
    if precedence not in MERGE_PRECEDENCES:
        raise ConfigError(f"MERGE_PRECEDENCE must be one of {MERGE_PRECEDENCES}, got {precedence!r}")

    secret_project = _get(env, "SECRET_PROJECT_ID")
    if secret_project is not None and not PROJECT_ID_RE.match(secret_project):
        raise ConfigError(f"SECRET_PROJECT_ID is not a GCP project id: {secret_project!r}")
    locations = _list(env, "SECRET_REPLICATION_LOCATIONS", ())
    kms = _get(env, "SECRET_KMS_KEY")
    if kms is not None and not KMS_KEY_RE.match(kms.replace("{location}", "l")):
        raise ConfigError(f"SECRET_KMS_KEY must be projects/P/locations/L/keyRings/R/cryptoKeys/K, got {kms!r}")
    if kms is not None and len(locations) > 1 and "{location}" not in kms:
        raise ConfigError("SECRET_KMS_KEY must contain {location} when SECRET_REPLICATION_LOCATIONS lists several")

    management = _get(env, "MANAGEMENT_CLUSTER")
    if management is not None and not GKE_CLUSTER_RE.match(management):
        raise ConfigError(f"MANAGEMENT_CLUSTER must be projects/P/locations/L/clusters/C, got {management!r}")
    cluster_template = _get(env, "MANAGEMENT_CLUSTER_TEMPLATE")
    if cluster_template is not None:
        try:
            rendered = cluster_template.format(name="x")
        except (KeyError, IndexError, ValueError):
            rendered = ""
        if "{name}" not in cluster_template or not GKE_CLUSTER_RE.match(rendered) or not rendered.endswith("/x"):
            raise ConfigError(
                "MANAGEMENT_CLUSTER_TEMPLATE must be projects/P/locations/L/clusters/{name} ({name}: the "
                f"placement's short cluster name), got {cluster_template!r}"
            )
    endpoint = (_get(env, "MANAGEMENT_ENDPOINT") or "ip").lower()
    if endpoint not in ("ip", "dns"):
        raise ConfigError(f"MANAGEMENT_ENDPOINT must be ip or dns, got {endpoint!r}")
    pattern_text = _get(env, "MANAGEMENT_NAMESPACE_PATTERN") or r"^clusters-[a-z0-9-]+$"
    try:
        pattern = re.compile(pattern_text)
    except re.error as exc:
        raise ConfigError(f"MANAGEMENT_NAMESPACE_PATTERN is not a regular expression: {exc}") from None
    if not (pattern_text.startswith("^") and pattern_text.endswith("$")):
        raise ConfigError("MANAGEMENT_NAMESPACE_PATTERN must be anchored with ^ and $")
    for forbidden in ("kube-system", "kube-public", "default"):
        if pattern.match(forbidden):
            raise ConfigError(f"MANAGEMENT_NAMESPACE_PATTERN must not admit the namespace {forbidden!r}")

    emulators = {}
    for name in ("SECRET_MANAGER_EMULATOR_HOST", "GKE_EMULATOR_HOST"):
        value = _get(env, name)
        if value is not None and not HOSTPORT_RE.match(value):
            raise ConfigError(f"{name} must be host:port, got {value!r}")
        emulators[name] = value

    level = (_get(env, "LOG_LEVEL") or "INFO").upper()
    if level not in ("DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(f"LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {level!r}")

    policy = (_get(env, "DELETION_POLICY") or "DELETE").upper()
    if policy not in DELETION_POLICIES:
        raise ConfigError(f"DELETION_POLICY must be one of {DELETION_POLICIES}, got {policy!r}")

    canonical = (_get(env, "MERGE_CANONICAL_REGISTRIES") or "false").lower()
    if canonical not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"MERGE_CANONICAL_REGISTRIES must be true or false, got {canonical!r}")
    topic = _get(env, "ADAPTER_TOPIC")
    if topic is not None and not TOPIC_RE.match(topic):
        raise ConfigError(f"ADAPTER_TOPIC must be projects/P/topics/T, got {topic!r}")

    verification = (_get(env, "REGISTRY_VERIFICATION") or "report").lower()
    if verification not in REGISTRY_VERIFICATION_MODES:
        raise ConfigError(f"REGISTRY_VERIFICATION must be one of {REGISTRY_VERIFICATION_MODES}, got {verification!r}")
    scopes: list[tuple[str, str]] = []
    for pair in _list(env, "REGISTRY_TOKEN_SCOPES", ()):
        host, sep, scope = pair.partition("=")
        if not sep or not host.strip() or not scope.strip():
            raise ConfigError(f"REGISTRY_TOKEN_SCOPES must list host=scope pairs, got {pair!r}")
        scopes.append((host.strip().lower(), scope.strip()))
    ca_bundle = _get(env, "REGISTRY_CA_BUNDLE")
    if ca_bundle is not None and not os.path.isfile(ca_bundle):
        raise ConfigError(f"REGISTRY_CA_BUNDLE names no readable file: {ca_bundle!r}")

    return Settings(
        hyperfleet_api_url=url.rstrip("/"),
        hyperfleet_api_token_file=token_file,
        hyperfleet_api_auth=api_auth,
        hyperfleet_api_audience=audience,
        hyperfleet_status_method=method,
        hyperfleet_timeout_s=_number(env, "HYPERFLEET_TIMEOUT", 10.0, minimum=0.1, maximum=300),
        adapter_name=adapter,
        precondition_adapters=adapters,
        placement_adapter=placement,
        pull_secret_source=source,
        pull_secret_source_ttl_s=_number(env, "PULL_SECRET_SOURCE_TTL", 30.0, minimum=0, maximum=3600),
        merge_precedence=precedence,
        secret_project_id=secret_project,
        secret_id_template=_template(env, "SECRET_ID_TEMPLATE", "hyperfleet-{cluster_id}-pull-secret"),
        secret_replication_locations=locations,
        secret_kms_key=kms,
        management_cluster=management,
        management_cluster_template=cluster_template,
        management_endpoint=endpoint,
        vpc_egress=(_get(env, "VPC_EGRESS") or "false").lower() in ("true", "1", "yes"),
        management_namespace_template=_template(env, "MANAGEMENT_NAMESPACE_TEMPLATE", "clusters-{cluster_id}"),
        management_namespace_pattern=pattern,
        kubernetes_secret_template=_template(env, "KUBERNETES_SECRET_TEMPLATE", "{cluster_id}-pull-secret"),
        field_manager=_get(env, "FIELD_MANAGER") or "hyperfleet-pullsecret",
        secret_manager_emulator_host=emulators["SECRET_MANAGER_EMULATOR_HOST"],
        gke_emulator_host=emulators["GKE_EMULATOR_HOST"],
        log_level=level,
        max_event_age_s=_number(env, "MAX_EVENT_AGE", 3600.0, minimum=0, maximum=7 * 86400),
        retry_deadline_s=_number(env, "RETRY_DEADLINE", 60.0, minimum=0.1, maximum=3600),
        deletion_policy=policy,
        retain_versions=int(_number(env, "RETAIN_VERSIONS", 3, minimum=1, maximum=100)),
        merge_canonical_registries=canonical in ("true", "1", "yes"),
        adapter_topic=topic,
        rotation_publish_rate=(
            _number(env, "ROTATION_PUBLISH_RATE", 0.0, minimum=0.1, maximum=1000)
            if _get(env, "ROTATION_PUBLISH_RATE") is not None
            else None
        ),
        secret_write_quota=_number(env, "SECRET_WRITE_QUOTA", 600.0, minimum=1, maximum=1_000_000),
        rotation_writes_per_cluster=_number(env, "ROTATION_WRITES_PER_CLUSTER", 1.0, minimum=0.1, maximum=10),
        rotation_slice_s=_number(env, "ROTATION_SLICE", 480.0, minimum=1, maximum=3600),
        registry_verification=verification,
        registry_skip_hosts=tuple(h.lower() for h in _list(env, "REGISTRY_SKIP_HOSTS", REGISTRY_SKIP_DEFAULT)),
        registry_token_scopes=tuple(scopes),
        registry_timeout_s=_number(env, "REGISTRY_TIMEOUT", 5.0, minimum=0.1, maximum=60),
        registry_deadline_s=_number(env, "REGISTRY_DEADLINE", 15.0, minimum=0.1, maximum=300),
        registry_cache_ttl_s=_number(env, "REGISTRY_CACHE_TTL", 3600.0, minimum=0, maximum=7 * 86400),
        registry_concurrency=int(_number(env, "REGISTRY_CONCURRENCY", 16, minimum=1, maximum=128)),
        registry_ca_bundle=ca_bundle,
    )
