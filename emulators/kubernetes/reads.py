"""The read verbs: get and list of Secrets (selectors, paging with continue tokens) and of admission policies."""

from __future__ import annotations

import base64
import binascii
import copy
import json
from dataclasses import dataclass
from typing import Any

from emulators.kubernetes.access import Access
from emulators.kubernetes.admission import Admission
from emulators.kubernetes.base import Json
from emulators.kubernetes.selectors import parse_field_selector, parse_label_selector
from emulators.kubernetes.status import bad_request, not_found
from emulators.kubernetes.store import Store

# admissionregistration.k8s.io/v1 objects the emulator serves (read-only over the API; seeded by the admin API)
POLICY_RESOURCES = {
    "validatingadmissionpolicies": ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyList"),
    "validatingadmissionpolicybindings": ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBindingList"),
}


@dataclass
class Request:
    """One parsed API request."""

    method: str
    verb: str
    resource: str
    namespace: str
    name: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    user: str = ""

    def param(self, key: str, default: str = "") -> str:
        return self.query.get(key, [default])[-1]


class Reads(Store, Access, Admission):
    """Reads of Secrets and admission policies, and the list shape every list answer shares."""

    def _get_policy(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        kind, list_kind = POLICY_RESOURCES[req.resource]
        with self._lock:
            stored = self._policies if kind == "ValidatingAdmissionPolicy" else self._policy_bindings
            if req.verb == "list":
                items = [stored[n] for n in sorted(stored)]
                body = self._list(list_kind, items)
                body["apiVersion"] = "admissionregistration.k8s.io/v1"
                return 200, body, {}
            found = stored.get(req.name)
            if found is None:
                raise not_found(f"{req.resource}.admissionregistration.k8s.io", req.name)
            return 200, {"apiVersion": "admissionregistration.k8s.io/v1", **copy.deepcopy(found)}, {}

    def _list(self, kind: str, items: list[Json]) -> Json:
        stripped = []
        for item in items:
            # Items of a list carry no kind/apiVersion on the wire.
            copied = copy.deepcopy(item)
            copied.pop("kind", None)
            copied.pop("apiVersion", None)
            stripped.append(copied)
        return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(self._rv)}, "items": stripped}

    def _get(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            found = self._secrets.get((req.namespace, req.name))
            if found is None:
                raise not_found("secrets", req.name)
            return 200, copy.deepcopy(found), {}

    def _select(self, req: Request) -> list[Json]:
        labels = parse_label_selector(req.param("labelSelector"))
        fields = parse_field_selector(req.param("fieldSelector"), ("metadata.name", "metadata.namespace", "type"))
        out = []
        for (ns, _), obj in sorted(self._secrets.items()):
            if req.namespace and ns != req.namespace:
                continue
            if not all(r.matches(obj["metadata"].get("labels", {})) for r in labels):
                continue
            values = {"metadata.name": obj["metadata"]["name"], "metadata.namespace": ns, "type": obj.get("type", "")}
            if all((values[k] == v) == (op == "=") for k, op, v in fields):
                out.append(obj)
        return out

    def _list_secrets(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            items = self._select(req)
            start = 0
            token = req.param("continue")
            if token:
                try:
                    state = json.loads(base64.urlsafe_b64decode(token.encode()))
                    start = int(state["start"])
                except (ValueError, KeyError, TypeError, binascii.Error):
                    raise bad_request(
                        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
                    ) from None
            limit = int(req.param("limit", "0") or 0)
            page = items[start : start + limit] if limit > 0 else items[start:]
            body = self._list("SecretList", page)
            if limit > 0 and start + limit < len(items):
                body["metadata"]["continue"] = base64.urlsafe_b64encode(
                    json.dumps({"start": start + limit}).encode()
                ).decode()
                body["metadata"]["remainingItemCount"] = len(items) - start - limit
            return 200, body, {}
