"""The emulator: routing, the admin API and one request's path through auth to the verbs."""

from __future__ import annotations

import collections
import copy
import json
import socket
import threading
import urllib.parse
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from emulators.faults import FaultBook, ServiceControl
from emulators.kubernetes.admission import POLICY_KINDS
from emulators.kubernetes.base import Json
from emulators.kubernetes.discovery import ADMISSION_GROUP, AUTHENTICATION_GROUP, AUTHORIZATION_GROUP, GROUPS, discovery
from emulators.kubernetes.http import Hangup, HttpsServing
from emulators.kubernetes.reads import POLICY_RESOURCES, Request
from emulators.kubernetes.status import ApiError, fault_error, forbidden, unauthorized
from emulators.kubernetes.tokens import AUTH_DELEGATOR, ReviewEndpoint, ServiceAccountTokens, service_account_user
from emulators.kubernetes.verbs import Verbs
from emulators.routes import AdminCall, AdminRouter, Answer, Handler
from emulators.tlsutil import TLSMaterial

JOURNAL_SIZE = 2000  # answers kept per emulator, for tests that check what a user was shown


class KubernetesEmulator(Verbs, HttpsServing):
    """A faithful-enough kube-apiserver for core/v1 Namespaces and Secrets, over HTTPS."""

    service = "kubernetes"

    def __init__(self, book: FaultBook, *, authenticate: Callable[[str], str | None] | None = None) -> None:
        self.book = book
        self.control = ServiceControl(book, self.service)
        self._authenticate = authenticate
        self._lock = threading.RLock()
        self._rv = 0
        self._namespaces: dict[str, Json] = {}
        self._secrets: dict[tuple[str, str], Json] = {}
        self._rbac: dict[tuple[str, str, str], Json] = {}
        self._granted = 0
        self._policies: dict[str, Json] = {}
        self._policy_bindings: dict[str, Json] = {}
        self._tokens: dict[str, str] = {}
        # ServiceAccounts, TokenRequest and TokenReview (emulators/kubernetes/tokens.py).
        self.service_accounts = ServiceAccountTokens()
        self._journal: collections.deque[Json] = collections.deque(maxlen=JOURNAL_SIZE)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tls: TLSMaterial | None = None
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        self._admin = AdminRouter(self._admin_table())

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "resourceVersion": str(self._rv),
                "namespaces": sorted(self._namespaces),
                "secrets": [copy.deepcopy(self._secrets[k]) for k in sorted(self._secrets)],
                "rbac": self.rbac_state(),
                "validatingadmissionpolicies": sorted(self._policies),
                "validatingadmissionpolicybindings": sorted(self._policy_bindings),
                "tokens": len(self._tokens),
                **self.service_accounts.state(),
            }

    def reset(self) -> None:
        """Forget namespaces, Secrets, RBAC and static tokens; resourceVersions keep growing."""
        with self._lock:
            self._namespaces.clear()
            self._secrets.clear()
            self._rbac.clear()
            self._policies.clear()
            self._policy_bindings.clear()
            self._tokens.clear()
            self._journal.clear()
            self.service_accounts.reset()
            self._bump()

    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Serve an admin route (path relative to /kubernetes); see the package docstring."""
        path = path.split("?", maxsplit=1)[0]
        try:
            answer = self._admin.dispatch(method, path, body if body is not None else {})
        except ApiError as exc:
            return 400, {"error": exc.message}
        except (ValueError, TypeError, AttributeError) as exc:
            return 400, {"error": str(exc)}
        if answer is None:
            return 404, {"error": f"no admin route {method} /kubernetes/{'/'.join(p for p in path.split('/') if p)}"}
        return answer

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/state"): lambda _: (200, self.state()),
            ("POST", "/reset"): self._admin_reset,
            ("PUT", "/rbac"): self._admin_grant,
            ("PUT", "/manifests"): self._admin_manifests,
            ("DELETE", "/rbac"): self._admin_revoke,
            ("PUT", "/tokens"): self._admin_token,
            ("PUT", "/namespaces/{ns}/serviceaccounts/{name}"): lambda call: (
                200,
                self.service_accounts.add_service_account(call.params["ns"], call.params["name"]),
            ),
            ("DELETE", "/namespaces/{ns}/serviceaccounts/{name}"): self._admin_delete_service_account,
            ("POST", "/clock"): self._admin_clock,
            ("PUT", "/namespaces/{ns}"): lambda call: (
                200,
                self.add_namespace(call.params["ns"], call.body.get("labels")),
            ),
            ("DELETE", "/namespaces/{ns}"): self._admin_delete_namespace,
            ("GET", "/namespaces/{ns}/secrets/{name}"): self._admin_get_secret,
            ("PUT", "/namespaces/{ns}/secrets/{name}"): self._admin_put_secret,
            ("DELETE", "/namespaces/{ns}/secrets/{name}"): self._admin_delete_secret,
        }

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, {}

    def _admin_grant(self, call: AdminCall) -> Answer:
        body = call.body
        verbs = body.get("verbs", ["*"])
        resources = body.get("resources", ["*"])
        if not isinstance(body.get("identity"), str) or not isinstance(verbs, list):
            return 400, {"error": "rbac needs identity (string) and verbs (list)"}
        self.grant(body["identity"], str(body.get("namespace", "*")), verbs, resources)
        return 200, self.state()["rbac"]

    def _admin_manifests(self, call: AdminCall) -> Answer:
        documents = call.body.get("documents")
        if not isinstance(documents, list):
            return 400, {"error": "manifests needs documents (a list of RBAC and admission policy objects)"}
        self.apply_manifests(documents)
        return 200, self.state()

    def _admin_revoke(self, call: AdminCall) -> Answer:
        self.revoke(str(call.body.get("identity", "")))
        return 200, self.state()["rbac"]

    def _admin_token(self, call: AdminCall) -> Answer:
        body = call.body
        if not isinstance(body.get("token"), str) or not isinstance(body.get("identity"), str):
            return 400, {"error": "tokens needs token and identity (strings)"}
        self.add_token(body["token"], body["identity"])
        return 200, {}

    def _admin_delete_service_account(self, call: AdminCall) -> Answer:
        ns, name = call.params["ns"], call.params["name"]
        if self.service_accounts.delete_service_account(ns, name):
            return 200, {}
        return 404, {"error": f"serviceaccount {ns}/{name} not found"}

    def _admin_clock(self, call: AdminCall) -> Answer:
        seconds = call.body.get("advance_s")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
            return 400, {"error": 'clock needs {"advance_s": seconds >= 0}'}
        self.service_accounts.advance(float(seconds))
        return 200, self.service_accounts.state()

    def reviewer(self, namespace: str, name: str) -> ReviewEndpoint:
        """A delegating server's way to TokenReview here (a gateway, Authorino): its ServiceAccount, bound to
        system:auth-delegator, and a static bearer token for it that stays the same across reset(). Call it again
        after reset() (it re-creates the account and the binding)."""
        user = service_account_user(namespace, name)
        with self._lock:
            known = namespace in self._namespaces
        if not known:
            self.add_namespace(namespace)
        self.service_accounts.add_service_account(namespace, name)
        self.put_rbac(AUTH_DELEGATOR)
        self.put_rbac(
            {
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{name}:auth-delegator"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "system:auth-delegator",
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
        )
        token = self.service_accounts.reviewer_token(user)
        self.add_token(token, user)
        return ReviewEndpoint(url=f"https://{self.address}", ca_pem=self.ca_pem, token=token, user=user)

    def _admin_delete_namespace(self, call: AdminCall) -> Answer:
        if self.delete_namespace(call.params["ns"]):
            return 200, {}
        return 404, {"error": f"namespace {call.params['ns']} not found"}

    def _admin_get_secret(self, call: AdminCall) -> Answer:
        ns, name = call.params["ns"], call.params["name"]
        found = self.get_secret(ns, name)
        return (200, found) if found else (404, {"error": f"secret {ns}/{name} not found"})

    def _admin_put_secret(self, call: AdminCall) -> Answer:
        ns, name, body = call.params["ns"], call.params["name"], call.body
        manager = body.get("manager") if "object" in body else None
        raw = copy.deepcopy(body.get("object", body))
        if not isinstance(raw, dict):
            return 400, {"error": "body must be a Secret object"}
        meta = raw.setdefault("metadata", {})
        meta["name"], meta["namespace"] = name, ns
        return 200, self.put_secret(raw, manager=manager)

    def _admin_delete_secret(self, call: AdminCall) -> Answer:
        ns, name = call.params["ns"], call.params["name"]
        if self.delete_secret(ns, name):
            return 200, {}
        return 404, {"error": f"secret {ns}/{name} not found"}

    @staticmethod
    def route(method: str, path: str) -> tuple[str, str, str, str]:
        """(verb, resource, namespace, name) of an API path; resource "" when unknown."""
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        is_get = method == "GET"
        if parts == ["version"]:
            return "get", "version", "", ""
        core_discovery = parts in (["api"], ["api", "v1"], ["apis"])
        group_discovery = parts[:1] == ["apis"] and len(parts) in (2, 3) and parts[1] in GROUPS
        if is_get and (core_discovery or group_discovery):
            return "get", "discovery", "", ""
        if parts == ["apis", AUTHORIZATION_GROUP, "v1", "selfsubjectaccessreviews"] and method == "POST":
            return "create", "selfsubjectaccessreviews", "", ""
        if parts == ["apis", AUTHENTICATION_GROUP, "v1", "selfsubjectreviews"] and method == "POST":
            return "create", "selfsubjectreviews", "", ""
        if parts == ["apis", AUTHENTICATION_GROUP, "v1", "tokenreviews"] and method == "POST":
            return "create", "tokenreviews", "", ""
        if parts[:3] == ["apis", ADMISSION_GROUP, "v1"] and len(parts) in (4, 5) and parts[3] in POLICY_RESOURCES:
            if method != "GET":
                return "", parts[3], "", ""  # read-only here: the admin API seeds them
            return ("get", parts[3], "", parts[4]) if len(parts) == 5 else ("list", parts[3], "", "")
        if parts[:2] != ["api", "v1"]:
            return "", "", "", ""
        rest = parts[2:]
        collection_verbs = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}
        item_verbs = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
        if rest == ["secrets"] and is_get:
            return "list", "secrets", "", ""
        if rest == ["namespaces"] and is_get:
            return "list", "namespaces", "", ""
        if len(rest) == 2 and rest[0] == "namespaces" and is_get:
            return "get", "namespaces", rest[1], rest[1]
        if len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "secrets":
            return collection_verbs.get(method, ""), "secrets", rest[1], ""
        if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "serviceaccounts":
            return ("get" if is_get else ""), "serviceaccounts", rest[1], rest[3]
        if len(rest) == 5 and rest[0] == "namespaces" and rest[2:5:2] == ["serviceaccounts", "token"]:
            return ("create" if method == "POST" else ""), "serviceaccounts/token", rest[1], rest[3]
        if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "secrets":
            return item_verbs.get(method, ""), "secrets", rest[1], rest[3]
        return "", "", "", ""

    def serve(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        """Answer one API request: (status code, JSON body, extra headers); raises Hangup."""
        verb, resource, namespace, name = self.route(method, path)
        if verb == "list" and urllib.parse.parse_qs(query).get("watch", [""])[-1] in ("true", "1"):
            verb = "watch"  # RBAC authorizes a watch as its own verb (RequestInfoFactory)
        call = f"{verb or method.lower()}.{resource or 'unknown'}"
        if "dryRun=" in query:
            call += ".dryrun"  # counted apart: a dry run writes nothing (the tests count writes by name)
        fault = self.control.enter(call)
        if fault in ("reset", "timeout"):
            raise Hangup(fault)
        if fault == "429-text":
            return 429, b"Too many requests, please try again later.\n", {"Retry-After": "1"}
        user: str | None = None
        try:
            if fault is not None:
                raise fault_error(fault)
            anonymous_ok = resource == "version"
            user = self.identify(headers) or self._service_account_user(headers)
            if user is None and not (anonymous_ok and "authorization" not in headers):
                raise unauthorized()
            if not verb or not resource:
                if resource or (path.startswith("/api/v1/") and self.route("GET", path)[1]):
                    raise ApiError(
                        405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
                    )
                raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
            accept = headers.get("accept", "application/json")
            if not any(t in accept for t in ("json", "*/*")) and accept.strip():
                raise ApiError(
                    406,
                    "NotAcceptable",
                    "the server was unable to respond with a content type that the client supports",
                    {},
                )
            req = Request(
                method,
                verb,
                resource,
                namespace,
                name,
                urllib.parse.parse_qs(query, keep_blank_values=True),
                headers,
                body,
                user or "",
            )
            if resource in ("version", "discovery"):
                return 200, discovery(path, self.address), {}
            if resource == "selfsubjectreviews":
                # Any authenticated user may ask who it is (system:basic-user grants create on selfsubjectreviews).
                answer = self._self_review(user or "")
                self._record(user, call, 201, answer)
                return 201, answer, {}
            if resource == "selfsubjectaccessreviews":
                # Any authenticated user may ask about itself (bootstrap ClusterRole system:basic-user).
                return 201, self._access_review(user or "", body), {}
            group = {"tokenreviews": AUTHENTICATION_GROUP}.get(
                resource, ADMISSION_GROUP if resource in POLICY_RESOURCES else ""
            )
            if not self.authorize(user or "", verb, resource, namespace, name=name, group=group):
                raise forbidden(user or "system:anonymous", verb, resource, name, namespace, group=group)
            code, payload, extra = self._dispatch_tokens(req) or self._dispatch(req)
            self._record(user, call, code, payload)
            return code, payload, extra
        except ApiError as exc:
            self._record(user, call, exc.code, exc.status())
            return exc.code, exc.status(), exc.headers

    def _service_account_user(self, headers: dict[str, str]) -> str | None:
        """The ServiceAccount behind a bound token minted here, when its audiences include the API server's
        (pkg/serviceaccount/jwt.go: no requested audiences means the server's own)."""
        scheme, _, token = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.service_accounts.authenticate(token.strip())[0]

    def _dispatch_tokens(self, req: Request) -> tuple[int, Any, dict[str, str]] | None:
        """ServiceAccounts, TokenRequest and TokenReview (emulators/kubernetes/tokens.py); None for the rest."""
        if req.resource == "serviceaccounts":
            return 200, self.service_accounts.get_service_account(req.namespace, req.name), {}
        if req.resource == "serviceaccounts/token":
            return 201, self.service_accounts.token_request(req.namespace, req.name, req.body), {}
        if req.resource == "tokenreviews":
            return 201, self.service_accounts.token_review(req.body), {}
        return None

    def _record(self, user: str | None, call: str, code: int, payload: Any) -> None:
        if user is not None:
            with self._lock:
                self._journal.append({"user": user, "call": call, "code": code, "body": copy.deepcopy(payload)})

    def answers(self, user: str) -> list[Json]:
        """What the API answered `user`, newest last (bounded): {call, code, body}; tests assert what it saw."""
        with self._lock:
            return [{k: v for k, v in e.items() if k != "user"} for e in self._journal if e["user"] == user]

    def apply_manifests(self, documents: list[Json]) -> None:
        """Install RBAC objects and admission policies (e.g. emulators.kubernetes.manifests.render())."""
        for doc in documents:
            if doc.get("kind") in self.RBAC_KINDS:
                self.put_rbac(doc)
            elif doc.get("kind") == "ServiceAccount":
                meta = doc.get("metadata") or {}
                self.service_accounts.add_service_account(str(meta.get("namespace", "")), str(meta.get("name", "")))
            elif doc.get("kind") in POLICY_KINDS:
                self.put_policy(doc)
            else:
                raise ValueError(f"cannot install a {doc.get('kind')!r} here")

    @staticmethod
    def _self_review(user: str) -> Json:
        """SelfSubjectReview (authentication.k8s.io/v1, GA in 1.28): the caller's user as the API server authenticated
        it, in `status.userInfo` (username, groups; `kubectl auth whoami`). Kubernetes API reference, SelfSubjectReview
        v1: https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/self-subject-review-v1/; the
        bootstrap ClusterRole system:basic-user lets every authenticated user create one
        (https://kubernetes.io/docs/reference/access-authn-authz/rbac/#discovery-roles). The request body is not
        read: the review has no spec, only the answer's status.
        """
        return {
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "status": {"userInfo": {"username": user, "groups": ["system:authenticated"]}},
        }

    def _access_review(self, user: str, body: bytes) -> Json:
        """SelfSubjectAccessReview (authorization.k8s.io/v1): RBAC's answer for the caller, as `kubectl auth can-i`.

        The spec comes back with `status.allowed` (https://kubernetes.io/docs/reference/kubernetes-api/
        authorization-resources/self-subject-access-review-v1/); any authenticated user may ask about itself
        (bootstrap ClusterRole system:basic-user, https://kubernetes.io/docs/reference/access-authn-authz/rbac/).
        """
        if body.startswith(PROTOBUF_MAGIC):  # kubectl sends built-in types as protobuf
            review: Json = {"spec": {"resourceAttributes": _review_attributes(body)}}
        else:
            try:
                review = json.loads(body or b"{}")
            except ValueError as exc:
                raise ApiError(400, "BadRequest", f"couldn't get version/kind; json parse error: {exc}") from None
        attrs = ((review or {}).get("spec") or {}).get("resourceAttributes") or {}
        allowed = self.authorize(
            user,
            str(attrs.get("verb", "")),
            str(attrs.get("resource", "")),
            str(attrs.get("namespace", "")),
            name=str(attrs.get("name", "")),
            group=str(attrs.get("group", "")),
        )
        status: Json = {"allowed": allowed}
        if allowed:
            status["reason"] = "RBAC: allowed by the emulator's RBAC objects"
        return {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": review.get("spec") or {},
            "status": status,
        }


# k8s.io/apimachinery/pkg/runtime/serializer/protobuf: "k8s\x00" + runtime.Unknown{typeMeta=1, raw=2, ...}.
PROTOBUF_MAGIC = b"k8s\x00"
# authorization/v1 generated.proto: SelfSubjectAccessReview{spec=2}, spec{resourceAttributes=1},
# ResourceAttributes{namespace=1, verb=2, group=3, version=4, resource=5, subresource=6, name=7}.
_ATTRIBUTE_FIELDS = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}


def _fields(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one protobuf message (the last of each number); others skipped."""
    out: dict[int, bytes] = {}
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    while pos < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            varint()
        elif wire == 2:
            size = varint()
            out[number] = data[pos : pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ApiError(400, "BadRequest", "unsupported protobuf wire type")
    return out


def _review_attributes(body: bytes) -> Json:
    try:
        raw = _fields(body[len(PROTOBUF_MAGIC) :]).get(2, b"")
        spec = _fields(raw).get(2, b"")
        attrs = _fields(_fields(spec).get(1, b""))
    except IndexError:
        raise ApiError(400, "BadRequest", "truncated protobuf body") from None
    return {name: attrs[number].decode() for number, name in _ATTRIBUTE_FIELDS.items() if number in attrs}
