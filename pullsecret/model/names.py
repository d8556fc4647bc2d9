"""Every name the adapter builds or parses: Secret Manager resources and versions, GCP project ids, Kubernetes names.

Pure. One place for each format, so a name is built the same way by the reconcile, the store, the delivery, the
rotation and the operator tools, and a name that arrives from outside is checked against the same rule everywhere.
"""

from __future__ import annotations

import re

# A GCP project id (https://cloud.google.com/resource-manager/docs/creating-managing-projects: 6-30 characters,
# lowercase letters, digits and hyphens, starting with a letter, not ending with a hyphen).
PROJECT_ID_RE = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
# A Secret Manager secret id (https://cloud.google.com/secret-manager/docs/reference/rest/v1/projects.secrets/create).
SECRET_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
# A Kubernetes namespace name: an RFC 1123 label (63 characters at most, checked beside it).
NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A Kubernetes object name such as a Secret's: an RFC 1123 DNS subdomain (253 characters at most).
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# PULL_SECRET_SOURCE: one secret version, by number or `latest`.
SOURCE_VERSION_RE = re.compile(r"^projects/([^/]+)/secrets/([A-Za-z0-9_-]{1,255})/versions/(latest|[1-9][0-9]*)$")


def project_parent(project: str) -> str:
    """`projects/P`, the parent of a project's secrets."""
    return f"projects/{project}"


def secret_name(project: str, secret_id: str) -> str:
    """`projects/P/secrets/ID`."""
    return f"projects/{project}/secrets/{secret_id}"


def version_name(secret: str, version: int | str) -> str:
    """`projects/P/secrets/ID/versions/N` (or `latest`) of the secret named `secret`."""
    return f"{secret}/versions/{version}"


def latest_of(secret: str) -> str:
    """The `latest` alias of the secret named `secret`."""
    return version_name(secret, "latest")


def secret_of(version: str) -> str:
    """`projects/P/secrets/ID` of a version's name (a secret's name is returned as it is)."""
    return version.rsplit("/versions/", 1)[0]


def project_and_id(secret: str) -> tuple[str, str]:
    """(P, ID) of `projects/P/secrets/ID` (or of one of its versions)."""
    parts = secret_of(secret).split("/")
    return parts[1], parts[-1]


def version_id(version: str | None) -> str:
    """The last segment of a version's name (`7`, `latest`), or "" for None."""
    return version.rsplit("/", 1)[-1] if version else ""


def version_number(version: str | None) -> int:
    """The number of a version's name; 0 for `latest`, None or anything that is not a number."""
    tail = version_id(version)
    return int(tail) if tail.isascii() and tail.isdigit() else 0


def namespace_valid(namespace: str) -> bool:
    """A Kubernetes namespace name (RFC 1123 label, 63 characters at most)."""
    return len(namespace) <= 63 and NAMESPACE_RE.fullmatch(namespace) is not None


# A cluster id safe in a name, a search expression or a URL path segment (the rotation's keyset cursor, the doctor).
SAFE_CLUSTER_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def cluster_id_safe(cluster_id: object) -> bool:
    """A cluster id of SAFE_CLUSTER_ID_RE's letters, digits, `_`, `.` and `-` (128 characters at most)."""
    return isinstance(cluster_id, str) and SAFE_CLUSTER_ID_RE.fullmatch(cluster_id) is not None


def project_id_valid(project: object) -> bool:
    """A GCP project id by PROJECT_ID_RE."""
    return isinstance(project, str) and PROJECT_ID_RE.fullmatch(project) is not None


# A GKE cluster's full name (MANAGEMENT_CLUSTER, the placement's managementCluster).
GKE_CLUSTER_RE = re.compile(r"^projects/([^/]+)/locations/([^/]+)/clusters/([^/]+)$")


def cluster_allowed(name: str, allowed: tuple[str, ...]) -> bool:
    """`name` matches one ALLOWED_MANAGEMENT_CLUSTERS entry: segment by segment, `*` any text within one."""
    for pattern in allowed:
        expression = "/".join(re.escape(part).replace(r"\*", "[^/]*") for part in pattern.split("/"))
        if re.fullmatch(expression, name):
            return True
    return False


_KUBE_LABEL_BAD = re.compile(r"[^A-Za-z0-9_.-]")


def kube_label_value(value: str) -> str:
    """Sanitise to a Kubernetes label value: <= 63 chars, alphanumeric at both ends."""
    cleaned = _KUBE_LABEL_BAD.sub("-", value)[:63]
    return cleaned.strip("-_.")
