"""The settings of a cold start: the common settings (pullsecret.settings.common), and each registered implementation's
own.

`common.load` reads and checks what every deployment has; the delivery modes and the sources own their settings:
KUBERNETES_DELIVERY accepts the registered modes (pullsecret.delivery.modes.MODES), a mode's package may hold a
`settings` module whose `read(env, mode)` checks its variables (called for every registered mode, so that a mode
refuses its variables under another), and a source's registration may name a `settings(env)` reader. A reader
answers Settings fields by name; a name Settings does not have lands in `Settings.options`, for the
implementation to read back.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pullsecret.delivery import modes
from pullsecret.settings import common, envvars
from pullsecret.settings.common import Settings
from pullsecret.source import sources

ModeReader = Callable[[Mapping[str, str], str], dict[str, Any]]


def mode_readers() -> Iterator[ModeReader]:
    """Each registered mode's settings reader (its package's `settings.read`), importing only those modules: a
    mode's package is looked into, not imported, unless it has one (direct mode's stays out of another's start)."""
    for module in modes.MODES.values():
        package = importlib.util.find_spec(module.rpartition(".")[0])
        places = (package.submodule_search_locations or []) if package is not None else []
        if any(found.name == "settings" for found in pkgutil.iter_modules(places)):
            yield importlib.import_module(module.rpartition(".")[0] + ".settings").read


def load(env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate every setting; raises ConfigError naming the first bad variable."""
    env = os.environ if env is None else env
    shared = common.load(env)
    mode = envvars.choice(env, "KUBERNETES_DELIVERY", "direct", tuple(modes.MODES), upper=False)
    values: dict[str, Any] = {"kubernetes_delivery": mode}
    for read in mode_readers():
        values.update(read(env, mode))
    for registered in sources.SOURCES:
        if registered.settings is not None:
            values.update(registered.settings(env))
    known = {f.name for f in dataclasses.fields(Settings)}
    options = {name: value for name, value in values.items() if name not in known}
    owned = {name: value for name, value in values.items() if name in known}
    return dataclasses.replace(shared, **owned, options={**shared.options, **options})
