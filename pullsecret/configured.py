"""The settings of a cold start: the common settings (pullsecret.settings.common), and each registered implementation's
own.

`common.load` reads and checks what every deployment has; the registries choose among implementations
(KUBERNETES_DELIVERY names one of pullsecret.delivery.modes.MODES; pullsecret.source.sources.selected finds the one
source whose variable is set), and every registered mode and source reads its own settings record with its
registration's `settings` reader, told which one was chosen (so that each refuses its variables under another). The
records land in `Settings.own`, one per record class; an implementation reads its own back with `Settings.of`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from pullsecret.delivery import modes
from pullsecret.settings import common, envvars
from pullsecret.settings.common import Settings
from pullsecret.source import sources


def load(env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate every setting; raises ConfigError naming the first bad variable."""
    env = os.environ if env is None else env
    shared = common.load(env)
    mode = envvars.choice(env, "KUBERNETES_DELIVERY", "direct", modes.names(), upper=False)
    source = sources.selected(env)
    own = [registered.settings(env, mode) for registered in modes.MODES if registered.settings is not None]
    own += [registered.settings(env, source) for registered in sources.SOURCES if registered.settings is not None]
    kinds = [type(record) for record in own]
    if len(set(kinds)) != len(kinds):  # one would shadow the other in Settings.of
        shared_kinds = sorted({kind.__qualname__ for kind in kinds if kinds.count(kind) > 1})
        raise TypeError(f"two registered implementations read one settings record class: {shared_kinds}")
    return dataclasses.replace(shared, kubernetes_delivery=mode, source=source, own=tuple(own))
