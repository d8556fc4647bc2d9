"""The CPU one event spends on the worst-shaped pull secret a cluster owner can send (issue 30, item 1).

Shape: as many registries as a pull secret may name (model/dockerconfig.MAX_REGISTRIES), each a username/password
entry (the most credential forms per entry: the password, `user:password` and its basic form in both paddings, and
their JSON-escaped forms), padded to the 64 KiB payload limit, its keys at the registry emulator's basic host so
that registry verification (report) runs its capped handshakes too. Compared with the first-provisioning event of an
ordinary cluster in the same process: the figure is the ratio.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from bench import inproc
from bench.env import Emulators
from pullsecret.model.dockerconfig import MAX_PAYLOAD_BYTES, MAX_REGISTRIES


def worst_auths(basic_host: str) -> dict[str, Any]:
    """MAX_REGISTRIES username/password entries at one host's paths, the canonical document just under 64 KiB."""

    def build(password_len: int) -> dict[str, Any]:
        return {
            f"{basic_host}/ns{i:03d}": {"username": f"robot-{i:03d}", "password": f"P{i:03d}-" + "x" * password_len}
            for i in range(MAX_REGISTRIES)
        }

    size = 1
    while len(json.dumps({"auths": build(size + 1)}, separators=(",", ":"))) < MAX_PAYLOAD_BYTES - 512:
        size += 1
    return build(size)


def cpu_ms(stack: Emulators, env: Mapping[str, str], *, hostile: list[str], ordinary: list[str]) -> dict[str, Any]:
    """Process CPU per first-provisioning event: the worst-shaped pull secret against an ordinary one."""
    auths = worst_auths(stack.endpoints["registry"]["basic"])
    stack.seed_with_pull_secret(hostile, auths)
    stack.seed_clusters(ordinary)
    handler = inproc.product_handler({**env, "REGISTRY_VERIFICATION": "report"})
    inproc.provision(handler, [ordinary[0]])  # clients built
    figures: dict[str, float] = {}
    with inproc.quiet():
        for name, clusters in (("ordinary", ordinary[1:]), ("worst", hostile)):
            start = time.process_time()
            for cluster_id in clusters:
                inproc.deliver(handler, cluster_id)
            figures[name] = round((time.process_time() - start) * 1000 / len(clusters), 1)
    return {
        "registries": len(auths),
        "payload_bytes": len(json.dumps({"auths": auths}, separators=(",", ":"))),
        "cpu_ms_worst": figures["worst"],
        "cpu_ms_ordinary": figures["ordinary"],
        "ratio": round(figures["worst"] / figures["ordinary"], 1) if figures["ordinary"] else None,
    }
