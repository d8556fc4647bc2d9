"""Secret Manager emulator: google.cloud.secretmanager.v1.SecretManagerService over real gRPC.

The parts: ``emulator`` (the servicer: RPCs, state, IAM policies and the admin API).
"""

from emulators.secretmanager.emulator import SecretManagerEmulator, crc32c, crc32c_pure

__all__ = ["SecretManagerEmulator", "crc32c", "crc32c_pure"]
