"""The API itself: list and read clusters, list and write adapter statuses, as hyperfleet-api answers them.

Each answer comes with whether it is knowingly off-spec (a seeded broken cluster, a raw override, the
undocumented 204 of a discarded status write, a 401/403 where 0.1.0 documents none), so that the emulator
files its response violations as expected.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from emulators.httpbase import Reply, Request
from emulators.hyperfleet.answers import (
    PROBLEMS,
    database_unavailable,
    method_not_allowed,
    no_route,
    parse_time,
    problem,
    rfc3339,
)
from emulators.hyperfleet.auth import ApiAuth
from emulators.hyperfleet.rules import convention_breaks, status_rule_errors
from emulators.hyperfleet.spec import BASE, CLUSTER_RE, STATUSES_RE, Violations
from emulators.hyperfleet.store import ClusterStore
from emulators.hyperfleet.tenancy import SYSTEM_WRITE_DENIED, Tenancy

_Handler = Callable[[Request, bool], tuple[Reply, bool]]

_SEARCH_TERM = re.compile(r"^\s*(?P<field>[A-Za-z0-9_.\-]+)\s*(?P<op>=|>)\s*'(?P<value>[^']*)'\s*$")
# hyperfleet-api pkg/db/sql_helpers.go (ArgsToOrder): "field" or "field asc|desc"; pkg/handlers/list_params.go:
# without `order` the server sorts by "created_time desc".
_ORDER = re.compile(r"^(?P<field>[a-z_][a-z0-9_]*)(\s+(?P<direction>asc|desc))?$")


class ClusterApi:
    """The API's routes over the store, behind the API's authentication."""

    def __init__(self, *, store: ClusterStore, auth: ApiAuth, conventions: Violations) -> None:
        self.store = store
        self.auth = auth
        # The tenant middleware (emulators/hyperfleet/tenancy.py), off as in the API's default configuration.
        self.tenancy: Tenancy | None = None
        # Reports the API accepts but that break a convention: masked data keys, reasons outside the vocabulary.
        self.conventions = conventions
        # The database connection is lost: every call past authentication is a 503 HYPERFLEET-SVC-001.
        self.database_lost = False

    def serve(self, request: Request) -> tuple[Reply, bool]:
        """The server's answer and whether it is knowingly off-spec."""
        path = request.path
        if self.auth.gateway_denies:
            # hyperfleet-infra 5da6143 helm/hyperfleet-gateway (configmap.yaml: Envoy's ext_authz filter runs
            # before the router, failure_mode_allow: false; authconfig.yaml: Authorino decides): a denial is
            # Envoy's and Authorino's answer, not the API's: no problem+json, no HyperFleet code.
            return Reply(403, b"", {}), True
        if not path.startswith(BASE + "/"):
            return no_route(path), False
        route = self._route(path)
        if route is None:
            return no_route(path), False
        methods, handler = route
        if self.store.status_method == "PUT" and request.method not in methods:
            # hyperfleet-api 541f6b4 cmd/hyperfleet-api/server/router.go (stdlib net/http since HYPERFLEET-1372;
            # WithNotFoundHandler rewrites only "no pattern matched"): a known path with the wrong method gets
            # net/http's own 405 before any middleware: plain text, `Allow` the sorted methods (HEAD with GET).
            reply = Reply.text(405, "Method Not Allowed\n")
            reply.headers["Allow"] = ", ".join(sorted(methods))
            reply.headers["X-Content-Type-Options"] = "nosniff"
            return reply, True
        refused = self.auth.failure(request)
        if refused is not None and refused[0] == 401:
            detail = "Account authentication could not be verified"
            kind = (
                PROBLEMS[401][0],
                "Invalid Token" if refused[1] == "HYPERFLEET-AUT-003" else PROBLEMS[401][1],
                refused[1],
            )
            return problem(401, detail, path, kind=kind), self.store.status_method == "POST"
        off_spec_403 = self.store.status_method == "POST"
        if refused is not None:
            # Core 1.0.25 documents 403 only through its `default` problem answer; 0.1.0 documents none.
            return problem(403, "You do not have permission to perform this action", path), off_spec_403
        system = False
        if self.tenancy is not None:
            resolved = self.tenancy.resolve(request)
            if isinstance(resolved, str):
                return problem(403, resolved, path), off_spec_403
            system = resolved
        if self.database_lost:
            return database_unavailable(path), self.store.status_method == "POST"  # 0.1.0 documents no 503
        return handler(request, system)

    def _route(self, path: str) -> tuple[frozenset[str], _Handler] | None:
        """The route's methods (as hyperfleet-api 541f6b4 cmd/hyperfleet-api/server/routes_entities.go registers
        them, HEAD with GET as net/http adds it) and this emulator's handler, or None when no pattern matches."""
        if path == f"{BASE}/clusters":
            return frozenset({"GET", "HEAD", "POST"}), self._clusters
        match = CLUSTER_RE.match(path)
        if match:
            cluster_id = match.group("id")
            return frozenset({"GET", "HEAD", "PATCH", "DELETE"}), lambda r, s: self._cluster(r, s, cluster_id)
        match = STATUSES_RE.match(path)
        if match:
            cluster_id = match.group("id")
            methods = frozenset({"GET", "HEAD", self.store.status_method})
            return methods, lambda r, s: self._statuses(r, cluster_id)
        return None

    def _clusters(self, request: Request, system: bool) -> tuple[Reply, bool]:
        if request.method in ("GET", "HEAD"):
            return self._list_clusters(request)
        return self._not_served(request, system, "GET")

    def _cluster(self, request: Request, system: bool, cluster_id: str) -> tuple[Reply, bool]:
        if request.method in ("GET", "HEAD"):
            return self._get_cluster(cluster_id, request.path)
        return self._not_served(request, system, "GET")

    def _statuses(self, request: Request, cluster_id: str) -> tuple[Reply, bool]:
        if request.method in ("GET", "HEAD"):
            return self._list_statuses(request, cluster_id)
        if request.method != self.store.status_method:  # the 0.1.0 (POST-era) server's problem+json 405
            return method_not_allowed(request.path, f"GET, {self.store.status_method}"), True
        return self._write_status(request, cluster_id)

    def _not_served(self, request: Request, system: bool, allow: str) -> tuple[Reply, bool]:
        """A cluster write the real API routes but an adapter never makes (create, patch, delete)."""
        if system:
            # hyperfleet-api 541f6b4 pkg/services/resource.go (rejectSystemIdentityWrite).
            return problem(403, SYSTEM_WRITE_DENIED, request.path), True
        if self.store.status_method == "POST":
            return method_not_allowed(request.path, allow), True
        return problem(501, f"{request.method} is not emulated", request.path), True

    def _paging(self, request: Request) -> tuple[int, int] | str:
        try:
            page = int(request.arg("page") or 1)
            size = int(request.arg("size") or request.arg("pageSize") or 20)
        except ValueError:
            return "page and size must be integers"
        if page < 1 or size < 1:
            return "page and size must be >= 1"
        return page, size

    def _list_clusters(self, request: Request) -> tuple[Reply, bool]:
        paging = self._paging(request)
        if isinstance(paging, str):
            return problem(400, paging, request.path), False
        page, size = paging
        terms: list[tuple[str, str]] = []
        search = request.arg("search")
        if search:
            for raw in re.split(r"\s+and\s+", search.strip(), flags=re.IGNORECASE):
                term = _SEARCH_TERM.match(raw)
                if term is None:
                    return problem(400, f"unsupported search expression: {raw!r}", request.path), False
                if term.group("op") == ">" and term.group("field") != "id":
                    return problem(400, f"unsupported search expression: {raw!r}", request.path), False
                terms.append((term.group("field") + (">" if term.group("op") == ">" else ""), term.group("value")))
        order = _ORDER.match((request.arg("order") or "").strip())
        if request.arg("order") and (order is None or order.group("field") != "id"):
            return problem(400, f"unsupported order: {request.arg('order')!r}", request.path), False
        with self.store.lock:
            clusters = sorted(self.store.clusters.values(), key=lambda c: (str(c.get("created_time")), c["id"]))
            if order is not None:  # keyset paging: `order=id asc` with `search=id > 'last'` (TSL comparison)
                clusters = sorted(clusters, key=lambda c: str(c["id"]), reverse=order.group("direction") == "desc")
            selected = [c for c in clusters if all(self._field_matches(c, f, v) for f, v in terms)]
            items = copy.deepcopy(selected[(page - 1) * size : page * size])
            expected = any(c["id"] in self.store.invalid for c in items)
            deep = {c["id"]: self.store.nested[c["id"]] for c in items if c["id"] in self.store.nested}
        body = {"kind": "ClusterList", "page": page, "size": len(items), "total": len(selected), "items": items}
        if deep:
            return Reply(200, _nesting(body, items, deep), {"Content-Type": "application/json"}), True
        return Reply.json(200, body), expected

    @staticmethod
    def _field_matches(cluster: dict[str, Any], field: str, value: str) -> bool:
        if field == "id>":
            return str(cluster["id"]) > value
        if field.startswith("labels."):
            return (cluster.get("labels") or {}).get(field[len("labels.") :]) == value
        if field.startswith("status.conditions."):
            kind = field[len("status.conditions.") :]
            conditions = (cluster.get("status") or {}).get("conditions", [])
            return any(c.get("type") == kind and c.get("status") == value for c in conditions)
        return str(cluster.get(field)) == value

    def _get_cluster(self, cluster_id: str, path: str) -> tuple[Reply, bool]:
        with self.store.lock:
            raw = self.store.raw.get(cluster_id)
            if raw is not None:
                payload = raw["body"]
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                return Reply(raw["status"], data, {"Content-Type": raw["content_type"]}), True
            cluster = self.store.clusters.get(cluster_id)
            if cluster is None:
                return problem(404, f"Cluster with id='{cluster_id}' not found", path), False
            if cluster_id in self.store.nested:
                served = copy.deepcopy(cluster)
                text = _nesting(served, [served], {cluster_id: self.store.nested[cluster_id]})
                return Reply(200, text, {"Content-Type": "application/json"}), True
            return Reply.json(200, cluster), cluster_id in self.store.invalid

    def _list_statuses(self, request: Request, cluster_id: str) -> tuple[Reply, bool]:
        paging = self._paging(request)
        if isinstance(paging, str):
            return problem(400, paging, request.path), False
        page, size = paging
        with self.store.lock:
            if cluster_id not in self.store.clusters:
                return problem(404, f"Cluster with id='{cluster_id}' not found", request.path), False
            statuses = sorted(self.store.statuses.get(cluster_id, {}).values(), key=lambda s: s["created_time"])
            items = copy.deepcopy(statuses[(page - 1) * size : page * size])
        body = {"kind": "AdapterStatusList", "page": page, "size": len(items), "total": len(statuses), "items": items}
        return Reply.json(200, body), False

    def _write_status(self, request: Request, cluster_id: str) -> tuple[Reply, bool]:
        path = request.path
        try:
            body = request.json()
        except (ValueError, UnicodeDecodeError):
            return problem(400, "request body is not valid JSON", path), False
        invalid = status_rule_errors(body)
        if invalid:
            detail = "; ".join(e["message"] for e in invalid)
            return problem(400, detail, path, invalid), False
        observed_time = parse_time(body["observed_time"])
        assert observed_time is not None  # checked by the rules above
        for item in convention_breaks(cluster_id, body):
            self.conventions.add(item)
        with self.store.lock:
            cluster = self.store.clusters.get(cluster_id)
            if cluster is None:
                return problem(404, f"Cluster with id='{cluster_id}' not found", path), False
            generation = body["observed_generation"]
            stored = self.store.statuses.setdefault(cluster_id, {}).get(body["adapter"])
            # Discard rules, in the server's order: hyperfleet-api pkg/services/adapter_status_validation.go
            # (validateAndClassifyAdapterStatus). A discarded report is answered 204, which the spec omits.
            if generation > int(cluster["generation"]):
                return Reply(204), True  # a generation the cluster has not reached
            if stored is not None:
                if generation < stored["observed_generation"]:
                    return Reply(204), True  # older than the stored report's generation
                stored_time = parse_time(stored["last_report_time"])
                if generation == stored["observed_generation"] and stored_time and observed_time < stored_time:
                    return Reply(204), True  # same generation, observed before the stored report
                available: dict[str, Any] = next((c for c in body["conditions"] if c.get("type") == "Available"), {})
                if available.get("status") == "Unknown":
                    return Reply(204), True  # Available=Unknown is accepted on an adapter's first report only
            now = rfc3339()
            previous = {c["type"]: c for c in (stored or {}).get("conditions", [])}
            conditions = []
            for cond in body["conditions"]:
                before = previous.get(cond["type"])
                unchanged = before is not None and before["status"] == cond["status"]
                out = {k: cond[k] for k in ("type", "status", "reason", "message") if k in cond}
                out["last_transition_time"] = before["last_transition_time"] if unchanged else now  # type: ignore[index]
                conditions.append(out)
            status: dict[str, Any] = {
                "adapter": body["adapter"],
                "observed_generation": generation,
                "conditions": conditions,
                "data": copy.deepcopy(body.get("data") or {}),
                "created_time": stored["created_time"] if stored else now,
                "last_report_time": rfc3339(observed_time),
            }
            if "metadata" in body:
                status["metadata"] = copy.deepcopy(body["metadata"])
            self.store.statuses[cluster_id][body["adapter"]] = status
            self.store.aggregate(cluster_id)
            return Reply.json(201, status), False


def _nesting(body: dict[str, Any], items: list[dict[str, Any]], deep: dict[str, int]) -> bytes:
    """`body` as JSON with the `spec` of each cluster in `deep` replaced by objects nested that deep (no
    recursion: json.dumps cannot write them)."""
    marks: dict[str, int] = {}
    for item in items:
        if item["id"] in deep:
            mark = f"\u0000nested:{item['id']}"
            item["spec"] = mark
            marks[json.dumps(mark)] = deep[item["id"]]
    text = json.dumps(body)
    for mark, depth in marks.items():
        text = text.replace(mark, '{"a": ' * depth + "{}" + "}" * depth)
    return text.encode()
