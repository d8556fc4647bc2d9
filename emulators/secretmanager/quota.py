"""The per-project write quota's refusal: RESOURCE_EXHAUSTED with the ErrorInfo the real service attaches."""

from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

# The RPCs the write quota counts.
WRITES = {
    "CreateSecret",
    "UpdateSecret",
    "DeleteSecret",
    "AddSecretVersion",
    "DisableSecretVersion",
    "EnableSecretVersion",
    "DestroySecretVersion",
}


def quota_message(project_number: str) -> str:
    return (
        "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute' of "
        f"service 'secretmanager.googleapis.com' for consumer 'project_number:{project_number}'."
    )


def quota_status(project_number: str) -> Any:
    info = error_details_pb2.ErrorInfo(
        reason="RATE_LIMIT_EXCEEDED",
        domain="googleapis.com",
        metadata={
            "quota_metric": "secretmanager.googleapis.com/write_requests",
            "quota_limit": "WriteRequestsPerMinutePerProject",
            "service": "secretmanager.googleapis.com",
            "consumer": f"projects/{project_number}",
        },
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    return status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=quota_message(project_number), details=[detail])
