"""GKE's GetCluster over REST: one authorised GET, the answer read into what the endpoint choice needs.

Used through endpoints.py (the endpoint choice) by every caller of a GKE cluster's Kubernetes API: the direct
delivery's management clusters and the regional cluster that mints the adapter's ServiceAccount tokens
(pullsecret.identity.satoken).

`GET https://container.googleapis.com/v1/projects/P/locations/L/clusters/C`
(https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters/get), with the
runtime identity's access token as bearer, answers the `Cluster` in proto3 JSON (lowerCamel names, a field with
presence printed when set, false included). REST rather than the generated `google.cloud.container_v1` client:
that package (its proto-plus types and gRPC transport) took about 0.12 s of a direct-mode cold start's first
event, for one call whose answer needs a handful of fields.

Errors are google-api-core exceptions, so the callers' retry predicate and error mapping are those of every
Google call: the error body's canonical `status` (`PERMISSION_DENIED`, `NOT_FOUND`, ...) picks the exception, as
the gRPC client's status code did (the same names reach status messages); without one, the HTTP status does. An
answer that is not the JSON of a Cluster counts as a bad gateway (502, retried). The error's `message` stays on the
exception (its first 300 characters, as the gRPC client kept its details); status and logs name the code only
(`errors.from_google`).

Seam (docs/design.md): `GKE_EMULATOR_HOST=host:port` sends the same GET over plain HTTP on loopback.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import certifi
import urllib3
from google.api_core import exceptions as gexc

from pullsecret import outbound
from pullsecret.logs import answer_text
from pullsecret.outbound import deadline_io
from pullsecret.retrying import Deadline

API = "https://container.googleapis.com"
_OK = 200
_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/clusters/([^/]+)$")


class AccessToken(Protocol):
    """Whose access token the GET carries: the runtime identity (pullsecret.identity.google.RuntimeIdentity)."""

    def token(self) -> str: ...


@dataclass(frozen=True)
class ClusterAnswer:
    """The fields of a GetCluster answer the endpoint choice reads (`gke_endpoints.choose_endpoint`).

    `ip_enabled` and `ip_public` are None when the answer leaves them out (fields with presence in
    `ControlPlaneEndpointsConfig.IPEndpointsConfig`; older answers have no such block).
    """

    endpoint: str = ""
    ca_certificate: str = ""  # base64 of the PEM, as `masterAuth.clusterCaCertificate` carries it
    dns_endpoint: str = ""
    dns_allow_external_traffic: bool = False
    ip_enabled: bool | None = None
    ip_public: bool | None = None
    legacy_private_endpoint: bool = False  # privateClusterConfig.enablePrivateEndpoint


class Malformed(ValueError):
    """A 200 answer that is not the JSON of a Cluster."""


def _field(block: dict[str, Any], key: str, kind: type) -> Any:
    value = block.get(key)
    if value is not None and not isinstance(value, kind):
        raise Malformed(f"{key} is not a {kind.__name__}")
    return value


def _block(block: dict[str, Any], key: str) -> dict[str, Any]:
    value = _field(block, key, dict)
    return value if value is not None else {}


def parse_cluster(body: bytes) -> ClusterAnswer:
    """The answer's endpoint fields; raises Malformed when the body is not a Cluster object of the right types."""
    try:
        cluster = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise Malformed("not JSON") from exc
    if not isinstance(cluster, dict):
        raise Malformed("not a JSON object")
    endpoints = _block(cluster, "controlPlaneEndpointsConfig")
    dns, ip = _block(endpoints, "dnsEndpointConfig"), _block(endpoints, "ipEndpointsConfig")
    return ClusterAnswer(
        endpoint=_field(cluster, "endpoint", str) or "",
        ca_certificate=_field(_block(cluster, "masterAuth"), "clusterCaCertificate", str) or "",
        dns_endpoint=_field(dns, "endpoint", str) or "",
        dns_allow_external_traffic=bool(_field(dns, "allowExternalTraffic", bool)),
        ip_enabled=_field(ip, "enabled", bool),
        ip_public=_field(ip, "enablePublicEndpoint", bool),
        legacy_private_endpoint=bool(_field(_block(cluster, "privateClusterConfig"), "enablePrivateEndpoint", bool)),
    )


def api_error(status: int, body: bytes) -> gexc.GoogleAPICallError:
    """The google-api-core exception for an error answer: by its canonical code name, else by HTTP status."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError, RecursionError):
        error = None
    name = error.get("status") if isinstance(error, dict) else None
    said = error.get("message") if isinstance(error, dict) else None
    message = f"GetCluster answered HTTP {status}" + (f": {answer_text(said, 300)}" if isinstance(said, str) else "")
    if isinstance(name, str) and name != "OK":
        import grpc  # loaded already: google.api_core.exceptions imports it

        code = grpc.StatusCode.__members__.get(name)
        if code is not None:
            by_code: gexc.GoogleAPICallError = gexc.from_grpc_status(code, message)  # type: ignore[no-untyped-call]
            return by_code
    by_status: gexc.GoogleAPICallError = gexc.from_http_status(status, message)  # type: ignore[no-untyped-call]
    return by_status


def resource_path(name: str) -> str:
    """The URL path of cluster `name`, each segment percent-encoded: a name from placement data (untrusted) never
    reaches another path or a query; `.` and `..` segments and other shapes are refused as GKE would refuse them."""
    match = _NAME.fullmatch(name)
    if match is None or any(segment in (".", "..") for segment in match.groups()):
        import grpc

        raise gexc.from_grpc_status(grpc.StatusCode.INVALID_ARGUMENT, "not a cluster name")  # type: ignore[no-untyped-call]
    project, location, cluster = (quote(segment, safe="") for segment in match.groups())
    return f"/v1/projects/{project}/locations/{location}/clusters/{cluster}"


class GkeClusters:
    """GetCluster over one urllib3 pool; thread-safe, one per process. Retries are the caller's."""

    def __init__(self, identity: AccessToken, emulator_host: str | None, *, pool_size: int = 8) -> None:
        self._identity = identity
        base = f"http://{emulator_host}" if emulator_host else API
        tls = {} if emulator_host else {"ca_certs": certifi.where()}
        self._pool = deadline_io.connection_from_url(base, maxsize=pool_size, retries=False, **tls)

    def get_cluster(self, name: str, *, timeout: float) -> ClusterAnswer:
        """The cluster `projects/P/locations/L/clusters/C`, within `timeout` seconds in all; google-api-core
        exceptions on an error answer, urllib3's on no answer in time."""
        path = resource_path(name)
        # No traceparent, as before the builder: GetCluster's answer is cached across events.
        sent = outbound.request(token=self._identity.token(), trace=False)
        with deadline_io.within(Deadline(timeout)):  # `timeout` bounds the whole call, its body included
            response = self._pool.request(
                "GET", path, headers=sent.headers, timeout=urllib3.Timeout(total=timeout), redirect=False
            )
        if response.status != _OK:
            raise api_error(response.status, response.data)
        try:
            return parse_cluster(response.data)
        except Malformed:
            raise gexc.BadGateway("GetCluster answered something that is not a Cluster") from None  # type: ignore[no-untyped-call]
