"""The official Kubernetes client against the Kubernetes emulator, as the runtime identity (TOKEN) or someone else
(OTHER_TOKEN), and the Secret bodies the admission policy judges: shared by the emulator's admission tests
(tests/emulators/test_kubernetes_admission.py) and the reliability suite's hostile ones."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from kubernetes import client

from emulators.kubernetes import KubernetesEmulator

SA = "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com"
TOKEN = "ya29.runtime-token"
OTHER = "someone@example.com"
OTHER_TOKEN = "ya29.other-token"
NS = "clusters-abc"
NAME = "abc-pull-secret"
Api = Any
CONFIG = base64.b64encode(json.dumps({"auths": {"quay.io": {"auth": "dTpw"}}}).encode()).decode()


def make_api(emu: KubernetesEmulator, tmp_path: Path, token: str) -> Api:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(emu.ca_pem)
    config = client.Configuration(
        host=f"https://{emu.address}", ssl_ca_cert=str(ca), api_key={"authorization": f"Bearer {token}"}
    )
    config.retries = False
    return client.ApiClient(config)


def secret(
    labels: dict[str, str] | None = None, generation: str | None = "3", type_: str = "kubernetes.io/dockerconfigjson"
) -> dict[str, Any]:
    annotations = {} if generation is None else {"hyperfleet.io/generation": generation}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": NAME, "labels": labels or {}, "annotations": annotations},
        "type": type_,
        "data": {".dockerconfigjson": CONFIG} if type_ == "kubernetes.io/dockerconfigjson" else {"x": CONFIG},
    }


# Ours, as the previous release labelled it: the fleet-wide managed-by, this adapter's name, and the cluster whose
# Secret's name KUBERNETES_SECRET_TEMPLATE gives (policy revision 4: managed-by=hyperfleet alone is not ours).
OURS = {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": "abc"}


def apply(api: Api, body: dict[str, Any], namespace: str = NS, force: bool = False, **kw: Any) -> Any:
    return api.patch_namespaced_secret(
        NAME,
        namespace,
        body,
        field_manager="hyperfleet-pullsecret",
        force=force,
        _content_type="application/apply-patch+yaml",
        **kw,
    )
