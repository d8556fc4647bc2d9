"""Typed settings from the environment, validated once at cold start.

A bad value raises `ConfigError` naming the variable, so a deployment with a typo fails at start
instead of on the first event.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar
from urllib.parse import urlparse

from pullsecret.errors import ConfigError
from pullsecret.model.names import GKE_CLUSTER_RE, PROJECT_ID_RE, cluster_allowed
from pullsecret.settings import envvars, secret_projects, token_source
from pullsecret.settings.hostnames import allowed_entry, trusted_realm_entry

KMS_KEY_RE = re.compile(r"^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$")
# A Pub/Sub topic: projects/PROJECT_ID/topics/T (the project id as model/names says it).
# The share of SECRET_WRITE_QUOTA a fan-out (rotation, rekey) publishes for; the rest is for the project's other
# writers (new clusters, the fan-out's own record). A smaller margin costs refused writes, never a lost or failed
# one: a refused write is not applied, the write pacer (secretstore/pacing.py) then spaces every write of the
# process at what the project accepted and the event waits for its slot or is redelivered (WriteQuotaExhausted).
# 95 %: 2,000 clusters in 1.05x the quota bound (90 % alone held it at 1.11x; docs/lifecycle.md "Pace").
PUBLISH_SHARE = 0.95
TOPIC_RE = re.compile(rf"^projects/{PROJECT_ID_RE.pattern.strip('^$')}/topics/[A-Za-z][A-Za-z0-9._~+%-]{{2,254}}$")
ADAPTER_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")

DELETION_POLICIES = ("DELETE", "DISABLE", "RETAIN")
API_AUTH_MODES = ("token-file", "google-id-token", token_source.MODE)
MERGE_PRECEDENCES = ("platform", "cluster")
REGISTRY_VERIFICATION_MODES = ("off", "report", "enforce")
# Hosts in pull secrets that are not image registries (OpenShift's telemetry/Insights key).
REGISTRY_SKIP_DEFAULT = ("cloud.openshift.com",)
Own = TypeVar("Own")  # an implementation's own settings record: a frozen dataclass whose every field has a default


@dataclass(frozen=True)
class Settings:
    """Everything the function reads from its environment (README lists each variable)."""

    hyperfleet_api_url: str
    hyperfleet_api_token_file: str | None = None
    hyperfleet_api_auth: str = "token-file"
    hyperfleet_api_audience: str = "hyperfleet-api"
    # The ServiceAccount token's source, the Authorization scheme and private CAs (pullsecret/settings/token_source.py).
    caller: token_source.CallerIdentity = field(default_factory=token_source.CallerIdentity)
    hyperfleet_status_method: str = "PUT"
    hyperfleet_timeout_s: float = 6.0
    # A header sent as `true` on every API call: the API's tenant middleware's system header (tenancy on, no gateway).
    hyperfleet_system_header: str | None = None
    adapter_name: str = "pullsecret"
    # DEPLOYMENT_ID: the `deployment` label on our Secret Manager secrets; `fleet` removes only its own deployment's.
    deployment_id: str = ""
    precondition_adapters: tuple[str, ...] = ("validation", "dns", "placement")
    placement_adapter: str = "placement"
    # The registered pull-secret source the environment selects (pullsecret.source.sources.selected), by name.
    source: str = ""
    merge_precedence: str = "platform"
    secret_project_id: str | None = None
    # GCP project ids a cluster's spec may name for its secret (`*` stands for any text inside the id); () admits
    # any. Unused when SECRET_PROJECT_ID pins the project (which must then be among them).
    allowed_secret_projects: tuple[str, ...] = ()
    secret_id_template: str = "hyperfleet-{cluster_id}-pull-secret"
    secret_replication_locations: tuple[str, ...] = ()
    secret_kms_key: str | None = None
    management_cluster: str | None = None
    # Full GKE names a placement may name (`*` stands for any text inside one segment); () admits any cluster.
    allowed_management_clusters: tuple[str, ...] = ()
    management_cluster_template: str | None = None  # projects/P/locations/L/clusters/{name}, for short names
    management_endpoint: str = "ip"
    vpc_egress: bool = False  # the function has Direct VPC egress: private control-plane endpoints are reachable
    management_namespace_template: str = "clusters-{cluster_id}"
    management_namespace_pattern: re.Pattern[str] = field(default_factory=lambda: re.compile(r"^clusters-[a-z0-9-]+$"))
    kubernetes_secret_template: str = "{cluster_id}-pull-secret"
    kubernetes_delivery: str = "direct"  # the registered delivery mode KUBERNETES_DELIVERY names (delivery.modes)
    field_manager: str = "hyperfleet-pullsecret"
    secret_manager_emulator_host: str | None = None
    gke_emulator_host: str | None = None
    resource_manager_emulator_host: str | None = (
        None  # the doctor's projects.testIamPermissions (pullsecret.doctor.run)
    )
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
    registry_allowed_hosts: tuple[str, ...] = ()  # host:port the verifier may reach at any address
    # (registry, realm) host names whose token realm lies on another registrable domain (REGISTRY_TRUSTED_REALMS).
    registry_trusted_realms: tuple[tuple[str, str], ...] = (("registry.redhat.io", "sso.redhat.com"),)
    registry_enforce_platform: bool = False  # enforce mode also refuses on the platform pull secret's entries
    # Each registered mode's and source's own settings record, one per record class (pullsecret.configured
    # reads them all); an implementation reads its own with `of`.
    own: tuple[object, ...] = ()

    def of(self, kind: type[Own]) -> Own:
        """This configuration's record of class `kind` (an implementation's own settings); a Settings built without
        one (by hand, in a test) answers the record's defaults: that implementation not configured."""
        for record in self.own:
            if type(record) is kind:
                return record
        return kind()

    def with_own(self, *records: object) -> Settings:
        """These settings with `records` in place of any of the same class."""
        kinds = {type(record) for record in records}
        return replace(self, own=(*(r for r in self.own if type(r) not in kinds), *records))

    def hyperfleet_credential(self) -> token_source.Presented | None:
        """The credential HYPERFLEET_API_AUTH presents, as the settings describe it (token_source.shared)."""
        return token_source.presented(
            "HYPERFLEET_API",
            self.hyperfleet_api_auth,
            source=self.caller.hyperfleet_token,
            audience=self.hyperfleet_api_audience,
            token_file=self.hyperfleet_api_token_file,
        )

    def publish_rate(self) -> float:
        """Rotation events per second: ROTATION_PUBLISH_RATE, else PUBLISH_SHARE of the write quota per cluster."""
        if self.rotation_publish_rate is not None:
            return self.rotation_publish_rate
        return max(0.1, PUBLISH_SHARE * self.secret_write_quota / 60.0 / self.rotation_writes_per_cluster)


def _api_url(env: Mapping[str, str]) -> str:
    url = envvars.get(env, "HYPERFLEET_API_URL")
    if url is None:
        raise ConfigError("HYPERFLEET_API_URL is required (the HyperFleet API base URL, e.g. https://hf.example.com)")
    envvars.url("HYPERFLEET_API_URL", url)
    return url.rstrip("/")


def _api_auth(env: Mapping[str, str]) -> tuple[str, str]:
    """(HYPERFLEET_API_AUTH, HYPERFLEET_API_AUDIENCE); google-id-token excludes a token file, and no token goes over
    plain HTTP to anything but loopback (anyone on the path could replay it)."""
    api_auth = envvars.choice(env, "HYPERFLEET_API_AUTH", "token-file", API_AUTH_MODES, upper=False)
    token_file = envvars.get(env, "HYPERFLEET_API_TOKEN_FILE")
    if api_auth == "google-id-token" and token_file is not None:
        raise ConfigError("HYPERFLEET_API_TOKEN_FILE must be unset with HYPERFLEET_API_AUTH=google-id-token")
    url = urlparse(envvars.get(env, "HYPERFLEET_API_URL") or "")
    sends_token = api_auth != "token-file" or token_file is not None
    if sends_token and url.scheme == "http" and not envvars.is_loopback(url.hostname):
        raise ConfigError(
            f"HYPERFLEET_API_URL is plain http to {url.hostname!r}, and HYPERFLEET_API_AUTH={api_auth} sends a token "
            "with every call: use https (http is for loopback only)"
        )
    audience = envvars.get(env, "HYPERFLEET_API_AUDIENCE") or "hyperfleet-api"
    if len(audience) > 256 or not audience.isprintable() or " " in audience:
        raise ConfigError(f"HYPERFLEET_API_AUDIENCE must be one printable word (an audience), got {audience!r}")
    return api_auth, audience


def hyperfleet_credential(env: Mapping[str, str]) -> token_source.Presented | None:
    """Settings.hyperfleet_credential from the environment, before the settings are assembled (a source's own settings
    compare their credential with it at cold start)."""
    api_auth, audience = _api_auth(env)
    return token_source.presented(
        "HYPERFLEET_API",
        api_auth,
        source=token_source.read(env).hyperfleet_token,
        audience=audience,
        token_file=envvars.readable_file(env, "HYPERFLEET_API_TOKEN_FILE"),
    )


def _cluster_template(env: Mapping[str, str]) -> str | None:
    """MANAGEMENT_CLUSTER_TEMPLATE: projects/P/locations/L/clusters/{name}, for placement short names."""
    template = envvars.get(env, "MANAGEMENT_CLUSTER_TEMPLATE")
    if template is None:
        return None
    try:
        rendered = template.format(name="x")
    except (KeyError, IndexError, ValueError):
        rendered = ""
    if "{name}" not in template or not GKE_CLUSTER_RE.match(rendered) or not rendered.endswith("/x"):
        raise ConfigError(
            "MANAGEMENT_CLUSTER_TEMPLATE must be projects/P/locations/L/clusters/{name} ({name}: the "
            f"placement's short cluster name), got {template!r}"
        )
    return template


def _adapter_names(env: Mapping[str, str]) -> tuple[str, ...]:
    adapters = envvars.items(env, "PRECONDITION_ADAPTERS", ("validation", "dns", "placement"))
    for name in adapters:
        if not ADAPTER_RE.match(name):
            raise ConfigError(f"PRECONDITION_ADAPTERS has a malformed adapter name {name!r}")
    return adapters


def _kms_key(env: Mapping[str, str], locations: tuple[str, ...]) -> str | None:
    """SECRET_KMS_KEY; with several replica locations it names one key per location through {location}."""
    kms = envvars.get(env, "SECRET_KMS_KEY")
    if kms is None:
        return None
    if not KMS_KEY_RE.match(kms.replace("{location}", "l")):
        raise ConfigError(f"SECRET_KMS_KEY must be projects/P/locations/L/keyRings/R/cryptoKeys/K, got {kms!r}")
    if len(locations) > 1 and "{location}" not in kms:
        raise ConfigError("SECRET_KMS_KEY must contain {location} when SECRET_REPLICATION_LOCATIONS lists several")
    return kms


def _allowed_management_clusters(env: Mapping[str, str]) -> tuple[str, ...]:
    """ALLOWED_MANAGEMENT_CLUSTERS: full GKE names (`*` within a segment); MANAGEMENT_CLUSTER must be among them."""
    allowed = envvars.items(env, "ALLOWED_MANAGEMENT_CLUSTERS", ())
    for name in allowed:
        if not GKE_CLUSTER_RE.match(name) or any(ch.isspace() for ch in name):
            raise ConfigError(
                f"ALLOWED_MANAGEMENT_CLUSTERS must list projects/P/locations/L/clusters/C names, got {name!r}"
            )
    management = envvars.get(env, "MANAGEMENT_CLUSTER")
    if management is not None and allowed and not cluster_allowed(management, allowed):
        raise ConfigError(f"MANAGEMENT_CLUSTER {management!r} is not among ALLOWED_MANAGEMENT_CLUSTERS")
    return allowed


def _namespace_pattern(env: Mapping[str, str]) -> re.Pattern[str]:
    """MANAGEMENT_NAMESPACE_PATTERN: anchored, and admitting none of the cluster's own namespaces."""
    pattern_text = envvars.get(env, "MANAGEMENT_NAMESPACE_PATTERN") or r"^clusters-[a-z0-9-]+$"
    try:
        # Always matched whole (fullmatch, i.e. `^(?:PATTERN)$`, as the admission policy renders it): `^a|b$`
        # admits neither `xb` nor `ax`.
        pattern = re.compile(pattern_text)
    except re.error as exc:
        raise ConfigError(f"MANAGEMENT_NAMESPACE_PATTERN is not a regular expression: {exc}") from None
    if not (pattern_text.startswith("^") and pattern_text.endswith("$")):
        raise ConfigError("MANAGEMENT_NAMESPACE_PATTERN must be anchored with ^ and $")
    for forbidden in ("kube-system", "kube-public", "default"):
        if pattern.fullmatch(forbidden):
            raise ConfigError(f"MANAGEMENT_NAMESPACE_PATTERN must not admit the namespace {forbidden!r}")
    return pattern


def _token_scopes(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """REGISTRY_TOKEN_SCOPES: host=scope pairs (host lower-cased)."""
    scopes: list[tuple[str, str]] = []
    for pair in envvars.items(env, "REGISTRY_TOKEN_SCOPES", ()):
        host, sep, scope = pair.partition("=")
        if not sep or not host.strip() or not scope.strip():
            raise ConfigError(f"REGISTRY_TOKEN_SCOPES must list host=scope pairs, got {pair!r}")
        scopes.append((host.strip().lower(), scope.strip()))
    return tuple(scopes)


def _allowed_hosts(env: Mapping[str, str]) -> tuple[str, ...]:
    """REGISTRY_ALLOWED_HOSTS: host[:port] entries, normalised to name:port."""
    allowed: list[str] = []
    for entry in envvars.items(env, "REGISTRY_ALLOWED_HOSTS", ()):
        try:
            allowed.append(allowed_entry(entry))
        except ValueError:
            raise ConfigError(f"REGISTRY_ALLOWED_HOSTS must list host[:port] entries, got {entry!r}") from None
    return tuple(allowed)


def _trusted_realms(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """REGISTRY_TRUSTED_REALMS: registry=realm host-name pairs; unset: registry.redhat.io=sso.redhat.com."""
    pairs: list[tuple[str, str]] = []
    for entry in envvars.items(env, "REGISTRY_TRUSTED_REALMS", ("registry.redhat.io=sso.redhat.com",)):
        try:
            pairs.append(trusted_realm_entry(entry))
        except ValueError:
            raise ConfigError(f"REGISTRY_TRUSTED_REALMS must list registry=realm host names, got {entry!r}") from None
    return tuple(pairs)


def _publish_rate(env: Mapping[str, str]) -> float | None:
    """ROTATION_PUBLISH_RATE, or None to derive it from the write quota."""
    if envvars.get(env, "ROTATION_PUBLISH_RATE") is None:
        return None
    return envvars.number(env, "ROTATION_PUBLISH_RATE", 0.0, minimum=0.1, maximum=1000, unit="events per second")


_DEPLOYMENT_RE = re.compile(r"^[a-z0-9_-]{1,63}$")


def _deployment_id(env: Mapping[str, str], api_url: str) -> str:
    """DEPLOYMENT_ID (a label value), else one derived from what stays the same for a deployment: its HyperFleet API
    URL and ADAPTER_NAME (`d-` and 12 hex digits of their SHA-256)."""
    given = envvars.matching(env, "DEPLOYMENT_ID", _DEPLOYMENT_RE, "a label value ([a-z0-9_-], 63 at most)")
    if given:
        return given
    adapter = envvars.get(env, "ADAPTER_NAME") or "pullsecret"
    return "d-" + hashlib.sha256(f"{api_url}|{adapter}".encode()).hexdigest()[:12]


def load(env: Mapping[str, str] | None = None) -> Settings:
    """The common settings (each delivery mode's and source's own: pullsecret.configured.load, which calls this
    first); raises ConfigError naming the first bad variable (in the order below)."""
    env = os.environ if env is None else env
    locations = envvars.items(env, "SECRET_REPLICATION_LOCATIONS", ())
    api_url = _api_url(env)  # the first bad variable named is the API's: nothing works without it
    api_auth, audience = _api_auth(env)
    caller = token_source.read(env)
    return Settings(
        # The HyperFleet API, and which adapters' statuses gate this one.
        hyperfleet_api_url=api_url,
        hyperfleet_api_token_file=envvars.readable_file(env, "HYPERFLEET_API_TOKEN_FILE"),
        hyperfleet_api_auth=api_auth,
        hyperfleet_api_audience=audience,
        caller=caller,
        hyperfleet_status_method=envvars.choice(
            env, "HYPERFLEET_STATUS_METHOD", "PUT", ("PUT", "POST"), upper=True, say="PUT or POST"
        ),
        hyperfleet_timeout_s=envvars.number(env, "HYPERFLEET_TIMEOUT", 6.0, minimum=0.1, maximum=6.0),  # retry budget
        hyperfleet_system_header=envvars.header_name(env, "HYPERFLEET_SYSTEM_HEADER"),
        adapter_name=envvars.matching(env, "ADAPTER_NAME", ADAPTER_RE, f"like {ADAPTER_RE.pattern}") or "pullsecret",
        deployment_id=_deployment_id(env, api_url),
        precondition_adapters=_adapter_names(env),
        placement_adapter=envvars.get(env, "PLACEMENT_ADAPTER") or "placement",
        # The pull secret: how the source's merges with the cluster's own (the source's own settings: configured).
        merge_precedence=envvars.choice(env, "MERGE_PRECEDENCE", "platform", MERGE_PRECEDENCES, upper=False),
        merge_canonical_registries=envvars.flag(env, "MERGE_CANONICAL_REGISTRIES"),
        # Secret Manager: where each cluster's secret lives and how it is replicated and encrypted.
        secret_project_id=envvars.matching(env, "SECRET_PROJECT_ID", PROJECT_ID_RE, "a GCP project id"),
        allowed_secret_projects=secret_projects.allowed(env),
        secret_id_template=envvars.template(env, "SECRET_ID_TEMPLATE", "hyperfleet-{cluster_id}-pull-secret"),
        secret_replication_locations=locations,
        secret_kms_key=_kms_key(env, locations),
        # The management cluster: how to reach it, and which namespaces and names the Secret may take.
        management_cluster=envvars.matching(
            env, "MANAGEMENT_CLUSTER", GKE_CLUSTER_RE, "projects/P/locations/L/clusters/C"
        ),
        allowed_management_clusters=_allowed_management_clusters(env),
        management_cluster_template=_cluster_template(env),
        management_endpoint=envvars.choice(
            env, "MANAGEMENT_ENDPOINT", "ip", ("ip", "dns"), upper=False, say="ip or dns"
        ),
        vpc_egress=(envvars.get(env, "VPC_EGRESS") or "false").lower() in ("true", "1", "yes"),
        management_namespace_template=envvars.template(env, "MANAGEMENT_NAMESPACE_TEMPLATE", "clusters-{cluster_id}"),
        management_namespace_pattern=_namespace_pattern(env),
        kubernetes_secret_template=envvars.template(env, "KUBERNETES_SECRET_TEMPLATE", "{cluster_id}-pull-secret"),
        field_manager=envvars.get(env, "FIELD_MANAGER") or "hyperfleet-pullsecret",
        # Local emulators in place of Google's endpoints.
        secret_manager_emulator_host=envvars.loopback_address(env, "SECRET_MANAGER_EMULATOR_HOST"),
        gke_emulator_host=envvars.loopback_address(env, "GKE_EMULATOR_HOST"),
        resource_manager_emulator_host=envvars.loopback_address(env, "RESOURCE_MANAGER_EMULATOR_HOST"),
        # Operation: logging, event age, retries, deletion and version retention.
        log_level=envvars.choice(
            env,
            "LOG_LEVEL",
            "INFO",
            ("DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL"),
            upper=True,
            say="DEBUG, INFO, WARNING or ERROR",
        ),
        max_event_age_s=envvars.number(env, "MAX_EVENT_AGE", 3600.0, minimum=0, maximum=7 * 86400),
        retry_deadline_s=envvars.number(env, "RETRY_DEADLINE", 60.0, minimum=0.1, maximum=3600),
        deletion_policy=envvars.choice(env, "DELETION_POLICY", "DELETE", DELETION_POLICIES, upper=True),
        retain_versions=envvars.count(env, "RETAIN_VERSIONS", 3, minimum=1, maximum=100),
        # Rotation: the fan-out's topic and its pace against the Secret Manager write quota.
        adapter_topic=envvars.matching(env, "ADAPTER_TOPIC", TOPIC_RE, "projects/P/topics/T"),
        rotation_publish_rate=_publish_rate(env),
        secret_write_quota=envvars.number(
            env, "SECRET_WRITE_QUOTA", 600.0, minimum=1, maximum=1_000_000, unit="Secret Manager writes per minute"
        ),
        rotation_writes_per_cluster=envvars.number(
            env, "ROTATION_WRITES_PER_CLUSTER", 1.0, minimum=0.1, maximum=10, unit="Secret Manager writes per cluster"
        ),
        rotation_slice_s=envvars.number(env, "ROTATION_SLICE", 480.0, minimum=1, maximum=3600),
        # Registry verification: whether and how each registry's credential is checked.
        registry_verification=envvars.choice(
            env, "REGISTRY_VERIFICATION", "report", REGISTRY_VERIFICATION_MODES, upper=False
        ),
        registry_skip_hosts=tuple(h.lower() for h in envvars.items(env, "REGISTRY_SKIP_HOSTS", REGISTRY_SKIP_DEFAULT)),
        registry_token_scopes=_token_scopes(env),
        registry_timeout_s=envvars.number(env, "REGISTRY_TIMEOUT", 5.0, minimum=0.1, maximum=60),
        registry_deadline_s=envvars.number(env, "REGISTRY_DEADLINE", 15.0, minimum=0.1, maximum=300),
        registry_cache_ttl_s=envvars.number(env, "REGISTRY_CACHE_TTL", 3600.0, minimum=0, maximum=7 * 86400),
        registry_concurrency=envvars.count(env, "REGISTRY_CONCURRENCY", 16, minimum=1, maximum=128),
        registry_ca_bundle=envvars.readable_file(env, "REGISTRY_CA_BUNDLE"),
        registry_allowed_hosts=_allowed_hosts(env),
        registry_trusted_realms=_trusted_realms(env),
        registry_enforce_platform=envvars.flag(env, "REGISTRY_ENFORCE_PLATFORM"),
    )
