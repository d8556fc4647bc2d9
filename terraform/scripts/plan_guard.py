#!/usr/bin/env python3
"""What a saved plan says, for the deploy build (cloudbuild.yaml; issue 51, items 3 and 9).

    plan_guard.py deployed PLAN.json           the commit the state was last applied from (terraform_data.release
                                               in the plan's prior state), or nothing
    plan_guard.py same REVIEWED.json PLAN.json exit 1 unless the two plans make the same changes: the plan an
                                               approver reviewed is the plan applied

PLAN.json is `terraform show -json PLAN`. Standard library only: it runs in the Cloud SDK image.
"""

from __future__ import annotations

import json
import sys
from typing import Any

RELEASE = "terraform_data.release"


def _resources(module: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(module.get("resources", []))
    for child in module.get("child_modules", []):
        found += _resources(child)
    return found


def deployed(plan: dict[str, Any]) -> str:
    """The recorded commit of the prior state, or "" (nothing recorded: a first apply, or one by hand without it)."""
    root = plan.get("prior_state", {}).get("values", {}).get("root_module", {})
    for resource in _resources(root):
        if resource.get("address", "").endswith(RELEASE):
            output = resource.get("values", {}).get("output") or {}
            return str(output.get("commit") or "")
    return ""


def changes(plan: dict[str, Any]) -> list[tuple[str, list[str], str]]:
    """(address, actions, the planned values) of every resource the plan changes; no-ops left out."""
    out = []
    for change in plan.get("resource_changes", []):
        actions = change["change"]["actions"]
        if actions == ["no-op"] or change["address"].endswith(RELEASE):
            continue  # the recorded commit differs between two builds' plans by design
        after = json.dumps([change["change"].get("after"), change["change"].get("after_unknown")], sort_keys=True)
        out.append((change["address"], actions, after))
    return sorted(out)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "deployed":
        with open(argv[1]) as handle:
            print(deployed(json.load(handle)))
        return 0
    if len(argv) == 3 and argv[0] == "same":
        with open(argv[1]) as first, open(argv[2]) as second:
            reviewed, planned = changes(json.load(first)), changes(json.load(second))
        if reviewed == planned:
            return 0
        differ = sorted(
            {a for a, _, _ in reviewed} ^ {a for a, _, _ in planned}
            | {a for (a, x, v), (b, y, w) in zip(reviewed, planned, strict=False) if (a, x, v) != (b, y, w)}
        )
        print(f"plan_guard: this plan is not the reviewed one; it differs at {', '.join(differ)}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
