"""`rekey` in platform mode: the rotation fan-out of PULL_SECRET_SOURCE's newest version, driven from this process.

The fan-out is pullsecret.source.rotation's, unchanged: its progress record, lease, pace and resume. This module
builds the notification Secret Manager would have sent for the source's newest version and runs it; a fan-out
that outlives ROTATION_SLICE hands on to the function (a continuation on ADAPTER_TOPIC), and `--watch` follows
its record to the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pullsecret.errors import AdapterError, TransientError
from pullsecret.model import names
from pullsecret.model.events import SecretVersionAdded
from pullsecret.retrying import Deadline
from pullsecret.source.platform import rotation
from pullsecret.source.platform.progress import Ledger, progress_secret_id

if TYPE_CHECKING:
    from pullsecret.app import Application

Out = Callable[[str], None]


def _newest(app: Application) -> str | None:
    source = app.settings.pull_secret_source
    return app.store.newest_source_version(source, Deadline(app.settings.retry_deadline_s)) if source else None


def fan_out(app: Application, publisher: rotation.Publisher, out: Out) -> int:
    """Run (or resume) the fan-out of the source's newest version; 0 when every cluster was published."""
    settings = app.settings
    newest = _newest(app)
    if newest is None:
        out("error: PULL_SECRET_SOURCE has no enabled version")
        return 3
    out(f"rekey (platform): fanning out {newest} at {settings.publish_rate():g} events/s to {settings.adapter_topic}")
    notification = SecretVersionAdded(
        secret=names.secret_of(newest), version=newest, event_id="cli-rekey", transport="cli"
    )
    try:
        result, published = rotation.fan_out(
            settings,
            notification,
            hyperfleet=app.hyperfleet,
            store=app.store,
            publisher=publisher,
            deadline=Deadline(settings.rotation_slice_s),
            state_project=app.identity.project_id,
        )
    except TransientError as exc:
        out(f"rekey (platform): {exc.message}; run the same command again to resume")
        return 3
    said = {
        "rotated": f"every cluster's reconcile event is published ({published} by this run)",
        "done": "every cluster was already published for this version: nothing new",
        "continued": f"published {published}; the function continues the fan-out (ROTATION_SLICE reached)",
        "superseded": "a newer version took over the fan-out",
    }.get(result, result)
    out(f"rekey (platform): {said}")
    return 0 if result in ("rotated", "done", "continued") else 1


def watch(app: Application, timeout_s: float, out: Out, sleep: Callable[[float], None]) -> int:
    """Follow the fan-out's record until every cluster was published for the newest version."""
    settings = app.settings
    project = settings.secret_project_id or app.identity.project_id
    newest = _newest(app)
    if project is None or newest is None:
        out("watch: no project or no source version to follow")
        return 1
    ledger = Ledger(
        app.store,
        name=names.secret_name(project, progress_secret_id(settings)),
        labels={},
        deadline=Deadline(settings.retry_deadline_s),
    )
    began = time.monotonic()
    while True:
        try:
            record = ledger.load()
        except AdapterError as exc:
            out(f"watch: the fan-out's record is unreadable: {exc.message}")
            return 3
        if record is not None and record.version == names.version_number(newest) and record.done:
            out(f"watch: every cluster was published for version {record.version}")
            return 0
        out(f"watch: fan-out of version {names.version_number(newest)} after {record.after if record else '-'}")
        if time.monotonic() - began >= timeout_s:
            return 1
        sleep(5.0)
