"""Direct mode's settings (ADMISSION_POLICY_NAME, PULLSECRET_OPERATOR_KUBECONFIG), read and checked at cold start
whichever mode is chosen.

pullsecret.configured calls `read` for every registered mode (its registration names it). ADMISSION_POLICY_NAME is
the function's: the name of this instance's admission policy and binding on the management clusters (Terraform's
admission_policy_name, the instance's name_suffix in it), which every write checks; under another mode it is refused,
as every mode refuses what only another reads. PULLSECRET_OPERATOR_KUBECONFIG is the operator's, not the function's:
a kubeconfig the operator CLI's `inspect` and `fleet` read direct mode's Secret with
(pullsecret.delivery.direct.operator_kubeconfig, which builds its client with `load`). Under another mode it is
ignored, not refused: the playground's env file exports it whichever mode it runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pullsecret.errors import ConfigError
from pullsecret.settings import envvars

MODE = "direct"
# ADMISSION_POLICY_NAME's default: the name of an instance without name_suffix (and of the releases before the setting).
POLICY_NAME = "hyperfleet-pullsecret-adapter-scope"
# A ValidatingAdmissionPolicy's name is a DNS subdomain (RFC 1123: lower-case letters, digits, '-' and '.', each
# label starting and ending alphanumeric, 253 characters at most): kubernetes/kubernetes,
# pkg/apis/admissionregistration/validation/validation.go, ValidateObjectMeta with NameIsDNSSubdomain.
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Named through this constant, never as a literal read: the playground counts literal reads as the function's
# settings (emulators/playground_env.py), and this one is the operator's shell's, not the function's.
OPERATOR_KUBECONFIG = "PULLSECRET_OPERATOR_KUBECONFIG"


@dataclass(frozen=True)
class DirectSettings:
    """The admission policy's name, and the operator's kubeconfig (None when unset, empty, or under another mode)."""

    operator_kubeconfig: str | None = None
    admission_policy_name: str = POLICY_NAME


def read(env: Mapping[str, str], mode: str) -> DirectSettings:
    """This mode's settings, with KUBERNETES_DELIVERY=`mode`: the policy's name a Kubernetes object name, the
    kubeconfig checked to be usable; raises ConfigError naming the variable."""
    policy_name = _admission_policy_name(env, mode)
    path = (env.get(OPERATOR_KUBECONFIG) or "").strip()
    if mode != MODE or not path:
        return DirectSettings(admission_policy_name=policy_name)
    load(path)
    return DirectSettings(path, policy_name)


def _admission_policy_name(env: Mapping[str, str], mode: str) -> str:
    """ADMISSION_POLICY_NAME: a DNS subdomain (the default without it); unset under another mode."""
    name = envvars.get(env, "ADMISSION_POLICY_NAME")
    if name is None:
        return POLICY_NAME
    if mode != MODE:
        raise ConfigError(f"ADMISSION_POLICY_NAME must be unset with KUBERNETES_DELIVERY={mode}")
    if len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        raise ConfigError(
            "ADMISSION_POLICY_NAME must be a Kubernetes object name (a DNS subdomain: lower-case letters, digits, "
            f"'-' and '.', starting and ending with a letter or digit, at most 253 characters), got {name!r}"
        )
    return name


def load(path: str) -> tuple[str, Any]:
    """The kubeconfig's current context's cluster name and an API client with its identity (no retries: ours);
    raises ConfigError naming the setting when the file is no usable kubeconfig."""
    # Imported here: the Kubernetes client stays out of a cold start without the setting (pullsecret.delivery.modes).
    import yaml
    from kubernetes.config import list_kube_config_contexts, new_client_from_config
    from kubernetes.config.config_exception import ConfigException

    try:
        _, active = list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
        client = new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
        cluster = str(active["context"]["cluster"])
    except (OSError, ConfigException, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{OPERATOR_KUBECONFIG} names no usable kubeconfig ({path}): {type(exc).__name__}") from None
    client.configuration.retries = False
    return cluster, client
