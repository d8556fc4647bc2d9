"""The platform source's doctor check: PULL_SECRET_SOURCE is readable and a valid pull secret (reads only)."""

from __future__ import annotations

from pullsecret.doctor.kit import Context, Line
from pullsecret.errors import AdapterError
from pullsecret.model import dockerconfig
from pullsecret.source.platform.secret import PlatformSecret
from pullsecret.source.platform.settings import PlatformSettings


def pull_secret_source(ctx: Context, secret: PlatformSecret) -> list[Line]:
    source = ctx.settings.of(PlatformSettings).version
    if source is None:
        return [Line("pull-secret-source", None, "PULL_SECRET_SOURCE is unset: only the clusters' own pull secrets")]
    try:
        raw = secret.read(source, ctx.deadline())
        ctx.source = dockerconfig.parse(raw, source="PULL_SECRET_SOURCE")
    except dockerconfig.InvalidPullSecret as exc:
        fix = 'add a new version holding a valid .dockerconfigjson ({"auths": {...}}) to the source secret'
        return [Line("pull-secret-source", False, f"{source} is not a valid pull secret: {exc.message}", fix)]
    except AdapterError as exc:
        return [Line("pull-secret-source", False, f"{source} is not readable ({exc.reason})", _source_fix(ctx, exc))]
    count = len(ctx.source.document()["auths"])
    text = f"{source} is readable and a valid pull secret ({count} registries, {ctx.source.short_fingerprint})"
    return [Line("pull-secret-source", True, text)]


def _source_fix(ctx: Context, exc: AdapterError) -> str:
    source = ctx.settings.of(PlatformSettings).version or ""
    secret = source.rsplit("/versions/", 1)[0]
    project, secret_id = secret.split("/")[1], secret.rsplit("/", 1)[-1]
    if exc.reason == "PermissionDenied":
        return (
            f"grant {ctx.member} roles/secretmanager.secretAccessor (secretmanager.versions.access) on {secret}: "
            f"gcloud secrets add-iam-policy-binding {secret_id} --project {project} --member {ctx.member} "
            "--role roles/secretmanager.secretAccessor (Terraform: runtime_pull_secret_source)"
        )
    if exc.reason == "SourceNotFound":
        return f"create {secret} with a version, or set pull_secret_source_secret to the secret that exists"
    if exc.reason == "SourceUnavailable":
        return f"enable the version (gcloud secrets versions enable), or use versions/latest of {secret}"
    return "try again: Secret Manager did not answer"
