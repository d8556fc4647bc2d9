"""The fence around the implementations: every package under pullsecret/delivery/ and pullsecret/source/ (a delivery
mode or a source) is named by each import contract that keeps implementations apart (pyproject.toml): `modes-
independent` (no implementation imports another), the `layers` contract's implementation layer (nothing below it
imports one), and `operator-no-delivery-impl` / `operator-no-source-impl` (the operator tools reach them through the
seams). A package none of them names is fenced by none: import-linter only checks the modules a contract lists."""

from __future__ import annotations

import pkgutil
import tomllib
from types import ModuleType

import pullsecret.delivery
import pullsecret.source

SEAMS: dict[str, ModuleType] = {"delivery": pullsecret.delivery, "source": pullsecret.source}
OPERATOR_CONTRACTS = {"delivery": "operator-no-delivery-impl", "source": "operator-no-source-impl"}


def implementation_packages() -> dict[str, set[str]]:
    """seam -> its implementation packages (the seams' own modules, base and the registry, are modules, not
    packages), as Python finds them on the seam package's path."""
    return {
        seam: {f"{package.__name__}.{found.name}" for found in pkgutil.iter_modules(package.__path__) if found.ispkg}
        for seam, package in SEAMS.items()
    }


def unfenced(pyproject: str) -> dict[str, set[str]]:
    """contract -> the implementation packages it does not name (empty: every one fenced)."""
    contracts = {c["id"]: c for c in tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]}
    layers = contracts["layers"]["layers"]
    (implementations,) = [layer for layer in layers if "pullsecret.delivery.direct" in layer]
    listed = {
        "modes-independent": set(contracts["modes-independent"]["modules"]),
        "layers": {name.strip() for name in implementations.split("|")},
        **{contract: set(contracts[contract]["forbidden_modules"]) for contract in OPERATOR_CONTRACTS.values()},
    }
    packages = implementation_packages()
    every = packages["delivery"] | packages["source"]
    missing = {contract: every - listed[contract] for contract in ("modes-independent", "layers")}
    for seam, contract in OPERATOR_CONTRACTS.items():
        missing[contract] = packages[seam] - listed[contract]
    return {contract: names for contract, names in missing.items() if names}
