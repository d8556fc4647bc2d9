"""The doctor: prove a deployment's permissions and dependencies before its first event, writing nothing.

Run it with the deployed configuration (the function's environment variables, pullsecret.settings.common) as the runtime
identity, from a workstation (`python -m pullsecret doctor`, Application Default Credentials impersonating the
runtime service account) or inside the deployed function (a CloudEvent of type EVENT_TYPE sent with
`gcloud functions call`; `terraform output -raw doctor_command` prints both). It prints one line per check
(pullsecret.doctor.checks) and the fix for each failure; the exit code is 1 when any check failed.

The function's doctor path: only a principal holding roles/run.invoker on the function's service can send it
(Cloud Run's IAM check: the trigger's account and Terraform's manual_invokers). Eventarc's Pub/Sub trigger
cannot: every event it delivers has the type google.cloud.pubsub.topic.v1.messagePublished, whatever a
publisher puts in the message. It reads only, answers only names and verdicts (never a credential), runs one at
a time per instance and at most once per MIN_INTERVAL_S, and answers 429 otherwise.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import werkzeug.exceptions
from werkzeug.wrappers import Response

from pullsecret.doctor import adapters, checks, identity
from pullsecret.doctor.kit import RESOURCE_MANAGER, Context, DoctorCheck, Line, guarded
from pullsecret.identity.google import RuntimeIdentity, secret_manager_client
from pullsecret.logs import log

if TYPE_CHECKING:
    from pullsecret.hyperfleet.client import HyperFleetClient
    from pullsecret.registry.verification import RegistryVerifier
    from pullsecret.settings.common import Settings

EVENT_TYPE = "com.redhat.hyperfleet.pullsecret.doctor"
MIN_INTERVAL_S = 10.0
_MARK = {True: "ok  ", False: "FAIL", None: "skip"}


class Checked(Protocol):
    """A delivery mode or a source, as the doctor sees it: the checks it declares (pullsecret.doctor.kit)."""

    def doctor_checks(self) -> list[DoctorCheck]: ...


class Deployment(Protocol):
    """What the doctor reads of the process (pullsecret.app.Application has it): the doctor stays below the
    implementations, whose checks it runs through `Checked`, and below the process object that builds them."""

    @property
    def settings(self) -> Settings: ...
    @property
    def identity(self) -> RuntimeIdentity: ...
    @property
    def hyperfleet(self) -> HyperFleetClient: ...
    @property
    def registries(self) -> RegistryVerifier: ...
    @property
    def source(self) -> Checked: ...
    @property
    def delivery(self) -> Checked: ...


def run(app: Deployment, extra_clusters: Iterable[str] = ()) -> list[Line]:
    """Every check, in order, as `app`'s runtime identity; writes nothing. The delivery mode adds its own checks
    (pullsecret.delivery.base.Delivery.doctor_checks) between Secret Manager's and the registries'."""
    settings = app.settings
    secrets = secret_manager_client(app.identity, settings.secret_manager_emulator_host)
    try:
        ctx = Context(
            settings=settings,
            runtime=_runtime_email(app.identity),
            hyperfleet=app.hyperfleet,
            secrets=secrets,
            registries=app.registries,
            extra_clusters=tuple(extra_clusters),
            token=app.identity.token,
            resource_manager=(
                f"http://{settings.resource_manager_emulator_host}"
                if settings.resource_manager_emulator_host
                else RESOURCE_MANAGER
            ),
        )
        lines: list[Line] = []
        if settings.caller.hyperfleet_token is not None:  # HYPERFLEET_API_AUTH=service-account-token
            lines += guarded(identity.minted_token, ctx, identity.CHECK)
        lines += guarded(checks.hyperfleet_api, ctx, "hyperfleet-api")
        lines += guarded(adapters.precondition_adapters, ctx, adapters.NAME)
        for check in app.source.doctor_checks():
            lines += guarded(check.run, ctx, check.name)
        lines += guarded(checks.secret_manager, ctx, "secret-manager")
        for check in app.delivery.doctor_checks():
            lines += guarded(check.run, ctx, check.name)
        lines += guarded(checks.registries, ctx, "registries")
        return lines
    finally:
        secrets.transport.close()


def _runtime_email(identity: RuntimeIdentity) -> str:
    try:
        email = identity.email
    except Exception:  # noqa: BLE001 - no credentials at all: the first check says so
        email = None
    return str(email) if email else "the runtime service account"


def render(lines: list[Line]) -> str:
    """One line per check (`fix:` indented under a failure), and a summary; every character a terminal would act
    on (control and format characters: escape sequences, new lines, bidirectional overrides) escaped."""
    out: list[str] = []
    for line in lines:
        out.append(f"{_MARK[line.ok]}  {printable(line.check):<22} {printable(line.text)}")
        if line.ok is False:
            out.append(f"      fix: {printable(line.fix)}")
    failed = sum(1 for line in lines if line.ok is False)
    passed = sum(1 for line in lines if line.ok)
    out.append(f"doctor: {passed} ok, {failed} failed, {len(lines) - passed - failed} skipped")
    return "\n".join(out)


def printable(text: str) -> str:
    """`text` with each character that is not printable (str.isprintable) written as its Python escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def exit_code(lines: list[Line]) -> int:
    return 1 if any(line.ok is False for line in lines) else 0


def add_parser(commands: Any, epilog: str) -> None:
    """The `doctor` subcommand of `python -m pullsecret`."""
    doctor = commands.add_parser(
        "doctor",
        help="check every permission and dependency of this configuration as its runtime identity; writes nothing",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    doctor.add_argument(
        "--management-cluster",
        action="append",
        default=[],
        metavar="projects/P/locations/L/clusters/C",
        help="also check this management cluster (for wildcard or template configurations); repeatable",
    )


def main(app: Deployment, args: argparse.Namespace) -> int:
    lines = run(app, args.management_cluster)
    print(render(lines))
    return exit_code(lines)


# -- inside the deployed function ------------------------------------------------------------------
_running = threading.Lock()
_last_run = [float("-inf")]


def answer(app: Deployment) -> werkzeug.exceptions.HTTPException:
    """The HTTP answer to a doctor CloudEvent: the report as text/plain (200), or 429 when one ran just now.

    Raised by the CloudEvent function (main.py): functions-framework answers any other return with "OK", and
    Flask renders a raised HTTPException's response as it is.
    """
    if not _running.acquire(blocking=False):
        return _answer("a doctor run is under way on this instance; try again shortly\n", 429)
    try:
        if time.monotonic() - _last_run[0] < MIN_INTERVAL_S:
            return _answer(f"the doctor ran less than {MIN_INTERVAL_S:g} s ago; try again shortly\n", 429)
        lines = run(app)
        _last_run[0] = time.monotonic()
        failed = [f"{line.check}: {line.text}" for line in lines if line.ok is False]
        log.log(
            "WARNING" if failed else "INFO",
            f"doctor: {len(failed)} of {len(lines)} checks failed"
            + (f" ({'; '.join(failed)[:1500]})" if failed else ""),
            operation="doctor",
        )
    finally:
        _running.release()
    return _answer(render(lines) + "\n", 200)


def _answer(text: str, status: int) -> werkzeug.exceptions.HTTPException:
    response = Response(text, status=status, mimetype="text/plain")
    return werkzeug.exceptions.HTTPException(response=response)
