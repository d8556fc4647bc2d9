"""Delegated authentication: a server asks a Kubernetes API server's TokenReview who a bearer token belongs to.

As Authorino's `kubernetesTokenReview` method does (authorino pkg/evaluators/identity/kubernetes_auth.go: a
TokenReview with the configured audiences, under Authorino's own ServiceAccount credentials, the request's user
taken from `status.user`) and as the Pull Secret Service's design does (DDR §3.4): over HTTPS, trusting the API
server's CA, with the reviewing server's own bearer token (`ReviewEndpoint`, from `KubernetesEmulator.reviewer`).
A review the API server cannot answer (unreachable, not 201) is an error, which a gateway turns into a denial.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from dataclasses import dataclass

from emulators.kubernetes.tokens import ReviewEndpoint

TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


@dataclass(frozen=True)
class Review:
    """What TokenReview said of one token; repr() carries no token."""

    authenticated: bool
    username: str = ""
    audiences: tuple[str, ...] = ()
    error: str = ""


class TokenReviewer:
    """Reviews tokens at one API server for fixed audiences; thread-safe (one HTTPS request per review)."""

    def __init__(self, endpoint: ReviewEndpoint, *, timeout_s: float = 5.0) -> None:
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        self._context = ssl.create_default_context(cadata=endpoint.ca_pem.decode("ascii"))

    def __repr__(self) -> str:
        return f"TokenReviewer({self.endpoint!r})"

    def review(self, token: str, audiences: tuple[str, ...]) -> Review:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": list(audiences)},
        }
        host = urllib.parse.urlsplit(self.endpoint.url).netloc
        connection = http.client.HTTPSConnection(host, timeout=self._timeout_s, context=self._context)
        headers = {
            "Authorization": f"Bearer {self.endpoint.token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        try:
            connection.request("POST", TOKENREVIEWS, body=json.dumps(body), headers=headers)
            answer = connection.getresponse()
            payload = answer.read()
            if answer.status != 201:
                return Review(False, error=f"token review answered {answer.status}")
            status = (json.loads(payload) or {}).get("status") or {}
        except (OSError, ValueError, http.client.HTTPException) as exc:
            return Review(False, error=f"token review failed: {type(exc).__name__}")
        finally:
            connection.close()
        user = status.get("user") or {}
        return Review(
            bool(status.get("authenticated")),
            str(user.get("username") or ""),
            tuple(str(a) for a in status.get("audiences") or ()),
            str(status.get("error") or ""),
        )
