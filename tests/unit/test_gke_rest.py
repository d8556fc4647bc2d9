"""GetCluster over REST (pullsecret.gke.api): the answer's types checked, the name kept in its path,
error answers named by the same codes as the gRPC client's."""

from __future__ import annotations

import json

import pytest
from google.api_core import exceptions as gexc

from pullsecret.errors import from_google, is_retryable_google
from pullsecret.gke.api import ClusterAnswer, Malformed, api_error, parse_cluster, resource_path


@pytest.mark.parametrize(
    "body",
    [
        b"<html>502</html>",
        b"[]",
        b'{"endpoint": 1}',
        b'{"masterAuth": "x"}',
        b'{"controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"enabled": "false"}}}',
        b'{"controlPlaneEndpointsConfig": {"dnsEndpointConfig": {"allowExternalTraffic": 1}}}',
        b"[" * 100_000,
    ],
)
def test_an_answer_that_is_not_a_cluster_is_malformed(body: bytes) -> None:
    with pytest.raises(Malformed):
        parse_cluster(body)


def test_absent_fields_keep_their_proto_defaults_and_presence() -> None:
    assert parse_cluster(b"{}") == ClusterAnswer()
    answer = parse_cluster(
        json.dumps({"controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"enabled": False}}}).encode()
    )
    assert (answer.ip_enabled, answer.ip_public) == (False, None)


def test_the_name_stays_in_its_path() -> None:
    assert (
        resource_path("projects/p/locations/us-central1/clusters/c")
        == "/v1/projects/p/locations/us-central1/clusters/c"
    )
    # A management cluster named by placement data (untrusted) reaches no query, fragment or other path.
    assert (
        resource_path("projects/p/locations/l/clusters/c?x=1#f") == "/v1/projects/p/locations/l/clusters/c%3Fx%3D1%23f"
    )
    assert resource_path("projects/p%2F../locations/l/clusters/c") == "/v1/projects/p%252F../locations/l/clusters/c"
    for name in ("projects/../locations/l/clusters/c", "projects/p/locations/./clusters/c", "clusters/c"):
        with pytest.raises(gexc.InvalidArgument):
            resource_path(name)


@pytest.mark.parametrize(
    ("status", "body", "name", "retryable"),
    [
        (403, {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "m"}}, "PERMISSION_DENIED", False),
        (404, {"error": {"code": 404, "status": "NOT_FOUND", "message": "m"}}, "NOT_FOUND", False),
        (401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}}, "UNAUTHENTICATED", False),
        (503, {"error": {"code": 503, "status": "UNAVAILABLE"}}, "UNAVAILABLE", True),
        (429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}, "RESOURCE_EXHAUSTED", True),
        (502, "<html>bad gateway</html>", "BadGateway", True),  # a proxy's page: the HTTP status decides
        (500, {"error": {"status": "OK"}}, "INTERNAL", True),  # a status that contradicts the answer is ignored
    ],
)
def test_error_answers_map_as_the_grpc_clients_codes(status: int, body: object, name: str, retryable: bool) -> None:
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    exc = api_error(status, raw)
    assert (exc.grpc_status_code.name if exc.grpc_status_code else type(exc).__name__) == name
    assert is_retryable_google(exc) is retryable


def test_permission_denied_reads_as_before() -> None:
    exc = api_error(403, json.dumps({"error": {"status": "PERMISSION_DENIED"}}).encode())
    mapped = from_google(exc, service="gke", what="get management cluster c")
    assert mapped.reason == "PermissionDenied"
    assert str(mapped).startswith("get management cluster c: gke denied the runtime identity (PERMISSION_DENIED)")
