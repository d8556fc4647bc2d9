"""Secret Manager: the per-cluster secret's newest version holds the cluster's pull secret, written only on change.

Steady state reads the newest version's content with AccessSecretVersion (the 90,000/min access quota, not
the 600/min read or write quotas) and compares bytes: equal content costs that one call, and a newest
version that was disabled or destroyed by hand shows up at once (FAILED_PRECONDITION) and gets a fresh one.
A change costs one AddSecretVersion (a new cluster: CreateSecret first), plus one read of the cluster's
generation after it (the caller runs it beside the Kubernetes apply: no round trip of its own). There is no
claim, no lease and no record on the secret.

Invariants. Secret Manager has no conditional AddSecretVersion, so "newest generation on top" cannot hold at
every moment; this module keeps the following, and tests/protocol/test_write_protocol.py checks them over every
interleaving (within bounds) of two and three deliveries, lost and late answers included:

- Always (at every moment):
  A1. A version is destroyed only as a duplicate: its upper neighbour, written by the destroying delivery,
      holds the same bytes (`_settle_race`). So no destroy removes the only copy of any content on top.
  A2. A write is never retried blindly after an ambiguous failure (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL,
      a reset: it may have landed): the versions above the one read before writing are read first, and one
      holding our bytes is adopted as ours (`_add`). RESOURCE_EXHAUSTED and ABORTED were not applied and
      are sent again.
  A3. A delivery reports a version as applied only after the cluster was read again after that version
      landed and still had the delivery's generation (`_check_generation`, handed to the caller as
      `StoreResult.confirm`: it runs it beside the Kubernetes apply and the read-back, and reports only after
      all three succeeded). A delivery that finds the cluster moved on fails transiently (NewerGeneration; a
      cluster gone, ClusterGone: L4 of pullsecret.reconcile.finalize):
      its redelivery reads the cluster afresh and writes the newest generation's content on top. No delivery
      "restores" another's content: it cannot know which generation a version below it holds.
  A4. Single flight shares a write only between deliveries of the same secret, content AND generation in
      one process; a follower that read the newest version before this process wrote reads it again.
- After quiescence (every delivery done or redelivered to completion):
  Q1. The newest version is enabled and holds the newest generation's content. Proof sketch: the last
      write W of changed content is followed by its writer's generation read R (A3). A delivery of a newer
      generation read the cluster after that generation existed, hence (when R saw W's generation) after R,
      and read the newest version after that: it sees W (or later) and writes on top if it differs. If R saw
      a newer generation, W's delivery is redelivered and does the same.
  Q2. Each content is held by one version per race: N concurrent writers of one content leave the newest
      (A1: each destroys only its lower neighbour when equal).

Mechanics:
* Duplicates across instances: each writer knows the newest version number `base` it read before writing.
  When AddSecretVersion returns a number above base + 1, someone wrote in between: the writer reads the
  version just below its own (access quota); same bytes is a concurrent duplicate, which it destroys
  (DestroySecretVersion, not disable: a disabled version is billed and still a copy).
* Ownership: a write to an existing secret is preceded by one GetSecret (its managed-by=hyperfleet label)
  unless the caller knows the secret is still as it left it (`owned`); CreateSecret makes it ours.
* Every write waits for its slot in the process-wide pacer (pullsecret.secretstore.pacing): refusals adapt the pace
  and never become a terminal failure.
* Parts: the reads this protocol relies on (the newest version, a version's bytes, the search for a write that
  landed, the read-back) are pullsecret.secretstore.reads; single flight (A4) is `Flights` here; every request
  goes through the store's one `Calls`.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from google.api_core import exceptions as gexc

from pullsecret.errors import (
    AdapterError,
    OwnershipConflict,
    TerminalError,
    TransientError,
    from_google,
    grpc_code_name,
)
from pullsecret.logs import log
from pullsecret.model import names
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.retrying import Deadline
from pullsecret.secretstore.calls import SERVICE, Backoff, Calls, unix_seconds, write_failure
from pullsecret.secretstore.labels import adopt
from pullsecret.secretstore.payload import checksum
from pullsecret.secretstore.reads import Latest, VersionReads

RECENT_S = 120.0  # how long this process remembers what it wrote (to not write it again from an old read)

_Key = tuple[str, str, int]  # (secret name, content fingerprint, generation): A4's unit of sharing


@dataclass(frozen=True)
class StoreResult:
    version_name: str  # the version holding the content (projects/NUMBER/secrets/ID/versions/N)
    written: bool  # a new version was added by this call
    created_at: int | None = None  # unix seconds the version was created, when known (lineage's "since")
    repaired: bool = False  # the newest version had been disabled or destroyed by hand
    writes: int = 0  # Secret Manager write requests this call had accepted
    verify: Callable[[], None] | None = field(default=None, repr=False)  # read-back of a new version
    # A3: the cluster's generation read after the version landed; raises NewerGeneration. Every delivery that
    # wrote or shared a write runs its own before reporting (a follower's read also comes after the landing).
    confirm: Callable[[], None] | None = field(default=None, repr=False)

    def as_follower(self) -> StoreResult:
        """This result as seen by a concurrent delivery of the same content that shared the write."""
        return dataclasses.replace(self, written=False, verify=None, writes=0, repaired=False)


@dataclass(frozen=True)
class _Added:
    name: str
    created_at: int | None
    accepted: int  # write requests accepted (0 when an earlier, ambiguous attempt was found to have landed)


class NewerGeneration(TransientError):
    """The cluster moved past the writer's generation after its version landed (A3): redeliver, read again."""

    default_reason = "NewerGeneration"


class ClusterGone(TransientError):
    """The cluster was gone when read after the version landed (A3, L4 of reconcile/finalize.py): not applied."""

    default_reason = "ClusterGone"


class Flight:
    """One write of one content for one generation to one secret in this process; later deliveries share it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: StoreResult | None = None
        self.finished_at = 0.0

    def finish(self, result: StoreResult | None) -> None:
        """The write ended: with its result, or None when it failed (a waiting delivery then writes itself)."""
        self.result = result
        self.finished_at = time.monotonic()
        self.done.set()


class Flights:
    """This process's writes in flight (and those that ended within RECENT_S), oldest first, by `_Key`."""

    def __init__(self) -> None:
        self._table: dict[_Key, Flight] = {}
        self._lock = threading.Lock()

    def claim(self, key: _Key) -> tuple[Flight, bool]:
        """The flight of `key` and whether it is ours to fly: a new one when none is on or the last one failed."""
        now = time.monotonic()
        with self._lock:
            self._forget_old(now)
            flight = self._table.get(key)
            if flight is None or (flight.done.is_set() and flight.result is None):
                return self._start(key), True
            return flight, False

    def take_over(self, key: _Key, ended: Flight) -> Flight | None:
        """A new flight of ours when `ended` is still the newest of `key`, else None (another delivery took over)."""
        with self._lock:
            return self._start(key) if self._table.get(key) is ended else None

    def _start(self, key: _Key) -> Flight:
        """A new flight for `key`, at the end of the (insertion-ordered) table. Caller holds the lock."""
        self._table.pop(key, None)
        flight = self._table[key] = Flight()
        return flight

    def _forget_old(self, now: float) -> None:
        """Drop flights that ended more than RECENT_S ago, oldest first (bounded work per call)."""
        for key in list(itertools.islice(self._table, 64)):
            flight = self._table[key]
            if not (flight.done.is_set() and now - flight.finished_at > RECENT_S):
                break
            del self._table[key]


class VersionWrites:
    """The per-cluster secret: its newest version written once per change, raced safely."""

    def __init__(self, calls: Calls, reads: VersionReads) -> None:
        self._calls = calls
        self._client = calls.client  # requests go through self._calls with its methods
        self._reads = reads
        self._flights = Flights()  # A4

    def store(
        self,
        *,
        project: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        labels: dict[str, str],
        deadline: Deadline,
        latest: Latest | None = None,
        current_generation: Callable[[], int | None] | None = None,
        owned: bool = False,
    ) -> StoreResult:
        """Ensure the secret's newest version holds `secret`; raises Terminal/TransientError.

        `latest`: the newest version as already read (`VersionReads.latest`), so callers can overlap that read
        with others and still make no write before every read succeeded. `current_generation`: re-reads
        the cluster's generation; a write's result carries that re-read as `confirm` (A3). `owned`:
        the caller already wrote this secret (its last status names it); otherwise an existing secret's
        labels are checked once (GetSecret) before writing to it, and a foreign one raises OwnershipConflict.

        Unchanged content costs one AccessSecretVersion; a change one AddSecretVersion (plus CreateSecret
        for a new secret). The returned `verify` reads a new version back and `confirm` re-reads the
        cluster's generation (A3); the caller runs both beside the Kubernetes apply and reports only after
        all of them succeeded.
        """
        name = names.secret_name(project, secret_id)
        held = latest.holding(secret.canonical) if latest is not None else None
        if held:
            return StoreResult(held, written=False)
        key = (name, secret.fingerprint, generation)  # A4: never shared across generations
        while True:
            flight, ours = self._flights.claim(key)
            if ours:
                break  # we write; concurrent deliveries of this content wait for our result
            if not flight.done.wait(timeout=deadline.remaining()):
                raise TransientError(
                    f"secret {secret_id}: another delivery in this process is still writing this content",
                    reason="WriteInProgress",
                    service=SERVICE,
                )
            shared = flight.result
            if shared is None:
                continue  # that write failed: try ourselves
            # This process wrote this content; our read may predate that. Read again before writing.
            latest = self._reads.latest(name, deadline)
            held = latest.holding(secret.canonical)
            if held:
                return shared.as_follower() if held == shared.version_name else StoreResult(held, written=False)
            taken = self._flights.take_over(key, flight)
            if taken is not None:
                flight = taken
                break
        try:
            result = self._store(
                name=name,
                project=project,
                secret_id=secret_id,
                secret=secret,
                generation=generation,
                labels=labels,
                deadline=deadline,
                latest=latest,
                current_generation=current_generation,
                owned=owned,
            )
        except BaseException:
            flight.finish(None)
            raise
        flight.finish(result)
        return result

    def _store(
        self,
        *,
        name: str,
        project: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        labels: dict[str, str],
        deadline: Deadline,
        latest: Latest | None,
        current_generation: Callable[[], int | None] | None,
        owned: bool,
    ) -> StoreResult:
        data = secret.canonical
        if latest is None:
            latest = self._reads.latest(name, deadline)
        held = latest.holding(data)
        if held:
            return StoreResult(held, written=False)
        writes = 0
        if latest.state == "enabled":
            base = names.version_number(latest.name)
        elif latest.state == "unusable":
            base = self._reads.newest_version_id(name, deadline)
        else:
            base = 0  # no secret, or no versions when we looked
            created = self._create(project=project, secret_id=secret_id, labels=labels, deadline=deadline)
            writes += created
            owned = owned or bool(created)
        if not owned:
            self._check_owner(name, project=project, secret_id=secret_id, deadline=deadline, labels=labels)
        added = self._add(name=name, project=project, secret_id=secret_id, data=data, base=base, deadline=deadline)
        writes += added.accepted
        result = StoreResult(
            added.name, written=True, created_at=added.created_at, repaired=latest.state == "unusable", writes=writes
        )
        if names.version_number(added.name) > base + 1:
            result = self._settle_race(result, name=name, project=project, data=data, deadline=deadline)
        version_name = result.version_name
        if current_generation is not None:
            check = current_generation
            result = dataclasses.replace(result, confirm=lambda: _check_generation(version_name, generation, check))
        if result.written:
            result = dataclasses.replace(result, verify=lambda: self._reads.verify(version_name, data, deadline))
        return result

    def _check_owner(
        self, name: str, *, project: str, secret_id: str, deadline: Deadline, labels: dict[str, str]
    ) -> None:
        """Refuse to write to an existing secret that is not ours (GetSecret: read quota, first write only); one of
        ours without this deployment's `deployment` label is adopted (labels.adopt)."""
        what = f"get secret {secret_id}"
        try:
            current = self._calls.call(what, deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            return  # deleted since: AddSecretVersion will say so
        except gexc.FailedPrecondition as exc:
            raise from_google(exc, service=SERVICE, what=what) from None
        if current.labels.get("managed-by") != "hyperfleet":
            raise OwnershipConflict(
                f"Secret Manager secret {secret_id} in project {project} exists without the label "
                "managed-by=hyperfleet; refusing to adopt or overwrite it",
                service=SERVICE,
            )
        if "deployment" in labels and "deployment" not in current.labels:
            adopt(self._calls, current, labels, deadline)

    def _create(self, *, project: str, secret_id: str, labels: dict[str, str], deadline: Deadline) -> int:
        """CreateSecret; returns the writes accepted (0 when it exists: without versions, or created concurrently)."""
        from google.cloud.secretmanager_v1 import types

        what = f"create secret {secret_id}"
        while True:
            try:
                self._calls.write(
                    what,
                    project,
                    deadline,
                    self._client.create_secret,
                    parent=names.project_parent(project),
                    secret_id=secret_id,
                    secret=types.Secret(replication=self._calls.replication(), labels=labels),
                )
            except gexc.AlreadyExists:
                return 0
            except gexc.NotFound:
                raise TerminalError(
                    f"{what}: project {project} not found", reason="ProjectNotFound", service=SERVICE
                ) from None
            except gexc.GoogleAPICallError as exc:
                if write_failure(exc) == "ambiguous":
                    continue  # sending it again is safe: a create that landed answers AlreadyExists
                raise from_google(exc, service=SERVICE, what=what) from None
            return 1

    def _add(self, *, name: str, project: str, secret_id: str, data: bytes, base: int, deadline: Deadline) -> _Added:
        """AddSecretVersion; after an ambiguous failure, find out whether it landed before sending it again."""
        from google.cloud.secretmanager_v1 import types

        what = f"add version to secret {secret_id}"
        backoff = Backoff(0.1)
        while True:
            try:
                version = self._calls.write(
                    what,
                    project,
                    deadline,
                    self._client.add_secret_version,
                    parent=name,
                    payload=types.SecretPayload(data=data, data_crc32c=checksum(data)),
                )
            except (gexc.NotFound, gexc.FailedPrecondition) as exc:
                raise TransientError(f"{what}: {type(exc).__name__}", service=SERVICE) from None
            except (TransientError, TerminalError):
                raise
            except Exception as exc:
                if write_failure(exc) != "ambiguous":
                    if isinstance(exc, gexc.GoogleAPICallError):
                        raise from_google(exc, service=SERVICE, what=what) from None
                    raise
                landed = self._reads.find_landed(name, data, base, deadline)
                if landed is not None:
                    log.info(
                        f"{what}: the answer was lost ({grpc_code_name(exc) or type(exc).__name__}) but the "
                        f"version landed as {names.version_id(landed)}; not writing it again",
                        operation="secretmanager.store",
                    )
                    return _Added(landed, None, 0)
                backoff.wait(deadline)
                continue
            return _Added(str(version.name), unix_seconds(version.create_time), 1)

    def _settle_race(
        self, result: StoreResult, *, name: str, project: str, data: bytes, deadline: Deadline
    ) -> StoreResult:
        """Someone wrote between our read and our write: a copy of our bytes just below ours goes (A1, Q2).

        A different content below is left alone: whose generation is newer is `_check_generation`'s question.
        """
        ours = names.version_number(result.version_name)
        below = names.version_name(name, ours - 1)
        if self._reads.access(below, deadline) != data:
            return result  # different content, or disabled / destroyed: nothing to retire
        if self._destroy(below, project, deadline):
            log.info(
                f"a concurrent delivery wrote the same content as version {ours - 1}; destroyed that copy",
                operation="secretmanager.store",
            )
            return dataclasses.replace(result, writes=result.writes + 1)
        return result

    def _destroy(self, version_name: str, project: str, deadline: Deadline) -> bool:
        """Destroy a duplicate version (best effort: a failure is logged, the copy stays)."""
        from google.cloud.secretmanager_v1 import types

        what = f"destroy duplicate {version_name}"
        for _ in range(5):
            try:
                self._calls.write(
                    what,
                    project,
                    deadline,
                    self._client.destroy_secret_version,
                    request=types.DestroySecretVersionRequest(name=version_name),
                )
                return True
            except (gexc.FailedPrecondition, gexc.NotFound):
                return True  # already destroyed (an ambiguous first attempt landed) or gone
            except AdapterError as exc:
                log.warning(f"{what}: {exc.message}", operation="secretmanager.store")
                return False
            except gexc.GoogleAPICallError as exc:
                if write_failure(exc) == "ambiguous":
                    continue
                log.warning(f"{what}: {grpc_code_name(exc) or type(exc).__name__}", operation="secretmanager.store")
                return False
        return False


def _check_generation(version_name: str, generation: int, current_generation: Callable[[], int | None]) -> None:
    """A3: after our version landed, the cluster must still be at our generation; raises NewerGeneration."""
    current = current_generation()
    if current is None:
        raise ClusterGone(
            f"the cluster was gone when read after version {names.version_id(version_name)} landed; "
            "not applied (its writes are removed before the event answers)",
            service=SERVICE,
        )
    if current > generation:
        raise NewerGeneration(
            f"generation {current} of the cluster appeared while generation {generation} wrote version "
            f"{names.version_id(version_name)}; the redelivery writes the newest generation on top",
            service=SERVICE,
        )
