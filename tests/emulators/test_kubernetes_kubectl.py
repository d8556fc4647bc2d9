"""A reality check with a second real client: kubectl (Debian's /usr/bin/kubectl) against the Kubernetes emulator.

`kubectl auth can-i` (SelfSubjectAccessReview, sent as protobuf) must agree with terraform/kubernetes/rbac.yaml for
the runtime identity, and `kubectl apply --server-side` must be admitted or denied by the admission policy as the
function's own client is. Skipped where kubectl is not installed.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.manifests import render

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

SA = "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com"
TOKEN = "ya29.kubectl-test"
NS = "clusters-abc"


@pytest.fixture(scope="module")
def emu() -> Iterator[KubernetesEmulator]:
    emulator = KubernetesEmulator(FaultBook(), authenticate={TOKEN: SA}.get)
    emulator.start()
    emulator.add_namespace(NS)
    emulator.add_namespace("kube-system")
    emulator.apply_manifests(render(SA))
    yield emulator
    emulator.stop()


@pytest.fixture(scope="module")
def kubeconfig(emu: KubernetesEmulator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("kubectl")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "emulator",
                "cluster": {
                    "server": f"https://{emu.address}",
                    "certificate-authority-data": base64.b64encode(emu.ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": "runtime", "user": {"token": TOKEN}}],
        "contexts": [{"name": "runtime", "context": {"cluster": "emulator", "user": "runtime"}}],
        "current-context": "runtime",
    }
    path = home / "config"
    path.write_text(json.dumps(config))
    return path


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [KUBECTL, *args], env=env, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (("get", "secrets", "-n", NS), False),
        (("list", "secrets", "-n", NS), False),
        (("watch", "secrets", "--all-namespaces"), False),
        (("get", "secrets/admin-kubeconfig", "-n", "kube-system"), False),
        (("patch", "secrets", "-n", NS), True),
        (("create", "secrets", "-n", NS), True),
        (("delete", "secrets", "-n", NS), True),
        (("get", "validatingadmissionpolicies.admissionregistration.k8s.io/hyperfleet-pullsecret-adapter-scope"), True),
        (("get", "validatingadmissionpolicies.admissionregistration.k8s.io/someone-elses"), False),
        (("list", "validatingadmissionpolicies.admissionregistration.k8s.io"), False),
    ],
)
def test_auth_can_i_agrees_with_the_rbac_manifest(kubeconfig: Path, args: tuple[str, ...], allowed: bool) -> None:
    result = kubectl(kubeconfig, "auth", "can-i", *args)
    assert result.stdout.strip() == ("yes" if allowed else "no"), result.stderr
    assert result.returncode == (0 if allowed else 1)


def manifest(namespace: str, generation: str) -> str:
    return f"""apiVersion: v1
kind: Secret
metadata:
  name: abc-pull-secret
  namespace: {namespace}
  labels: {{hyperfleet.io/managed-by: pullsecret, hyperfleet.io/cluster-id: abc}}
  annotations: {{hyperfleet.io/generation: "{generation}"}}
type: kubernetes.io/dockerconfigjson
data: {{.dockerconfigjson: eyJhdXRocyI6e319}}
"""


def test_server_side_apply_is_admitted_and_denied_by_the_policy(kubeconfig: Path, emu: KubernetesEmulator) -> None:
    # --validate=false: kubectl's client-side schema check needs /openapi, which the emulator does not serve.
    apply = ("apply", "--server-side", "--validate=false", "--field-manager=hyperfleet-pullsecret", "-f", "-")
    first = kubectl(kubeconfig, *apply, stdin=manifest(NS, "2"))
    assert first.returncode == 0 and "serverside-applied" in first.stdout, first.stderr
    assert emu.get_secret(NS, "abc-pull-secret") is not None

    elsewhere = kubectl(kubeconfig, *apply, stdin=manifest("kube-system", "2"))
    assert elsewhere.returncode != 0
    assert "ValidatingAdmissionPolicy 'hyperfleet-pullsecret-adapter-scope' with binding" in elsewhere.stderr
    assert "ForbiddenNamespace" in elsewhere.stderr
    assert emu.get_secret("kube-system", "abc-pull-secret") is None

    older = kubectl(kubeconfig, *apply, stdin=manifest(NS, "1"))
    assert older.returncode != 0 and "StaleGeneration: generation 1 may not overwrite" in older.stderr
    # And kubectl, as the runtime identity, cannot read back what it wrote.
    read = kubectl(kubeconfig, "get", "secret", "abc-pull-secret", "-n", NS, "-o", "json")
    assert read.returncode != 0 and "Forbidden" in read.stderr and "eyJhdXRocyI6e319" not in read.stdout
