"""GKE management cluster → an authenticated Kubernetes API client, cached per cluster.

`get_cluster` gives the endpoint and CA (or the DNS endpoint, trusted through the system store).
The bearer token is the runtime identity's access token, fetched for each request through the
client's `refresh_api_key_hook`, so an expiring token is refreshed before it is sent.
"""

from __future__ import annotations

import base64
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc

from pullsecret import retrying
from pullsecret.clients import RuntimeIdentity
from pullsecret.errors import TerminalError, from_google, is_retryable_google
from pullsecret.retrying import Deadline

ENDPOINT_TTL_S = 3600.0


@dataclass
class _Entry:
    api: Any  # pullsecret.kubeapi.SecretsApi
    created: float
    ca_file: str | None


class ManagementClusters:
    """Thread-safe cache of Kubernetes clients keyed by GKE cluster resource name."""

    def __init__(
        self, gke_client: Any, identity: RuntimeIdentity, *, endpoint: str = "ip", pool_size: int = 64
    ) -> None:
        self._gke = gke_client
        self._identity = identity
        self._endpoint = endpoint
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._building: dict[str, threading.Lock] = {}
        self._tmpdir = tempfile.mkdtemp(prefix="pullsecret-ca-")

    def api_for(self, cluster_name: str, deadline: Deadline) -> Any:
        """The Secrets API of the management cluster (built once, shared); raises Terminal/TransientError."""
        with self._lock:
            entry = self._entries.get(cluster_name)
            if entry is not None and time.monotonic() - entry.created < ENDPOINT_TTL_S:
                return entry.api
            building = self._building.setdefault(cluster_name, threading.Lock())
        # One builder per cluster; concurrent requests for the same cluster wait for it.
        with building:
            with self._lock:
                entry = self._entries.get(cluster_name)
                if entry is not None and time.monotonic() - entry.created < ENDPOINT_TTL_S:
                    return entry.api
            entry = self._build(cluster_name, deadline)
            with self._lock:
                self._entries[cluster_name] = entry
            return entry.api

    def invalidate(self, cluster_name: str) -> None:
        """Forget a cluster's endpoint (after TLS or connection failures: it may have rotated)."""
        with self._lock:
            self._entries.pop(cluster_name, None)

    def _build(self, cluster_name: str, deadline: Deadline) -> _Entry:
        from kubernetes.client.api_client import ApiClient
        from kubernetes.client.configuration import Configuration

        from pullsecret.kubeapi import SecretsApi

        what = f"get management cluster {cluster_name}"

        def attempt() -> Any:
            return self._gke.get_cluster(
                name=cluster_name, retry=None, timeout=max(min(deadline.remaining(), 20.0), 0.5)
            )

        try:
            cluster = retrying.call(
                attempt,
                predicate=is_retryable_google,
                deadline=deadline,
                on_give_up=lambda cause: from_google(cause, service="gke", what=what),
            )
        except gexc.NotFound:
            raise TerminalError(
                f"{what}: no such GKE cluster", reason="ManagementClusterNotFound", service="gke"
            ) from None
        except gexc.GoogleAPICallError as exc:
            raise from_google(exc, service="gke", what=what) from None

        config = Configuration()
        ca_file: str | None = None
        dns = cluster.control_plane_endpoints_config.dns_endpoint_config.endpoint
        if self._endpoint == "dns" and dns:
            config.host = f"https://{dns}"
        else:
            if not cluster.endpoint or not cluster.master_auth.cluster_ca_certificate:
                raise TerminalError(
                    f"{what}: the cluster has no endpoint or CA certificate",
                    reason="ManagementClusterNotReady",
                    service="gke",
                )
            config.host = f"https://{cluster.endpoint}"
            ca_pem = base64.b64decode(cluster.master_auth.cluster_ca_certificate)
            fd, ca_file = tempfile.mkstemp(dir=self._tmpdir, suffix=".pem")
            with os.fdopen(fd, "wb") as handle:
                handle.write(ca_pem)
            config.ssl_ca_cert = ca_file
        config.verify_ssl = True
        config.connection_pool_maxsize = self._pool_size
        config.retries = False  # retries are ours (backoff with jitter inside the event deadline)
        identity = self._identity

        def refresh_token(configuration: Any) -> None:
            configuration.api_key["authorization"] = f"Bearer {identity.token()}"

        config.refresh_api_key_hook = refresh_token  # type: ignore[assignment]
        config.api_key["authorization"] = ""
        # The Secret calls only: CoreV1Api would import 250 pydantic models on the first event (kubeapi).
        return _Entry(api=SecretsApi(ApiClient(config)), created=time.monotonic(), ca_file=ca_file)
