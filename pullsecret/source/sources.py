"""The pull-secret sources: the environment selects exactly one, by setting the one variable its registration names.
Adding a source is one package (its `registration` module's REGISTRATION: its name, the variable that selects it, its
settings record, declarations and factory; its machinery beside it) and one line here.

One shape with pullsecret.delivery.modes: a tuple of registrations, each imported from its package's `registration`
module, which imports none of the source's machinery (its factory imports it when the source is built). The choice
among sources is made here, and only here: none selected or two selected is one error naming every registered
source's variable.
"""

from __future__ import annotations

from collections.abc import Mapping

from pullsecret.errors import ConfigError
from pullsecret.settings import envvars
from pullsecret.source.base import Registration, Source, Wiring
from pullsecret.source.platform import registration as platform
from pullsecret.source.service import registration as service

SOURCES: tuple[Registration, ...] = (platform.REGISTRATION, service.REGISTRATION)


def selected(env: Mapping[str, str]) -> str:
    """The name of the one registered source whose variable `env` sets; raises ConfigError, naming every registered
    source's variable, when none or more than one is set."""
    chosen = [registered for registered in SOURCES if envvars.get(env, registered.selected_by) is not None]
    if len(chosen) == 1:
        return chosen[0].name
    choices = ", ".join(f"{registered.selected_by} ({registered.names})" for registered in SOURCES)
    found = " and ".join(registered.selected_by for registered in chosen) + " are set" if chosen else "none is set"
    raise ConfigError(f"exactly one pull-secret source must be selected, by setting one of {choices}: {found}")


def registration(name: str) -> Registration:
    """The registration of a source's name; raises KeyError when no source is registered under it."""
    for registered in SOURCES:
        if registered.name == name:
            return registered
    raise KeyError(f"no pull-secret source is registered as {name!r}")


def build(wiring: Wiring) -> Source:
    """The source the configuration selected (pullsecret.configured: `Settings.source`)."""
    return registration(wiring.settings.source).build(wiring)
