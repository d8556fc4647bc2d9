"""GKE emulator: google.container.v1.ClusterManager/GetCluster over real gRPC, and its REST form.

Answers the official ``ClusterManagerClient`` (gRPC, `address`) and the REST form the adapter calls
(`rest_address`: ``GET /v1/projects/P/locations/L/clusters/C``, JSON over plain HTTP on loopback, as
https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters/get serves it over
HTTPS) with the same answer: the same ``Cluster`` message, printed in proto3 JSON on REST (lowerCamel names,
fields without presence left out at their default), errors as Google's JSON error body
(``{"error": {"code", "message", "status"}}``, https://cloud.google.com/apis/design/errors#http_mapping) with the
HTTP status the gRPC code maps to. Both forms count as the one method ``GetCluster`` (faults and counters): a fault
given as a gRPC code name answers that code's HTTP status on REST. It carries what the adapter reads from a
management cluster: ``endpoint`` (here host:port of the Kubernetes emulator; the real one is a bare IP on
port 443), ``master_auth.cluster_ca_certificate`` (base64 of the CA PEM) and the DNS endpoint in
``control_plane_endpoints_config.dns_endpoint_config.endpoint``.  Same fault, authentication and
IAM model (``emulators.iam``) as the Secret Manager emulator.  A cluster's shape says how its control
plane can be reached: DNS endpoint with or without external traffic, public IP endpoint or private
endpoint only (a private cluster), IP access off.

Admin routes (paths relative to ``/gke``; bodies and answers are JSON):

    GET  /clusters          every configured cluster
    PUT  /clusters          {"name": "projects/P/locations/L/clusters/C", "endpoint": "127.0.0.1:8443",
                            "ca_pem": "-----BEGIN CERTIFICATE-----...", "dns_endpoint": "gke-x.goog",
                            "dns_allow_external_traffic": true, "public_endpoint": true,
                            "ip_endpoints": true, "legacy_private_config": false}
    POST /projects          {"project_id": "my-proj", "number": "123456789012"}
    POST /iam               {"project": p, "identity": "sa@p.iam.gserviceaccount.com"}
    POST /reset             drop all clusters and IAM grants (projects stay)
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import grpc
from google.cloud.container_v1 import types as t
from google.protobuf import json_format

from emulators.faults import LOST_RESPONSE, FaultBook
from emulators.grpcbase import Authenticator, GrpcEmulator, RpcError, fail
from emulators.httpbase import HTTPEmulator, Reply, Request
from emulators.iam import Resource
from emulators.routes import AdminCall, AdminRouter, Answer, Handler

_CLUSTER_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/clusters/([^/]+)$")
_LOCATION = re.compile(r"^[a-z]+-[a-z]+[0-9]+(-[a-z])?$")  # region (us-central1) or zone (us-central1-a)
_CLUSTER_ID = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
MASTER_VERSION = "1.33.5-gke.1000000"
_REST_ROUTE = re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+/clusters/[^/]+)$")
# google.rpc.Code -> HTTP (https://cloud.google.com/apis/design/errors#handling_errors, the table of codes).
HTTP_STATUS = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "DATA_LOSS": 500,
    "UNKNOWN": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
_NAME_FOR_STATUS = {status: name for name, status in reversed(HTTP_STATUS.items())}  # the first name listed


class AdminError(ValueError):
    """An admin or seed request the emulator refuses."""


@dataclass(frozen=True)
class ClusterSpec:
    project_number: str
    location: str
    cluster: str
    endpoint: str
    ca_pem: bytes
    dns_endpoint: str | None
    # The control plane's reachability, as GKE reports it (see _cluster_pb).
    dns_allow_external_traffic: bool = True
    public_endpoint: bool = True  # False: a private cluster whose control plane has only its private endpoint
    ip_endpoints: bool = True  # False: IP access to the control plane is off (DNS endpoint only)
    legacy_private_config: bool = False  # report private_cluster_config only (as older answers do)


class GkeEmulator(GrpcEmulator):
    """An in-memory GKE control plane serving GetCluster; thread-safe."""

    service = "gke"
    grpc_service = "google.container.v1.ClusterManager"

    def __init__(self, book: FaultBook, *, authenticate: Authenticator | None = None) -> None:
        super().__init__(book, authenticate=authenticate)
        self._lock = threading.Lock()
        self._clusters: dict[tuple[str, str, str], ClusterSpec] = {}
        self._admin = AdminRouter(self._admin_table())
        self._rest: _Rest | None = None

    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        return {"GetCluster": self.unary("GetCluster", self._get_cluster, t.GetClusterRequest, t.Cluster)}

    # -- configuration ------------------------------------------------------------------
    def add_cluster(
        self,
        name: str,
        *,
        endpoint: str,
        ca_pem: bytes,
        dns_endpoint: str | None = None,
        dns_allow_external_traffic: bool = True,
        public_endpoint: bool = True,
        ip_endpoints: bool = True,
        legacy_private_config: bool = False,
    ) -> None:
        """Register `projects/P/locations/L/clusters/C`; raises AdminError on malformed input.

        `public_endpoint=False` makes `endpoint` the control plane's private endpoint (a private cluster
        without public endpoint); `legacy_private_config` reports that through
        `private_cluster_config.enable_private_endpoint` alone, as answers from before
        `control_plane_endpoints_config` do.
        """
        match = _CLUSTER_NAME.match(name)
        if not match:
            raise AdminError(f"cluster name must be projects/P/locations/L/clusters/C, got {name!r}")
        project, location, cluster = match.groups()
        if not _LOCATION.match(location):
            raise AdminError(f"invalid location {location!r}")
        if not _CLUSTER_ID.match(cluster):
            raise AdminError(f"invalid cluster name {cluster!r}")
        if not endpoint or "/" in endpoint:
            raise AdminError(f"endpoint must be host or host:port, got {endpoint!r}")
        if b"-----BEGIN CERTIFICATE-----" not in ca_pem:
            raise AdminError("ca_pem must be a PEM certificate")
        try:
            number = self.projects.number(project)
        except ValueError as err:
            raise AdminError(str(err)) from err
        spec = ClusterSpec(
            number,
            location,
            cluster,
            endpoint,
            ca_pem,
            dns_endpoint,
            dns_allow_external_traffic=dns_allow_external_traffic,
            public_endpoint=public_endpoint,
            ip_endpoints=ip_endpoints,
            legacy_private_config=legacy_private_config,
        )
        with self._lock:
            self._clusters[(number, location, cluster)] = spec

    def reset(self) -> None:
        with self._lock:
            self._clusters.clear()
        self.iam.clear()  # project id/number pairs are configuration and stay

    def state(self) -> dict[str, Any]:
        with self._lock:
            clusters = [self._cluster_json(c) for c in self._clusters.values()]
        return {"projects": self.projects.to_json(), "iam": self.iam.to_json(), "clusters": clusters}

    def _cluster_json(self, spec: ClusterSpec) -> dict[str, Any]:
        return {
            "name": f"projects/{spec.project_number}/locations/{spec.location}/clusters/{spec.cluster}",
            "project_id": self.projects.project_id(spec.project_number),
            "endpoint": spec.endpoint,
            "dns_endpoint": spec.dns_endpoint,
            "dns_allow_external_traffic": spec.dns_allow_external_traffic,
            "public_endpoint": spec.public_endpoint,
            "ip_endpoints": spec.ip_endpoints,
            "legacy_private_config": spec.legacy_private_config,
            "ca_pem": spec.ca_pem.decode(),
        }

    # -- lifecycle: the gRPC server and the REST one --------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().start(host, port)
        rest = _Rest(self)
        try:
            rest.start(host)
        except BaseException:
            super().stop()
            raise
        self._rest = rest

    def stop(self) -> None:
        if self._rest is not None:
            self._rest.stop()
            self._rest = None
        super().stop()

    @property
    def rest_address(self) -> str:
        """host:port of the REST form (plain HTTP); `address` is the gRPC one."""
        if self._rest is None:
            raise RuntimeError("gke emulator not started")
        return self._rest.address

    # -- the RPC ------------------------------------------------------------------------
    def _get_cluster(self, req: t.GetClusterRequest, identity: str | None) -> t.Cluster:
        if req.name:
            return self.get_cluster(req.name, identity)
        else:  # the deprecated project_id / zone / cluster_id form
            for field_name in ("project_id", "zone", "cluster_id"):
                if not getattr(req, field_name):
                    fail(grpc.StatusCode.INVALID_ARGUMENT, f'Required field "{field_name}" is missing.')
            return self._lookup(req.project_id, req.zone, req.cluster_id, identity)

    def get_cluster(self, name: str, identity: str | None) -> t.Cluster:
        """GetCluster by `projects/P/locations/L/clusters/C` (both forms); raises RpcError."""
        match = _CLUSTER_NAME.match(name)
        if not match:
            fail(
                grpc.StatusCode.INVALID_ARGUMENT,
                f'Invalid value for field "name": "{name}". Must be in the format projects/*/locations/*/clusters/*.',
            )
        project, location, cluster = match.groups()
        return self._lookup(project, location, cluster, identity)

    def _lookup(self, project: str, location: str, cluster: str, identity: str | None) -> t.Cluster:
        number = self.project_number(project)
        path = f"projects/{project}/locations/{location}/clusters/{cluster}"
        # GetCluster needs container.clusters.get on the cluster
        # (https://cloud.google.com/kubernetes-engine/docs/reference/api-permissions).
        self.authorize(
            identity,
            "container.clusters.get",
            Resource.cluster(number, location, cluster),
            f'Required "container.clusters.get" permission(s) for "{path}".',
        )
        with self._lock:
            spec = self._clusters.get((number, location, cluster))
        if spec is None:
            # The real message names the resource as the request did.
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"Not found: {path}.")
        return self._cluster_pb(spec)

    def _cluster_pb(self, spec: ClusterSpec) -> t.Cluster:
        project_id = self.projects.project_id(spec.project_number)
        kind = "zones" if spec.location.count("-") == 2 else "locations"
        # Endpoint fields as google.container.v1 reports them
        # (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation): with a public endpoint,
        # `endpoint` is the public IP; without one, it is the private IP. The DNS endpoint is always reported;
        # allow_external_traffic says whether it takes user traffic.
        cp = t.ControlPlaneEndpointsConfig
        ip = cp.IPEndpointsConfig(enabled=spec.ip_endpoints)
        private: t.PrivateClusterConfig | None = None
        if spec.ip_endpoints and spec.public_endpoint:
            ip.enable_public_endpoint = True
            ip.public_endpoint = spec.endpoint
        elif spec.ip_endpoints:
            ip.enable_public_endpoint = False
            ip.private_endpoint = spec.endpoint
            private = t.PrivateClusterConfig(
                enable_private_nodes=True, enable_private_endpoint=True, private_endpoint=spec.endpoint
            )
        endpoints = cp()
        if not spec.legacy_private_config:
            endpoints.ip_endpoints_config = ip
        if spec.dns_endpoint:
            endpoints.dns_endpoint_config = cp.DNSEndpointConfig(
                endpoint=spec.dns_endpoint, allow_external_traffic=spec.dns_allow_external_traffic
            )
        return t.Cluster(
            name=spec.cluster,
            id=hashlib.sha256(f"{spec.project_number}/{spec.location}/{spec.cluster}".encode()).hexdigest()[:32],
            location=spec.location,
            zone=spec.location,
            self_link=(
                f"https://container.googleapis.com/v1/projects/{project_id}/{kind}/{spec.location}"
                f"/clusters/{spec.cluster}"
            ),
            endpoint=spec.endpoint if spec.ip_endpoints else "",
            private_cluster_config=private,
            master_auth=t.MasterAuth(cluster_ca_certificate=base64.b64encode(spec.ca_pem).decode()),
            control_plane_endpoints_config=endpoints,
            status=t.Cluster.Status.RUNNING,
            current_master_version=MASTER_VERSION,
            initial_cluster_version=MASTER_VERSION,
        )

    # -- admin HTTP routes ----------------------------------------------------------------
    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Serve an admin route (path relative to /gke); answers (status, json)."""
        try:
            answer = self._admin.dispatch(method, path, body)
        except (KeyError, TypeError, ValueError) as err:
            return 400, {"error": f"bad request: {err}"}
        if answer is None:
            return 404, {"error": f"no admin route {method} /{self.service}{path}"}
        return answer

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/clusters"): lambda _: (200, self.state()["clusters"]),
            ("PUT", "/clusters"): self._admin_put_cluster,
            ("POST", "/projects"): self._admin_project,
            ("POST", "/iam"): lambda call: (200, self.admin_bind(_object(call.body))),
            ("POST", "/reset"): self._admin_reset,
        }

    def _admin_put_cluster(self, call: AdminCall) -> Answer:
        spec = _object(call.body)
        ca = spec["ca_pem"]
        dns = spec.get("dns_endpoint")
        self.add_cluster(
            str(spec["name"]),
            endpoint=str(spec["endpoint"]),
            ca_pem=ca.encode() if isinstance(ca, str) else bytes(ca),
            dns_endpoint=None if dns is None else str(dns),
            **{flag: _bool(spec, flag, default) for flag, default in _SHAPE_FLAGS.items()},
        )
        return 200, self.state()["clusters"]

    def _admin_project(self, call: AdminCall) -> Answer:
        spec = _object(call.body)
        self.add_project(str(spec["project_id"]), str(spec["number"]))
        return 200, {"projects": self.projects.to_json()}

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, {"reset": True}


class _Rest(HTTPEmulator):
    """The REST form of GetCluster, over the same clusters, IAM, faults and counters as the gRPC form."""

    service = "gke"

    def __init__(self, gke: GkeEmulator) -> None:
        super().__init__()
        self.gke = gke

    def handle(self, request: Request) -> Reply:
        match = _REST_ROUTE.match(unquote(request.path))
        if request.method != "GET" or match is None:
            return _error("NOT_FOUND", f"The requested URL {request.path} was not found on this server.", status=404)
        code = self.gke.control.enter("GetCluster")
        if code is not None and not code.startswith(LOST_RESPONSE):
            return _fault(code)
        try:
            identity = self._identity(request.header("authorization") or "")
            cluster = self.gke.get_cluster(match.group(1), identity)
        except RpcError as err:
            return _error(err.code.name, err.message)
        if code is not None:  # GetCluster changes nothing: a lost answer is the fault's answer
            return _fault(code.removeprefix(LOST_RESPONSE))
        # System parameter `$alt=json;enum-encoding=int` (https://cloud.google.com/apis/docs/system-parameters)
        # asks for enums as numbers, as the official REST client does.
        numbers = "enum-encoding=int" in (request.arg("$alt") or "")
        body = json_format.MessageToJson(t.Cluster.pb(cluster), use_integers_for_enums=numbers)
        return Reply(200, body.encode(), {"Content-Type": _JSON})

    def _identity(self, header: str) -> str | None:
        """As the gRPC form (`GrpcEmulator._identity`): the bearer token the metadata server issued."""
        if self.gke.authenticate is None:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            fail(
                grpc.StatusCode.UNAUTHENTICATED,
                "Request is missing required authentication credential. Expected OAuth 2 access token.",
            )
        identity = self.gke.authenticate(token.strip())
        if identity is None:
            fail(
                grpc.StatusCode.UNAUTHENTICATED,
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            )
        return identity


_JSON = "application/json; charset=UTF-8"


def _error(name: str, message: str, *, status: int | None = None) -> Reply:
    code = status if status is not None else HTTP_STATUS.get(name, 500)
    body = {"error": {"code": code, "message": message, "status": name}}
    return Reply(code, json.dumps(body).encode(), {"Content-Type": _JSON})


def _fault(code: str) -> Reply:
    """An injected fault on REST: a transport fault as such, a gRPC code name as its HTTP status, or a status."""
    if code in ("reset", "timeout"):
        return Reply.drop(code)
    name = code.upper()
    if name in HTTP_STATUS:
        return _error(name, f"injected fault: {name}")
    status = int(code) if code.isdigit() else 500
    return _error(_NAME_FOR_STATUS.get(status, "UNKNOWN"), f"injected fault: HTTP {status}", status=status)


_SHAPE_FLAGS = {
    "dns_allow_external_traffic": True,
    "public_endpoint": True,
    "ip_endpoints": True,
    "legacy_private_config": False,
}


def _bool(spec: dict[str, Any], key: str, default: bool) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise AdminError(f"{key} must be true or false")
    return value


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise AdminError("body must be a JSON object")
    return body
