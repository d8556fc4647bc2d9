"""The platform source's part of `rekey`: the rotation fan-out of PULL_SECRET_SOURCE's newest version, run here.

Every cluster shares PULL_SECRET_SOURCE, so there is no credential of a cluster's own to rotate (--created-before
and --compromise are refused) or to compare (`fleet`'s CREDS is `-`). Without a selection, `rekey` drives the
fan-out of pullsecret.source.platform.rotation, unchanged (its progress record, lease, pace and resume): this
module builds the notification Secret Manager would have sent for the source's newest version and runs it; a
fan-out that outlives ROTATION_SLICE hands on to the function (a continuation on ADAPTER_TOPIC), and `--watch`
follows its record to the end. With cluster ids, the command publishes their reconcile events (the default).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from pullsecret.errors import AdapterError, TransientError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.model import names
from pullsecret.model.events import SecretVersionAdded
from pullsecret.publishing import Publisher
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.progress import A_ROTATION, Ledger, UntrustedRecord, progress_secret_id
from pullsecret.settings.common import Settings
from pullsecret.source.base import Held, Out, SharedKeys
from pullsecret.source.platform.rotation import LEASE_MARGIN_S
from pullsecret.source.platform.secret import PlatformSecret


class _Platform(Protocol):
    """What of the platform source its rekey uses (pullsecret.source.platform.source.PlatformSource)."""

    name: str
    settings: Settings
    store: SecretStore
    secret: PlatformSecret
    version_name: str

    def fan_out(
        self,
        notification: SecretVersionAdded,
        *,
        hyperfleet: HyperFleetClient,
        publisher: Publisher,
        deadline: Deadline,
    ) -> tuple[str, int]: ...

    def state_project(self) -> str | None: ...


class PlatformRekeying(SharedKeys):
    """`rekey` and CREDS for the platform pull secret: the fan-out of its newest version."""

    def __init__(self, source: _Platform) -> None:
        super().__init__(source.name)
        self.source = source

    def refusal(self, *, created_before: bool, compromise: bool) -> str | None:
        if created_before:
            return "--created-before needs service mode: in platform mode every cluster shares PULL_SECRET_SOURCE"
        if compromise:
            return "--compromise needs service mode: in platform mode add a new version of PULL_SECRET_SOURCE"
        return None

    def held(self, cluster_id: str, ours: dict[str, Any]) -> Held:
        return Held("-", "platform mode: one shared pull secret")

    def whole_fleet(
        self,
        hyperfleet: HyperFleetClient,
        publisher: Publisher,
        *,
        out: Out,
        sleep: Callable[[float], None],
        watch_s: float | None,
    ) -> int | None:
        code = self._fan_out(hyperfleet, publisher, out)
        if code != 0 or watch_s is None:
            return code
        return self._watch(watch_s, out, sleep)

    def _newest(self) -> str | None:
        settings = self.source.settings
        return self.source.secret.newest_version(self.source.version_name, Deadline(settings.retry_deadline_s))

    def _fan_out(self, hyperfleet: HyperFleetClient, publisher: Publisher, out: Out) -> int:
        """Run (or resume) the fan-out of the source's newest version; 0 when every cluster was published."""
        settings = self.source.settings
        newest = self._newest()
        if newest is None:
            out("error: PULL_SECRET_SOURCE has no enabled version")
            return 3
        out(
            f"rekey (platform): fanning out {newest} at {settings.publish_rate():g} events/s to "
            f"{settings.adapter_topic}"
        )
        notification = SecretVersionAdded(
            secret=names.secret_of(newest), version=newest, event_id="cli-rekey", transport="cli"
        )
        try:
            result, published = self.source.fan_out(
                notification, hyperfleet=hyperfleet, publisher=publisher, deadline=Deadline(settings.rotation_slice_s)
            )
        except TransientError as exc:
            out(f"rekey (platform): {exc.message}; run the same command again to resume")
            return 3
        said = {
            "rotated": f"every cluster's reconcile event is published ({published} by this run)",
            "done": f"every cluster was already published for {newest}: nothing new; to re-key, add a new version of "
            "PULL_SECRET_SOURCE first",
            "continued": f"published {published}; the function continues the fan-out (ROTATION_SLICE reached)",
            "superseded": "a newer version took over the fan-out",
        }.get(result, result)
        out(f"rekey (platform): {said}")
        if result == "done":
            return 4  # nothing done (the README's exit table)
        return 0 if result in ("rotated", "continued") else 1

    def _watch(self, timeout_s: float, out: Out, sleep: Callable[[float], None]) -> int:
        """Follow the fan-out's record until every cluster was published for the newest version."""
        settings = self.source.settings
        project = settings.secret_project_id or self.source.state_project()
        newest = self._newest()
        if project is None or newest is None:
            out("watch: no project or no source version to follow")
            return 1
        ledger = Ledger(
            self.source.store,
            name=names.secret_name(project, progress_secret_id(settings)),
            annotation=A_ROTATION,
            labels={},
            deadline=lambda: Deadline(settings.retry_deadline_s),
            max_lease_s=settings.rotation_slice_s + LEASE_MARGIN_S,
        )
        began = time.monotonic()
        while True:
            try:
                record = ledger.load(time.time())
            except AdapterError as exc:
                out(f"watch: the fan-out's record is unreadable: {exc.message}")
                return 3
            except UntrustedRecord as exc:
                out(f"watch: the fan-out's record is not trusted ({exc.why})")
                return 3
            if record is not None and record.version == names.version_number(newest) and record.done:
                out(f"watch: every cluster was published for version {record.version}")
                return 0
            out(f"watch: fan-out of version {names.version_number(newest)} after {record.after if record else '-'}")
            if time.monotonic() - began >= timeout_s:
                return 1
            sleep(5.0)
