"""The Kubernetes calls the adapter makes, through the official client's REST layer.

`kubernetes.client.CoreV1Api` builds about 250 pydantic model classes when imported (0.4-1 s of CPU on
the first event of every instance), `AdmissionregistrationV1Api` dozens more, to validate the arguments of
their methods. The adapter calls seven of them (the doctor an eighth) with plain dicts and reads raw JSON
(`_preload_content=False`). This class offers those with the same signatures and answers, on the transport
the generated methods use (`kubernetes.client.rest.RESTClientObject` built from a `Configuration`: TLS, pool,
the bearer-token hook through `Configuration.auth_settings`, `ApiException.from_response` for errors) and the
request `ApiClient.param_serialize` would build (path parameters quoted, query values as it formats them, its
User-Agent). `ApiClient` itself is not imported: it loads pydantic and `ApiResponse` (about a third of direct
mode's first-event imports) to deserialize answers this class keeps raw.

Importing this module loads `kubernetes.client` without the rest of the `kubernetes` package (`light_client`):
its `__init__` imports config, dynamic, watch, stream, utils, leaderelection and informer (jsonschema,
kubernetes_validate, the kube config loader: 0.65 of the 2.30 G instructions `import main` took), none of which
the adapter uses, and `ApiClient` imports every model class to deserialize answers this class keeps raw.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any
from urllib.parse import quote

from pullsecret.outbound import deadline_io
from pullsecret.retrying import Deadline


def light_client() -> None:
    """Make `import kubernetes.client...` skip the `kubernetes` package's `__init__` and load
    `kubernetes.client.models` on first use; does nothing when `kubernetes` is already imported.

    The package module stands in with the real package's `__path__`, so any submodule (`kubernetes.config`,
    `from kubernetes import client`) still imports on request; only attributes never imported are missing.
    """
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.submodule_search_locations is None:
        return
    package = types.ModuleType("kubernetes")
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__spec__ = spec
    sys.modules["kubernetes"] = package
    models = importlib.util.find_spec("kubernetes.client.models")  # imports kubernetes.client (lazy itself)
    if models is None or models.loader is None or "kubernetes.client.models" in sys.modules:
        return
    loader = importlib.util.LazyLoader(models.loader)
    models.loader = loader
    module = importlib.util.module_from_spec(models)
    sys.modules["kubernetes.client.models"] = module
    loader.exec_module(module)
    client: Any = sys.modules["kubernetes.client"]
    client.models = module  # as an import binds a submodule on its package


light_client()

from kubernetes.client import __version__ as _CLIENT_VERSION  # noqa: E402  (after light_client)
from kubernetes.client.exceptions import ApiException  # noqa: E402

__all__ = ["ApiException", "SecretsApi", "light_client"]

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
USER_AGENT = f"OpenAPI-Generator/{_CLIENT_VERSION}/python"  # what ApiClient sends


def _headers(method: str, body: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The request's headers before its credential: what the generated methods send."""
    headers: dict[str, Any] = {"Accept": "application/json", "User-Agent": USER_AGENT}
    headers.update(options.get("_headers") or {})
    if body is not None:
        headers["Content-Type"] = options.get("_content_type") or (
            "application/json-patch+json" if method == "PATCH" and isinstance(body, list) else "application/json"
        )
    return headers


def _query_value(value: Any) -> str:
    """A query value as ApiClient.parameters_to_url_query formats a scalar (booleans lower-case), quoted."""
    return quote(str(value).lower() if isinstance(value, bool) else str(value))


class SecretsApi:
    """`CoreV1Api`'s namespaced Secret methods and `AdmissionregistrationV1Api`'s two policy reads, answering
    raw responses like `_preload_content=False`."""

    def __init__(self, configuration: Any) -> None:
        from kubernetes.client.rest import RESTClientObject

        self.configuration = configuration  # a kubernetes.client.Configuration: host, TLS, pool, token hook
        self._rest = RESTClientObject(configuration)
        deadline_io.bound(self._rest.pool_manager)  # `_request_timeout` bounds a whole call (`_send`)

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
        unknown = set(options) - set(_QUERY) - _OPTIONS
        if unknown:
            raise TypeError(f"unsupported arguments for {method} {path}: {sorted(unknown)}")
        if options.get("_preload_content", False):
            raise TypeError("SecretsApi answers raw responses only (_preload_content=False)")
        asked = [(_QUERY[key], value) for key, value in options.items() if key in _QUERY and value is not None]
        query = "&".join(f"{key}={_query_value(value)}" for key, value in asked)
        headers = _headers(method, body, options)
        for auth in self.configuration.auth_settings().values():  # BearerToken: runs the refresh hook
            headers[auth["key"]] = auth["value"]
        safe = self.configuration.safe_chars_for_path_param
        for name, value in path_params.items():
            path = path.replace(f"{{{name}}}", quote(str(value), safe=safe))
        url = self.configuration.host + path + (f"?{query}" if query else "")
        timeout = options.get("_request_timeout")
        # A number bounds the whole call, the answer's body included, read now or later (deadline_io).
        with deadline_io.within(Deadline(timeout) if isinstance(timeout, (int, float)) else None):
            response = self._rest.request(  # type: ignore[no-untyped-call]
                method, url, headers=headers, body=body, _request_timeout=timeout
            )
        if not 200 <= response.status <= 299:
            response.read()  # as the generated methods do before raising (ApiClient._call_with_legacy_options)
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response
