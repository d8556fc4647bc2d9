"""External Secrets mode's settings (EXTERNAL_SECRETS_*), read and checked at cold start whichever mode is chosen.

pullsecret.configured calls `read` for every registered mode (its registration names it): the chosen mode
validates its own settings, another mode refuses what only this one reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pullsecret.errors import ConfigError
from pullsecret.settings import envvars

MODE = "external-secrets"
PRINCIPAL_PREFIX = "principal://iam.googleapis.com/"


@dataclass(frozen=True)
class ExternalSecretsSettings:
    """The namespace's principal (principal://... with {namespace}; None under another mode) and the rendered
    ExternalSecret's refreshInterval (terraform external_secrets_refresh_interval), for the status."""

    principal_template: str | None = None
    refresh_interval: str = "5m"


def read(env: Mapping[str, str], mode: str) -> ExternalSecretsSettings:
    """This mode's settings, with KUBERNETES_DELIVERY=`mode`; raises ConfigError naming the variable."""
    return ExternalSecretsSettings(
        _principal_template(env, mode), envvars.duration(env, "EXTERNAL_SECRETS_REFRESH_INTERVAL") or "5m"
    )


def _principal_template(env: Mapping[str, str], mode: str) -> str | None:
    """EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE: required in this mode, unset in every other."""
    template = envvars.get(env, "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE")
    if mode != MODE:
        if template is not None:
            raise ConfigError(f"EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE must be unset with KUBERNETES_DELIVERY={mode}")
        return None
    try:
        rendered = (template or "").format(namespace="x")
    except (KeyError, IndexError, ValueError):
        rendered = ""
    if (
        template is None
        or template.count("{namespace}") != 1
        or not rendered.startswith(PRINCIPAL_PREFIX)
        or any(ch.isspace() for ch in template)
    ):
        raise ConfigError(
            "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE must be a principal://iam.googleapis.com/... identifier with "
            "{namespace} once and no other placeholder (KUBERNETES_DELIVERY=external-secrets), got "
            f"{template!r}"
        )
    return template
