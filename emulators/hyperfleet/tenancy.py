"""The API's tenant middleware: a caller without its tenant headers is refused unless it says it is the system.

hyperfleet-api 541f6b4 `pkg/tenant/middleware.go` (ResolveTenant): a system header of exactly `true` (trimmed,
case-insensitive) grants an unscoped system identity; otherwise every configured dimension header present is
collected, a missing required one (or none at all) is a 403 `HYPERFLEET-AUZ-001` whose detail names the header
(`required tenant header "X-HyperFleet-Org" is missing`). `pkg/services/resource.go` (rejectSystemIdentityWrite):
a system identity may only write status and conditions. The dev configuration (`configs/dev.yaml`):
`system_header: X-HyperFleet-System`, dimensions `X-HyperFleet-Org` (required) and `X-HyperFleet-Project`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emulators.httpbase import Request

_VALUE = re.compile(r"^[A-Za-z0-9._-]{1,63}$")  # maxDimensionValueLen and dimensionValuePattern upstream
SYSTEM_WRITE_DENIED = "system identities may only write status and conditions"


@dataclass(frozen=True)
class Tenancy:
    """`server.tenant` of the API: the system header and the (header, required) dimensions."""

    system_header: str = "X-HyperFleet-System"
    dimensions: tuple[tuple[str, bool], ...] = (("X-HyperFleet-Org", True), ("X-HyperFleet-Project", False))

    def resolve(self, request: Request) -> bool | str:
        """True for a system identity, False for a tenant one, else the 403's detail."""
        if (request.header(self.system_header) or "").strip().lower() == "true":
            return True
        found = 0
        for header, required in self.dimensions:
            value = (request.header(header) or "").strip()
            if not value:
                if required:
                    return f'required tenant header "{header}" is missing'
                continue
            if not _VALUE.match(value):
                return f'tenant header "{header}" has an invalid value'
            found += 1
        return False if found else "caller resolved no tenant dimensions"
