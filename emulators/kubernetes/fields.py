"""Patch flavours and server-side apply field ownership (metadata.managedFields, fieldsV1)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from emulators.kubernetes.base import Json, Path, rfc3339
from emulators.kubernetes.status import ApiError, bad_request

# --------------------------------------------------------------------------------------------
# Field ownership (metadata.managedFields, fieldsV1)
# --------------------------------------------------------------------------------------------
MAP_FIELDS: tuple[Path, ...] = (("metadata", "labels"), ("metadata", "annotations"), ("data",))
ATOMIC_FIELDS: tuple[Path, ...] = (
    ("metadata", "ownerReferences"),
    ("metadata", "finalizers"),
    ("immutable",),
    ("type",),
)


def _get(obj: Json, path: Path) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def leaves(obj: Json) -> dict[Path, Any]:
    """Every owned leaf of a Secret with its value: map entries and atomic fields."""
    out: dict[Path, Any] = {}
    for path in MAP_FIELDS:
        for key, value in (_get(obj, path) or {}).items():
            out[(*path, key)] = value
    for path in ATOMIC_FIELDS:
        value = _get(obj, path)
        if value is not None:
            out[path] = value
    return out


def map_nodes(obj: Json) -> set[Path]:
    return {path for path in MAP_FIELDS if _get(obj, path)}


def set_leaf(obj: Json, path: Path, value: Any) -> None:
    node = obj
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = copy.deepcopy(value)


def del_leaf(obj: Json, path: Path) -> None:
    node: Any = obj
    for part in path[:-1]:
        node = node.get(part)
        if not isinstance(node, dict):
            return
    node.pop(path[-1], None)


def fields_v1(paths: Iterable[Path]) -> Json:
    """Encode a field set in the fieldsV1 form: {"f:data": {".": {}, "f:key": {}}}."""
    tree: Json = {}
    members = set(paths)
    for path in sorted(members):
        node = tree
        for part in path:
            node = node.setdefault("f:" + part, {})
    for path in members:
        node = tree
        for part in path:
            node = node["f:" + part]
        if any(k != "." for k in node):
            node["."] = {}
    return _sorted_tree(tree)


def _sorted_tree(tree: Json) -> Json:
    return {k: _sorted_tree(v) for k, v in sorted(tree.items())}


def parse_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """Decode fieldsV1; list-element keys (k:, v:, i:) collapse onto their atomic list."""
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for key, child in tree.items():
        if key == ".":
            out.add(prefix)
        elif key.startswith("f:"):
            path = (*prefix, key[2:])
            if (*path,) in ATOMIC_FIELDS or not child:
                out.add(path)
            else:
                out |= parse_fields_v1(child, path)
        elif key[:2] in ("k:", "v:", "i:"):
            out.add(prefix)
    return out


@dataclass
class Owner:
    manager: str
    operation: str
    fields: set[Path]
    time: str
    api_version: str = "v1"
    subresource: str = ""

    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_json(self) -> Json:
        out: Json = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(self.fields),
        }
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def describe(self) -> str:
        """As the apiserver's printManager: Update managers carry their API version."""
        if self.operation == "Update":
            return f'"{self.manager}" using {self.api_version}'
        return f'"{self.manager}"'


def owners_of(obj: Json) -> list[Owner]:
    out = []
    for entry in obj.get("metadata", {}).get("managedFields", []) or []:
        if not isinstance(entry, dict):
            continue
        out.append(
            Owner(
                manager=str(entry.get("manager", "")),
                operation=str(entry.get("operation", "Update")),
                fields=parse_fields_v1(entry.get("fieldsV1", {})),
                time=rfc3339(entry.get("time")),
                api_version=str(entry.get("apiVersion", "v1")),
                subresource=str(entry.get("subresource", "")),
            )
        )
    return out


def store_owners(obj: Json, owners: list[Owner]) -> None:
    kept = [o.to_json() for o in owners if o.fields]
    if kept:
        obj["metadata"]["managedFields"] = kept
    else:
        obj["metadata"].pop("managedFields", None)


def track_update(old: Json | None, new: Json, base: list[Owner], manager: str, now: str) -> list[Owner]:
    """Ownership after a non-apply write: the writer takes what changed, nobody keeps what is gone."""
    old_leaves = leaves(old) if old else {}
    new_leaves = leaves(new)
    old_maps = map_nodes(old) if old else set()
    new_maps = map_nodes(new)
    changed = {p for p, v in new_leaves.items() if p not in old_leaves or old_leaves[p] != v}
    changed |= new_maps - old_maps
    gone = (set(old_leaves) - set(new_leaves)) | (old_maps - new_maps)
    owners = [Owner(o.manager, o.operation, set(o.fields), o.time, o.api_version, o.subresource) for o in base]
    mine = next((o for o in owners if o.key() == (manager, "Update", "")), None)
    for owner in owners:
        owner.fields -= changed | gone
    if changed:
        if mine is None:
            mine = Owner(manager, "Update", set(), now)
            owners.append(mine)
        mine.fields |= changed
        mine.time = now
    return [o for o in owners if o.fields]


# --------------------------------------------------------------------------------------------
# Patches
# --------------------------------------------------------------------------------------------
def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target: Any, patch: Any, path: Path = ()) -> Any:
    """Strategic merge patch for a Secret: maps merge, finalizers and ownerReferences merge by key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if not k.startswith("$")}
    if directive == "replace":
        return copy.deepcopy(body)
    if directive not in (None, "merge"):
        raise bad_request(f"Unknown patch type: {directive}")
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or [])
        out = {k: v for k, v in out.items() if k in keep}
    for key, values in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in values]
    for key, value in body.items():
        child = (*path, key)
        if value is None:
            out.pop(key, None)
        elif child == ("metadata", "finalizers") and isinstance(value, list):
            merged = list(out.get(key) or [])
            merged += [v for v in value if v not in merged]
            out[key] = merged
        elif child == ("metadata", "ownerReferences") and isinstance(value, list):
            merged_refs = list(out.get(key) or [])
            for ref in value:
                uid = ref.get("uid") if isinstance(ref, dict) else None
                index = next((i for i, r in enumerate(merged_refs) if r.get("uid") == uid), None)
                if isinstance(ref, dict) and ref.get("$patch") == "delete":
                    if index is not None:
                        merged_refs.pop(index)
                elif index is None:
                    merged_refs.append(ref)
                else:
                    merged_refs[index] = strategic_merge_patch(merged_refs[index], ref, child)
            out[key] = merged_refs
        else:
            result = strategic_merge_patch(out.get(key), value, child)
            if result is None:
                out.pop(key, None)
            else:
                out[key] = result
    return out


class JsonPatchError(Exception):
    pass


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise JsonPatchError(f"JSON pointer must start with '/': {path}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise JsonPatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")
    return node


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)

    def get(parts: list[str]) -> Any:
        node = _container(doc, parts)
        last = parts[-1]
        if isinstance(node, dict) and last in node:
            return node[last]
        if isinstance(node, list) and last.isdigit() and int(last) < len(node):
            return node[int(last)]
        raise JsonPatchError(f"Unable to get nonexistent key: {last}: missing value")

    def remove(parts: list[str]) -> Any:
        node = _container(doc, parts)
        last = parts[-1]
        if isinstance(node, dict) and last in node:
            return node.pop(last)
        if isinstance(node, list) and last.isdigit() and int(last) < len(node):
            return node.pop(int(last))
        raise JsonPatchError(f"Unable to remove nonexistent key: {last}: missing value")

    def add(parts: list[str], value: Any, replace: bool = False) -> None:
        nonlocal doc
        if not parts:
            doc = copy.deepcopy(value)
            return
        node = _container(doc, parts)
        last = parts[-1]
        if isinstance(node, dict):
            if replace and last not in node:
                raise JsonPatchError(
                    f"replace operation does not apply: doc is missing key: /{'/'.join(parts)}: missing value"
                )
            node[last] = copy.deepcopy(value)
        elif isinstance(node, list):
            if last == "-" and not replace:
                node.append(copy.deepcopy(value))
            elif last.isdigit() and int(last) <= len(node) - (1 if replace else 0):
                if replace:
                    node[int(last)] = copy.deepcopy(value)
                else:
                    node.insert(int(last), copy.deepcopy(value))
            else:
                raise JsonPatchError(f"Unable to access invalid index: {last}: invalid index referenced")
        else:
            raise JsonPatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")

    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise JsonPatchError("Unexpected kind: ")
        kind, parts = op["op"], _pointer(op["path"])
        if kind == "add":
            add(parts, op.get("value"))
        elif kind == "remove":
            remove(parts)
        elif kind == "replace":
            add(parts, op.get("value"), replace=True)
        elif kind == "move":
            add(parts, remove(_pointer(op["from"])))
        elif kind == "copy":
            add(parts, get(_pointer(op["from"])))
        elif kind == "test":
            if get(parts) != op.get("value"):
                raise JsonPatchError(f"testing value /{'/'.join(parts)} failed: test failed")
        else:
            raise JsonPatchError(f"Unexpected kind: {kind}")
    return doc


def apply_conflict(conflicts: list[tuple[Owner, Path]]) -> ApiError:
    def path_text(path: Path) -> str:
        return "".join("." + part for part in path)

    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {o.describe()}", "field": path_text(p)}
        for o, p in conflicts
    ]
    if len(conflicts) == 1:
        owner, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {owner.describe()}: {path_text(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for owner, path in conflicts:
            by_manager.setdefault(owner.describe(), []).append(path_text(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {p}" for p in by_manager[manager]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})
