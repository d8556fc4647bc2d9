"""The seed design's call sequence, replayed against the same emulators for side-by-side figures.

Per event, all sequential: HyperFleet get cluster, list statuses; Secret Manager access the platform
source, GetSecret (CreateSecret when missing), AddSecretVersion every time, AccessSecretVersion
`latest`; GKE GetCluster and a Kubernetes client built from it; Kubernetes get, then create or update,
then a label update; the status report. gRPC clients and credentials are shared per process (the seed
did the same); the Kubernetes client is built per event from the GetCluster answer, as the seed did.
Parsing, preconditions, merging and the status body reuse the product's pure code, so the CPU
figures compare the I/O design, not two implementations of the same rules.
"""

from __future__ import annotations

import base64
import os
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from pullsecret import configured
from pullsecret.delivery.direct.reports import WORDING
from pullsecret.errors import TerminalError, TransientError, from_google, is_retryable_google
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.identity.google import RuntimeIdentity, authorized_channel, secret_manager_client
from pullsecret.model import dockerconfig, events, preconditions, status
from pullsecret.secretstore import sm_labels
from pullsecret.settings.common import Settings
from pullsecret.source.platform.settings import PlatformSettings

KEY = ".dockerconfigjson"


def cluster_manager_client(identity: RuntimeIdentity, emulator_host: str | None) -> Any:
    """The seed design's GKE client: the generated gRPC one (the emulator's gRPC form, SEED_GKE_GRPC_HOST)."""
    from google.cloud import container_v1
    from google.cloud.container_v1.services.cluster_manager.transports import ClusterManagerGrpcTransport

    host = emulator_host or "container.googleapis.com:443"
    channel = authorized_channel(host, identity, tls=not emulator_host)
    return container_v1.ClusterManagerClient(transport=ClusterManagerGrpcTransport(channel=channel))


class SeedFlow:
    """One per process, like the product's Adapter; `handle` raises TransientError for redelivery."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.identity = RuntimeIdentity()
        self.hyperfleet = HyperFleetClient(settings)
        self.sm = secret_manager_client(self.identity, settings.secret_manager_emulator_host)
        self.gke = cluster_manager_client(self.identity, os.environ.get("SEED_GKE_GRPC_HOST"))
        self.ca_dir = tempfile.mkdtemp(prefix="seedflow-ca-")

    @classmethod
    def from_environment(cls) -> SeedFlow:
        return cls(configured.load())

    def handle(self, attributes: Mapping[str, Any], data: Any) -> str:
        parsed = events.parse_event(attributes, data)
        if isinstance(parsed, events.SkippedEvent):
            return "ignored"
        try:
            return self.reconcile(parsed.cluster_id)
        except TerminalError:
            return "terminal"
        except Exception as exc:
            if is_retryable_google(exc):
                raise from_google(exc, service="seed", what="seed flow") from None
            raise

    def reconcile(self, cluster_id: str) -> str:
        settings = self.settings
        cluster = self.hyperfleet.get_cluster(cluster_id)
        if cluster is None:
            return "gone"
        statuses = self.hyperfleet.list_statuses(cluster_id)
        decision = preconditions.evaluate(cluster, statuses, settings, cluster_id=cluster_id)
        if not isinstance(decision, preconditions.Act):
            return "skipped"
        source = self.sm.access_secret_version(name=settings.of(PlatformSettings).version)
        platform = dockerconfig.parse(bytes(source.payload.data), source="PULL_SECRET_SOURCE")
        merged = dockerconfig.merge(platform, None, precedence=settings.merge_precedence).secret
        secret_id = settings.secret_id_template.format(cluster_id=cluster_id)
        version = self.store(decision.project_id, secret_id, cluster_id, merged.canonical)
        kube_name = settings.kubernetes_secret_template.format(cluster_id=cluster_id)
        self.apply(decision.placement, kube_name, cluster_id, merged.canonical, version)
        report = status.provisioned(
            decision.generation,
            applied=WORDING.applied(changed=True),
            available=WORDING.available(own_credentials=False),
            data={
                "sm_version": version,
                "kubernetes_namespace": decision.placement.namespace,
                "kubernetes_name": kube_name,
            },
        )
        self.hyperfleet.report_status(cluster_id, report.body(settings.adapter_name))
        return "applied"

    def store(self, project: str, secret_id: str, cluster_id: str, content: bytes) -> str:
        from google.api_core import exceptions as gexc
        from google.cloud.secretmanager_v1 import types

        name = f"projects/{project}/secrets/{secret_id}"
        try:
            self.sm.get_secret(name=name)
        except gexc.NotFound:
            labels = sm_labels(adapter=self.settings.adapter_name, cluster_id=cluster_id, cluster_name=cluster_id)
            self.sm.create_secret(
                parent=f"projects/{project}",
                secret_id=secret_id,
                secret=types.Secret(
                    replication=types.Replication(automatic=types.Replication.Automatic()), labels=labels
                ),
            )
        added = self.sm.add_secret_version(parent=name, payload=types.SecretPayload(data=content))
        latest = self.sm.access_secret_version(name=f"{name}/versions/latest")
        if bytes(latest.payload.data) != content:
            raise TransientError("the latest version differs from what was written")
        return str(added.name)

    def kube_api(self) -> Any:
        from kubernetes.client import ApiClient, Configuration, CoreV1Api

        cluster = self.gke.get_cluster(name=self.settings.management_cluster)
        conf = Configuration()
        conf.host = f"https://{cluster.endpoint}"
        fd, ca_file = tempfile.mkstemp(dir=self.ca_dir, suffix=".pem")
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.b64decode(cluster.master_auth.cluster_ca_certificate))
        conf.ssl_ca_cert = ca_file
        # The bench gives the replayed seed design a Kubernetes identity of its own (bench/env.py): the
        # adapter's identity may no longer read Secrets, and the admission policy holds its writes to our labels.
        token = os.environ.get("SEED_KUBE_TOKEN") or self.identity.token()
        conf.api_key["authorization"] = f"Bearer {token}"
        return CoreV1Api(ApiClient(conf)), ca_file

    def apply(
        self, placement: preconditions.Placement, name: str, cluster_id: str, content: bytes, version: str
    ) -> None:
        from kubernetes.client.exceptions import ApiException

        api, ca_file = self.kube_api()
        try:
            namespace = placement.namespace
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": {"hyperfleet.io/gcp-secret-path": version},
                },
                "type": "kubernetes.io/dockerconfigjson",
                "data": {KEY: base64.b64encode(content).decode()},
            }
            try:
                api.read_namespaced_secret(name, namespace, _preload_content=False)
                api.replace_namespaced_secret(name, namespace, body, _preload_content=False)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                api.create_namespaced_secret(namespace, body, _preload_content=False)
            labels = {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": cluster_id[:63]}
            api.patch_namespaced_secret(name, namespace, {"metadata": {"labels": labels}}, _preload_content=False)
        finally:
            api.api_client.close()
            os.unlink(ca_file)


_flow: SeedFlow | None = None
_flow_lock = threading.Lock()


def flow() -> SeedFlow:
    """The process-wide seed flow (built on first use)."""
    global _flow  # noqa: PLW0603 - one per process, like the product's adapter
    with _flow_lock:
        if _flow is None:
            _flow = SeedFlow.from_environment()
        return _flow
