"""Direct mode's settings (PULLSECRET_OPERATOR_KUBECONFIG), read and checked at cold start whichever mode is chosen.

pullsecret.configured calls `read` for every registered mode's package that has a settings module. This mode's one
setting is the operator's, not the function's: a kubeconfig the operator CLI's `inspect` and `fleet` read direct
mode's Secret with (pullsecret.delivery.direct.operator_kubeconfig). Under another mode it is ignored, not refused:
the playground's env file exports it whichever mode it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MODE = "direct"
# Named through this constant, never as a literal read: the playground counts literal reads as the function's
# settings (emulators/playground_env.py), and this one is the operator's shell's, not the function's.
OPERATOR_KUBECONFIG = "PULLSECRET_OPERATOR_KUBECONFIG"


def read(env: Mapping[str, str], mode: str) -> dict[str, Any]:
    """The Settings fields this mode owns, with KUBERNETES_DELIVERY=`mode`; raises ConfigError naming the variable.

    `operator_kubeconfig` (in Settings.options): the path, checked to be a usable kubeconfig; None when unset,
    empty, or under another mode."""
    path = (env.get(OPERATOR_KUBECONFIG) or "").strip()
    if mode != MODE or not path:
        return {"operator_kubeconfig": None}
    # Imported here: the Kubernetes client stays out of a cold start without the setting (pullsecret.delivery.modes).
    from pullsecret.delivery.direct import operator_kubeconfig

    operator_kubeconfig.load(path)
    return {"operator_kubeconfig": path}
