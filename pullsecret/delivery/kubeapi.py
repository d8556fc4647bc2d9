"""The Kubernetes calls the adapter makes, through the official client's ApiClient.

`kubernetes.client.CoreV1Api` builds about 250 pydantic model classes when imported (0.4-1 s of CPU on
the first event of every instance), `AdmissionregistrationV1Api` dozens more, to validate the arguments of
their methods. The adapter calls seven of them (the doctor an eighth) with plain dicts and reads raw JSON
(`_preload_content=False`). This class offers those with the same signatures and answers, built on
the same public machinery the generated methods use (`ApiClient.param_serialize`, `ApiClient.call_api`,
`ApiException.from_response`): same transport, TLS, bearer-token hook and errors, without the imports.
"""

from __future__ import annotations

from typing import Any

POLICY_PATH = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}"
BINDING_PATH = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{name}"
COLLECTION_PATH = "/api/v1/namespaces/{namespace}/secrets"
ITEM_PATH = "/api/v1/namespaces/{namespace}/secrets/{name}"
ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"  # the doctor's question (doctor_checks)
SELF_REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"  # who the caller is (kubewrites.ensure_guarded)
# Keyword arguments of the generated methods -> their query parameter (core_v1_api.py *_serialize).
_QUERY = {
    "pretty": "pretty",
    "dry_run": "dryRun",
    "field_manager": "fieldManager",
    "field_validation": "fieldValidation",
    "force": "force",
    "grace_period_seconds": "gracePeriodSeconds",
    "propagation_policy": "propagationPolicy",
    "orphan_dependents": "orphanDependents",
}
_OPTIONS = {"_content_type", "_preload_content", "_request_timeout", "_headers"}


class SecretsApi:
    """`CoreV1Api`'s namespaced Secret methods and `AdmissionregistrationV1Api`'s two policy reads, answering
    raw responses like `_preload_content=False`."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    def read_namespaced_secret(self, name: str, namespace: str, **options: Any) -> Any:
        return self._send("GET", ITEM_PATH, {"namespace": namespace, "name": name}, None, options)

    def create_namespaced_secret(self, namespace: str, body: Any, **options: Any) -> Any:
        return self._send("POST", COLLECTION_PATH, {"namespace": namespace}, body, options)

    def patch_namespaced_secret(self, name: str, namespace: str, body: Any, **options: Any) -> Any:
        return self._send("PATCH", ITEM_PATH, {"namespace": namespace, "name": name}, body, options)

    def delete_namespaced_secret(self, name: str, namespace: str, body: Any = None, **options: Any) -> Any:
        return self._send("DELETE", ITEM_PATH, {"namespace": namespace, "name": name}, body, options)

    def read_validating_admission_policy(self, name: str, **options: Any) -> Any:
        return self._send("GET", POLICY_PATH, {"name": name}, None, options)

    def read_validating_admission_policy_binding(self, name: str, **options: Any) -> Any:
        return self._send("GET", BINDING_PATH, {"name": name}, None, options)

    def create_self_subject_access_review(self, body: Any, **options: Any) -> Any:
        """AuthorizationV1Api's method of the same name: may the caller do what `body` asks (writes nothing)."""
        return self._send("POST", ACCESS_REVIEW_PATH, {}, body, options)

    def create_self_subject_review(self, body: Any, **options: Any) -> Any:
        """AuthenticationV1Api's method of the same name: the caller's user as the API server sees it."""
        return self._send("POST", SELF_REVIEW_PATH, {}, body, options)

    def _send(self, method: str, path: str, path_params: dict[str, str], body: Any, options: dict[str, Any]) -> Any:
        from kubernetes.client.exceptions import ApiException

        unknown = set(options) - set(_QUERY) - _OPTIONS
        if unknown:
            raise TypeError(f"unsupported arguments for {method} {path}: {sorted(unknown)}")
        if options.get("_preload_content", False):
            raise TypeError("SecretsApi answers raw responses only (_preload_content=False)")
        query = [(_QUERY[key], value) for key, value in options.items() if key in _QUERY and value is not None]
        headers: dict[str, Any] = {"Accept": "application/json", **(options.get("_headers") or {})}
        if body is not None:
            headers["Content-Type"] = options.get("_content_type") or (
                "application/json-patch+json" if method == "PATCH" and isinstance(body, list) else "application/json"
            )
        request = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            path_params=path_params,
            query_params=query,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api_client.call_api(*request, _request_timeout=options.get("_request_timeout"))
        if not 200 <= response.status <= 299:
            response.read()  # as the generated methods do before raising (ApiClient._call_with_legacy_options)
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response
