"""Storage: namespaces, Secrets and resourceVersions (each write bumps one counter)."""

from __future__ import annotations

import copy
import threading
import uuid

from emulators.kubernetes.base import Json, utc_now
from emulators.kubernetes.fields import store_owners, track_update
from emulators.kubernetes.validation import canonical, decode_secret


class Store:
    """Namespaces and Secrets under one lock, and the resourceVersion counter."""

    _lock: threading.RLock
    _rv: int
    _namespaces: dict[str, Json]
    _secrets: dict[tuple[str, str], Json]

    def _bump(self) -> str:
        self._rv += 1
        return str(self._rv)

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> Json:
        """Create a namespace (idempotent) and return it."""
        with self._lock:
            if name in self._namespaces:
                return copy.deepcopy(self._namespaces[name])
            ns = {
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {
                    "name": name,
                    "uid": str(uuid.uuid4()),
                    "resourceVersion": self._bump(),
                    "creationTimestamp": utc_now(),
                    "labels": {"kubernetes.io/metadata.name": name, **(labels or {})},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
            self._namespaces[name] = ns
            return copy.deepcopy(ns)

    def delete_namespace(self, name: str) -> bool:
        """Delete a namespace and its Secrets at once (no Terminating phase)."""
        with self._lock:
            if self._namespaces.pop(name, None) is None:
                return False
            for key in [k for k in self._secrets if k[0] == name]:
                del self._secrets[key]
            self._bump()
            return True

    def get_secret(self, namespace: str, name: str) -> Json | None:
        with self._lock:
            obj = self._secrets.get((namespace, name))
            return copy.deepcopy(obj) if obj else None

    def put_secret(self, obj: Json, *, manager: str | None = None) -> Json:
        """Seed a Secret bypassing auth and validation; creates its namespace when missing."""
        decoded, _ = decode_secret(obj)
        meta = decoded["metadata"]
        name, namespace = meta.get("name"), meta.get("namespace")
        if not name or not namespace:
            raise ValueError("a seeded Secret needs metadata.name and metadata.namespace")
        with self._lock:
            self.add_namespace(namespace)
            old = self._secrets.get((namespace, name))
            meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", old["metadata"]["creationTimestamp"] if old else utc_now())
            if manager is not None:
                store_owners(decoded, track_update(None, decoded, [], manager, utc_now()))
            meta["resourceVersion"] = self._bump()
            stored = canonical(decoded)
            self._secrets[(namespace, name)] = stored
            return copy.deepcopy(stored)

    def delete_secret(self, namespace: str, name: str) -> bool:
        with self._lock:
            if self._secrets.pop((namespace, name), None) is None:
                return False
            self._bump()
            return True
