"""An emulator of the HyperFleet Pull Secret Service (its design record's API), wired to the registry emulator."""

from emulators.pullsecretservice.server import DDR_CLUSTER_ID_PATTERN, PullSecretServiceEmulator
from emulators.pullsecretservice.store import RegistryAccounts

__all__ = ["DDR_CLUSTER_ID_PATTERN", "PullSecretServiceEmulator", "RegistryAccounts"]
