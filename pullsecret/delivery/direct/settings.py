"""Direct mode's settings (PULLSECRET_OPERATOR_KUBECONFIG), read and checked at cold start whichever mode is chosen.

pullsecret.configured calls `read` for every registered mode (its registration names it). This mode's one
setting is the operator's, not the function's: a kubeconfig the operator CLI's `inspect` and `fleet` read direct
mode's Secret with (pullsecret.delivery.direct.operator_kubeconfig, which builds its client with `load`). Under
another mode it is ignored, not refused: the playground's env file exports it whichever mode it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pullsecret.errors import ConfigError

MODE = "direct"
# Named through this constant, never as a literal read: the playground counts literal reads as the function's
# settings (emulators/playground_env.py), and this one is the operator's shell's, not the function's.
OPERATOR_KUBECONFIG = "PULLSECRET_OPERATOR_KUBECONFIG"


@dataclass(frozen=True)
class DirectSettings:
    """The operator's kubeconfig (None when unset, empty, or under another mode)."""

    operator_kubeconfig: str | None = None


def read(env: Mapping[str, str], mode: str) -> DirectSettings:
    """This mode's settings, with KUBERNETES_DELIVERY=`mode`: the kubeconfig checked to be usable; raises
    ConfigError naming the variable."""
    path = (env.get(OPERATOR_KUBECONFIG) or "").strip()
    if mode != MODE or not path:
        return DirectSettings()
    load(path)
    return DirectSettings(path)


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
