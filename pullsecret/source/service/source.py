"""PULL_SECRET_SERVICE_URL: each cluster's own, revocable credentials from the HyperFleet Pull Secret Service.

The service mints one credential set per cluster and rotates it; this source reads it and hands the reconcile
the cluster's pull secret (docs/contract.md §3b). Per event:

- the read step asks `GET` (on the event's thread, while the pool reads Secret Manager and probes the delivery:
  no round trip of its own on the steady path);
- only when the service holds none (404 `HYPERFLEET-NTF-001`) is it asked to generate them (`POST`, idempotent:
  generate or retrieve). `pull_secret` is called only when the preconditions said act, so a soft-deleted cluster,
  or one whose preconditions say wait, never gets new credentials;
- a first provisioning (`first`: our status records no stored version) asks `POST` at once in place of the `GET`,
  at the same step (the first moment the preconditions have said act): generate-or-retrieve answers what the
  `GET` would have, and the `GET` 404's round trip is gone. A 409 `HYPERFLEET-CNF-001` (the service holds a set
  and is rotating it: our status was lost) falls back to the `GET`, which serves the new set; when that finds
  none either, the 409 stays transient (`RotationInProgress`);
- deletion revokes (`DELETE`, 404 counts as done) after the delivery's cleanup and the Secret Manager secret's
  deletion; `Finalized=True` follows only the service's confirmation, a failed DELETE is transient.

Steady state asks nothing (DDR §3.5 gives each ServiceAccount 100 requests a minute, and a ready cluster gets a
Sentinel event every 30 minutes: one `GET` per event spends the whole budget at 3,000 clusters). The answer the
service gave for a cluster is kept in this instance's memory (`KNOWN_CAPACITY` clusters, least recently used out
first) for PULL_SECRET_SERVICE_TTL seconds, and the cluster's events in that time use it without a call to the
service, provided the newest version of the cluster's Secret Manager secret still holds exactly its credentials
(AccessSecretVersion, beside the reconcile's own read of it: no round trip added). That check is what keeps
instances apart: Cloud Run spreads a cluster's events over instances, and an instance whose kept answer predates a
re-key another instance delivered would otherwise write the revoked set back; it finds the stored version holding
other credentials and asks the service instead. The service is asked again when something can have changed:

- a first provisioning (`first`) always asks (the `POST` above);
- a re-key the adapter started: the operator's `rekey` publishes the cluster's event with the attribute
  pullsecret.publishing.REKEY_ATTRIBUTE, and the handler has the source `forget` the cluster first; the next read
  is then the generate-or-retrieve `POST` (after `rekey --compromise` revoked the set, it mints the new one in the
  same request; otherwise it retrieves). A forged event can make the function ask, never revoke anything;
- a failed event (transient, terminal, or a report that is not Available: delivery or registry verification
  failed) makes the handler `forget` the cluster, so its redelivery or next event asks;
- and at the latest every PULL_SECRET_SERVICE_TTL seconds (0: every event asks, as before this cache).

A rotation made at the service by other means (not by `rekey`, which publishes the cluster's event) therefore
reaches a cluster within PULL_SECRET_SERVICE_TTL (plus one Sentinel interval), per instance that handles its
events. The service's routine rotation keeps the old set valid until the cluster confirms the new one (DDR §3.2.3,
the dual-credential period, confirmed by telemetry under the new credentials): the old set cannot be deleted before
this delivery, so the TTL lengthens the period, it never cuts a cluster off. docs/contract.md §3b gives the default
and the budget it leaves.

A rotation at the service shows up as changed content at the next read: one Secret Manager version and one
delivery write, like any change. There is no fan-out from here (a Secret Manager notification is ignored, the
base's default): the next Sentinel event for the cluster delivers, or the operator's `rekey` (its part here is
pullsecret.source.service.rekey: ask the service to rotate or revoke, compare what a cluster holds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pullsecret.doctor.kit import Context, DoctorCheck, Line
from pullsecret.errors import AdapterError, ConfigError, TerminalError, TransientError
from pullsecret.identity.bearer import ApiCredential, BearerToken, GoogleIdToken, service_account_token
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.logs import log
from pullsecret.model import dockerconfig, names
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.model.preconditions import Act
from pullsecret.model.status_data import OwnData
from pullsecret.registry.expiring import Expiring
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.reads import Latest
from pullsecret.settings.common import Settings
from pullsecret.source.base import Source, Wiring, WouldCreate
from pullsecret.source.service import doctor
from pullsecret.source.service.answers import NOT_FOUND, ROTATION_IN_PROGRESS, SHOWN, Redirected
from pullsecret.source.service.api import SOURCE_NAME, PullSecretServiceClient, ServiceAnswer
from pullsecret.source.service.rekey import ServiceRekeying
from pullsecret.source.service.reports import SERVICE, ServiceData
from pullsecret.source.service.settings import NAME, ServiceSettings

# Clusters whose answer one instance keeps: a ServiceAnswer is a pull secret of a few registries (a few KiB), so the
# cap bounds the memory; a fleet larger than it reads the service more often than the TTL says (the least recently
# used go first).
KNOWN_CAPACITY = 20_000


class ServiceFetch:
    """One event's credentials: what the service answered within PULL_SECRET_SERVICE_TTL, else asked of it."""

    ready = False  # a call is needed (the service's, or the check of a kept answer): overlapped with the reads

    def __init__(self, source: ServiceSource, cluster_id: str, *, first: bool = False) -> None:
        self._source = source
        self._cluster_id = cluster_id
        self._first = first
        self._known = None if first else source.known(cluster_id)
        self._answer: ServiceAnswer | None = None
        self.wrote = False  # a POST was sent (it may have minted even when its answer was lost)

    def pull_secret(
        self, act: Act, deadline: Deadline, *, create: bool = True, newest: Callable[[], Latest] | None = None
    ) -> PullSecret:
        """The cluster's credentials: known within the TTL (and still what is stored), else asked; generated when
        the service holds none (`create=False`, a dry run: raises WouldCreate instead, having sent only a GET, first
        provisioning or not). Raises TransientError/TerminalError."""
        if self._known is not None and self._source.still_stored(self._cluster_id, self._known, act, deadline, newest):
            self._answer = self._known
            return self._known.pull_secret
        post = create and act.region and (self._first or self._source.rekeyed(self._cluster_id))
        answer = self._first_answer(act, deadline) if post else None
        if answer is None:
            with log.step(f"{SERVICE}.get"):
                answer = self._source.client.get(self._cluster_id, deadline)
        if answer is None and not create:
            raise WouldCreate(
                f"the {SHOWN} holds no credentials for this cluster: the reconcile would have them minted "
                f"(POST, registries {', '.join(self._source.registries)})"
            )
        if answer is None:
            answer = self._generate(act, deadline)
        self._answer = answer
        if create:
            self._source.remember(self._cluster_id, answer)
        return answer.pull_secret

    def _generate(self, act: Act, deadline: Deadline) -> ServiceAnswer:
        """The POST (generate or retrieve); `wrote` is set before it is sent: a lost answer may still have minted,
        and the reconcile's re-read (L1 of pullsecret.reconcile.finalize) must cover it."""
        if not act.region:
            raise TerminalError(
                f"the {SHOWN} needs the cluster's region to generate its credentials: spec.platform.gcp.region "
                "is missing",
                reason="InvalidCluster",
            )
        self.wrote = True
        with log.step(f"{SERVICE}.generate", registries=",".join(self._source.registries)):
            return self._source.client.generate(
                self._cluster_id, region=act.region, registries=self._source.registries, deadline=deadline
            )

    def _first_answer(self, act: Act, deadline: Deadline) -> ServiceAnswer | None:
        """A first provisioning's POST (generate or retrieve); None after a rotation's 409: ask the GET instead."""
        try:
            return self._generate(act, deadline)
        except TransientError as exc:
            if exc.reason != ROTATION_IN_PROGRESS:
                raise
            with log.step(f"{SERVICE}.get", after="RotationInProgress"):
                answer = self._source.client.get(self._cluster_id, deadline)
            if answer is None:
                raise
            return answer

    def status_data(self) -> OwnData:
        none: ServiceData = {"source": SOURCE_NAME}
        return self._answer.status_data() if self._answer is not None else none


class ServiceSource(Source):
    """The Pull Secret Service at PULL_SECRET_SERVICE_URL; thread-safe (its client is)."""

    name = NAME
    own_credentials = True  # the service answers per cluster

    def __init__(
        self,
        client: PullSecretServiceClient,
        registries: tuple[str, ...],
        *,
        ttl_s: float = 0.0,
        store: SecretStore | None = None,
        secret_id_template: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.registries = registries
        self.ttl_s = ttl_s  # PULL_SECRET_SERVICE_TTL
        self._store = store  # None: nothing kept (the check of a kept answer needs the stored version)
        self._secret_id_template = secret_id_template
        self._lock = threading.Lock()
        self._known = Expiring(KNOWN_CAPACITY, clock)
        self._rekeyed: set[str] = set()

    def start(self, cluster_id: str, deadline: Deadline, *, first: bool = False) -> ServiceFetch:
        return ServiceFetch(self, cluster_id, first=first)

    def known(self, cluster_id: str) -> ServiceAnswer | None:
        """What the service answered for the cluster within the TTL, unless forgotten since."""
        with self._lock:
            found: ServiceAnswer | None = self._known.get(cluster_id)
            return found

    def remember(self, cluster_id: str, answer: ServiceAnswer) -> None:
        with self._lock:
            self._rekeyed.discard(cluster_id)
            if self.ttl_s > 0 and self._store is not None:
                self._known.put(cluster_id, answer, self.ttl_s)

    def still_stored(
        self,
        cluster_id: str,
        answer: ServiceAnswer,
        act: Act,
        deadline: Deadline,
        newest: Callable[[], Latest] | None = None,
    ) -> bool:
        """The newest version of the cluster's secret holds each of the kept answer's credentials as it is (an
        instance that delivered a re-key since stored others); otherwise the kept answer is forgotten. `newest`: the
        reconcile's own read of that version, waited for here rather than read twice."""
        assert self._store is not None  # remember() keeps nothing without it
        secret_id = self._secret_id_template.format(cluster_id=cluster_id)
        with log.step(f"{SERVICE}.kept", secret_id=secret_id) as fields:
            name = names.secret_name(act.project_id, secret_id)
            latest = newest() if newest is not None else self._store.reads.latest(name, deadline)
            stored = _fingerprints(latest.data)
            kept = answer.pull_secret.registry_fingerprints()
            fields["result"] = "stored" if all(stored.get(r) == fp for r, fp in kept.items()) else "changed"
        if fields["result"] == "stored":
            return True
        self.forget(cluster_id)
        return False

    def forget(self, cluster_id: str, *, rekeyed: bool = False) -> None:
        """The cluster's next event asks the service (`rekeyed`: with the generate-or-retrieve POST)."""
        with self._lock:
            self._known.pop(cluster_id)
            if rekeyed:
                if len(self._rekeyed) >= KNOWN_CAPACITY:
                    self._rekeyed.clear()  # a flood of forged events costs reads, never memory
                self._rekeyed.add(cluster_id)
            else:
                self._rekeyed.discard(cluster_id)

    def rekeyed(self, cluster_id: str) -> bool:
        with self._lock:
            return cluster_id in self._rekeyed

    def doctor_checks(self) -> list[DoctorCheck]:
        return [
            DoctorCheck("pull-secret-service", lambda ctx: _answers(self, ctx)),
            DoctorCheck(doctor.CHECK, lambda ctx: doctor.own_identity(ctx, lambda: self.client.credential)),
        ]

    def revoke(self, cluster_id: str, deadline: Deadline) -> OwnData:
        """Delete the cluster's credentials at the service; raises TransientError when it did not confirm."""
        with log.step(f"{SERVICE}.delete") as fields:
            deleted = self.client.delete(cluster_id, deadline)
            # The DDR's DELETE answers 204 whether or not it held credentials (§3.2.6): "confirmed" says none remain.
            fields["result"] = "confirmed" if deleted else "absent"
        data: ServiceData = {"source": SOURCE_NAME, "revoked": "confirmed" if deleted else "none held"}
        return data

    def rekeying(self) -> ServiceRekeying:
        """`rekey` rotates each cluster's credentials at the service; CREDS compares them."""
        return ServiceRekeying(self.client, ttl_s=self.ttl_s)


def _fingerprints(stored: bytes | None) -> dict[str, str]:
    """The per-registry fingerprints of a stored version ({} when there is none or it is unreadable)."""
    if stored is None:
        return {}
    try:
        return dockerconfig.parse(stored, source="the stored version").registry_fingerprints()
    except dockerconfig.InvalidPullSecret:
        return {}


# A cluster id no cluster has (HyperFleet ids are generated), in the DDR's form (§3.6: cls-[a-z0-9]{12,16}).
PROBE_CLUSTER = "cls-doctorprobe00"


def _answers(source: ServiceSource, ctx: Context) -> list[Line]:
    """The service answers and accepts the runtime identity, without creating anything (a GET; 404 NTF-001 is fine,
    any other 404 is a URL that reaches no route of the service: the function would need NTF-001 there too)."""
    url = ctx.settings.of(ServiceSettings).url
    try:
        code, problem = source.client.probe(PROBE_CLUSTER)
    except AdapterError as exc:
        return [Line("pull-secret-service", False, f"{url}: {exc.reason}", _fix(ctx, exc))]
    if code == 404 and problem != NOT_FOUND:
        return [
            Line(
                "pull-secret-service",
                False,
                f"{url}: EndpointNotFound (GET answered 404 {problem or 'without a HyperFleet code'}, not {NOT_FOUND})",
                "PULL_SECRET_SERVICE_URL reaches no Pull Secret Service route: set it to the service's base URL, the "
                "one under which /v1/clusters/{id}/pull-secrets answers (no /v1 or other path of its own)",
            )
        ]
    if code in (200, 404):
        return [Line("pull-secret-service", True, f"{url} answers and accepts {ctx.runtime} (GET {code})")]
    return [Line("pull-secret-service", False, f"{url}: GET answered {code}", "check PULL_SECRET_SERVICE_URL")]


def _fix(ctx: Context, exc: AdapterError) -> str:
    own = ctx.settings.of(ServiceSettings)
    if exc.reason == "CredentialsRefused" and own.token_file is None:  # google-id-token
        return (
            f"the {SHOWN} must admit Google ID tokens of {ctx.runtime} with audience "
            f"{own.audience!r} (docs/trust.md); the DDR's service accepts Kubernetes "
            "ServiceAccount tokens only: use PULL_SECRET_SERVICE_AUTH=token-file with such a token"
        )
    if exc.reason == "CredentialsRefused":
        return "put a ServiceAccount token the service accepts in the secret mounted at PULL_SECRET_SERVICE_TOKEN_FILE"
    if exc.reason == "PermissionDenied":
        return f"the service's RBAC must let {ctx.runtime} get, create and delete pull secrets (DDR §6.2)"
    if exc.reason == "EndpointNotFound":
        return "PULL_SECRET_SERVICE_URL reaches no Pull Secret Service route: set it to the service's base URL"
    if isinstance(exc, Redirected):
        return (
            f"PULL_SECRET_SERVICE_URL answers a redirect to {exc.location}: set it to the URL the service answers at "
            "(the function never follows a redirect with its token)"
        )
    return "make PULL_SECRET_SERVICE_URL reachable from where this runs (DNS, firewall, the function's VPC egress)"


def credential(settings: Settings, identity: RuntimeIdentity | None = None) -> ApiCredential:
    """The credential PULL_SECRET_SERVICE_AUTH names: an ID token of the runtime identity, a token file, or a
    ServiceAccount token minted on the token cluster (sent as Bearer, the design record's scheme)."""
    source, own = settings.caller.service_token, settings.of(ServiceSettings)
    if source is not None:
        audience = own.audience or own.url or ""
        return service_account_token(settings, source, audience, identity, SERVICE)
    token_file = own.token_file  # config: set exactly in token-file mode
    if token_file is not None:
        return BearerToken(token_file, setting="PULL_SECRET_SERVICE_TOKEN_FILE", service=SERVICE)
    audience = own.audience or own.url or ""
    return GoogleIdToken(
        audience,
        setting="PULL_SECRET_SERVICE_AUDIENCE",
        remedy=f"the {SHOWN} must admit Google ID tokens with audience {audience!r} and this service account's "
        "email (docs/trust.md, the Pull Secret Service)",
    )


def build(wiring: Wiring) -> ServiceSource:
    """The service source of PULL_SECRET_SERVICE_URL (the registry built it: it is the one selected); raises
    ConfigError for a Settings built without its URL."""
    settings = wiring.settings
    own = settings.of(ServiceSettings)
    if not own.url:
        raise ConfigError("PULL_SECRET_SERVICE_URL is required with the Pull Secret Service source")
    client = PullSecretServiceClient(
        own.url,
        credential=credential(settings, wiring.identity),
        timeout_s=own.timeout_s,
        ca_bundle=settings.caller.service_ca_bundle,
    )
    return ServiceSource(
        client,
        own.registries,
        ttl_s=own.ttl_s,
        store=wiring.store,
        secret_id_template=settings.secret_id_template,
    )
