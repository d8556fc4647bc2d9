"""The IAM grants `terraform/` gives one service account, read from the HCL and evaluated for a set of variables.

The emulators enforce exactly these grants for the function's runtime identity (emulators/stack.py), so a
call the Terraform configuration does not allow fails in the tests as it would on GCP.

What is read (python-hcl2): every `*_iam_member` / `*_iam_binding` resource whose member is the service
account, with its `for_each`/`count`, its role (a predefined role, see `emulators.iam.PREDEFINED_ROLES`, or
a `google_project_iam_custom_role` of this configuration, whose `permissions` list is evaluated too) and its
`condition { expression }`.

Terraform expressions are evaluated by cel-python: the subset this configuration uses (references, string
templates, `cond ? a : b`, `==`, lists, indexing) is the same syntax in CEL, and Terraform's functions are
supplied below. Anything outside it (a `for` expression, an unknown function or reference) raises
`TerraformEvalError` naming the expression, so the test stack fails loudly instead of granting a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import hcl2
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError
from hcl2 import SerializationOptions

from emulators.iam import role_permissions

TERRAFORM_DIR = Path(__file__).resolve().parent.parent / "terraform"
_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)

# IAM member resources and the resource their grant is attached to (None: not a Secret Manager or GKE
# resource; the emulators that would check it, e.g. the Cloud SDK's Pub/Sub emulator, have no IAM).
_SCOPES: dict[str, Callable[[Mapping[str, Any]], str] | None] = {
    "google_project_iam_member": lambda a: f"projects/{a['project']}",
    "google_project_iam_binding": lambda a: f"projects/{a['project']}",
    "google_secret_manager_secret_iam_member": lambda a: f"projects/{a['project']}/secrets/{a['secret_id']}",
    "google_secret_manager_secret_iam_binding": lambda a: f"projects/{a['project']}/secrets/{a['secret_id']}",
    "google_pubsub_topic_iam_member": None,
    "google_pubsub_subscription_iam_member": None,
    "google_cloud_run_v2_service_iam_member": None,
    "google_service_account_iam_member": None,
    "google_storage_bucket_iam_member": None,
    "google_artifact_registry_repository_iam_member": None,
}
_CUSTOM_ROLE = re.compile(r"^projects/([^/]+)/roles/([^/]+)$")
_REFERENCE = re.compile(r"(?<![\w.\"])(local|data|google_[a-z0-9_]+)\.([A-Za-z_][A-Za-z0-9_-]*)")


class TerraformEvalError(ValueError):
    """An expression of terraform/ this evaluator cannot compute."""


@dataclass(frozen=True)
class Grant:
    """One role granted to the service account, on one resource, maybe under a condition."""

    address: str  # e.g. google_project_iam_member.runtime_cluster_viewer["my-project"]
    role: str
    permissions: frozenset[str]
    resource: str  # projects/PROJECT or projects/PROJECT/secrets/ID, project ids as configured
    condition: str | None = None
    condition_title: str = ""


# -- Terraform's functions (https://developer.hashicorp.com/terraform/language/functions) ----------------
def _list(values: Iterable[Any]) -> celtypes.ListType:
    return celtypes.ListType(list(values))


def _distinct(values: Any) -> celtypes.ListType:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return _list(seen)


def _replace(text: str, old: str, new: str) -> str:
    """Terraform's replace(): a /slashed/ search string is a regular expression ($1 → \\1)."""
    if len(old) > 1 and old.startswith("/") and old.endswith("/"):
        return re.sub(old[1:-1], re.sub(r"\$\{?(\d+)\}?", r"\\\1", new), text)
    return text.replace(old, new)


def _format(spec: str, args: tuple[Any, ...]) -> str:
    """Terraform's format() for the %s / %d / %% verbs."""
    values = iter(args)
    return re.sub(r"%[sd%]", lambda m: "%" if m.group() == "%%" else str(next(values)), spec)


_TF_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "concat": lambda *lists: _list(x for values in lists for x in values),
    "distinct": _distinct,
    "toset": lambda values: _list(sorted(set(values))),  # a set iterates in lexical order
    "tolist": _list,
    "compact": lambda values: _list(x for x in values if x is not None and str(x) != ""),
    "setsubtract": lambda a, b: _list(sorted(set(a) - set(b))),
    "split": lambda sep, text: _list(celtypes.StringType(x) for x in str(text).split(str(sep))),
    "join": lambda sep, values: celtypes.StringType(str(sep).join(str(x) for x in values)),
    "length": lambda value: celtypes.IntType(len(value)),
    "lower": lambda text: celtypes.StringType(str(text).lower()),
    "upper": lambda text: celtypes.StringType(str(text).upper()),
    "replace": lambda text, old, new: celtypes.StringType(_replace(str(text), str(old), str(new))),
    "format": lambda spec, *args: celtypes.StringType(_format(str(spec), args)),
    "trimspace": lambda text: celtypes.StringType(str(text).strip()),
    "trimprefix": lambda text, p: celtypes.StringType(str(text).removeprefix(str(p))),
    "trimsuffix": lambda text, s: celtypes.StringType(str(text).removesuffix(str(s))),
    "startswith": lambda text, p: celtypes.BoolType(str(text).startswith(str(p))),
    "endswith": lambda text, s: celtypes.BoolType(str(text).endswith(str(s))),
    "contains": lambda values, x: celtypes.BoolType(x in values),
    "coalesce": lambda *values: next((v for v in values if v is not None and str(v) != ""), None),
}


def _py(value: Any) -> Any:
    """A cel-python value as plain Python."""
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return int(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.ListType | list | tuple):
        return [_py(v) for v in value]
    if isinstance(value, celtypes.MapType | dict):
        return {_py(k): _py(v) for k, v in value.items()}
    return value


def _interpolations(text: str) -> list[tuple[int, int]]:
    """(start, end) of every ${...} in a Terraform string template; end is past the closing brace."""
    spans = []
    i = 0
    while (start := text.find("${", i)) >= 0:
        if start > 0 and text[start - 1] == "$":  # $${ is a literal ${
            i = start + 2
            continue
        depth, j, quoted = 0, start + 1, False
        while j < len(text):
            ch = text[j]
            if quoted:
                if ch == "\\":
                    j += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(text):
            raise TerraformEvalError(f"unterminated interpolation in {text!r}")
        spans.append((start, j + 1))
        i = j + 1
    return spans


_ENV = celpy.Environment()


@functools.lru_cache(maxsize=1024)
def _program(text: str) -> Any:
    try:
        return _ENV.program(_ENV.compile(text), functions=_TF_FUNCTIONS)
    except CELParseError as err:
        raise TerraformEvalError(f"cannot evaluate Terraform expression {text!r}: {err}") from err


@functools.lru_cache(maxsize=4)
def _parse(files: tuple[tuple[str, int], ...]) -> tuple[dict[str, Any], ...]:
    """The parsed .tf files (keyed by path and mtime: a test stack resets often, the files rarely change)."""
    parsed = []
    for path, _mtime in files:
        with open(path) as handle:
            parsed.append(hcl2.load(handle, serialization_options=_OPTIONS))
    return tuple(parsed)


class Module:
    """One Terraform root module (all *.tf of a directory), evaluated for the given variables."""

    def __init__(
        self,
        variables: Mapping[str, Any],
        *,
        project_number: Callable[[str], str],
        directory: Path = TERRAFORM_DIR,
    ) -> None:
        self.resources: dict[str, dict[str, dict[str, Any]]] = {}
        self.data: dict[str, dict[str, dict[str, Any]]] = {}
        self._locals: dict[str, Any] = {}
        defaults: dict[str, Any] = {}
        declared: set[str] = set()
        files = sorted(directory.glob("*.tf"))
        for parsed in _parse(tuple((str(p), p.stat().st_mtime_ns) for p in files)):
            for section, into in (("resource", self.resources), ("data", self.data)):
                for block in parsed.get(section, []):
                    for kind, named in block.items():
                        into.setdefault(kind, {}).update(named)
            for block in parsed.get("variable", []):
                for name, body in block.items():
                    declared.add(name)
                    if "default" in body:
                        defaults[name] = body["default"]
            for block in parsed.get("locals", []):
                self._locals.update(block)
        unknown = set(variables) - declared
        if unknown:
            raise TerraformEvalError(f"no such Terraform variable(s): {sorted(unknown)}")
        self.variables = {**defaults, **variables}
        self._project_number = project_number
        self._local_values: dict[str, Any] = {}

    # -- evaluation ---------------------------------------------------------------------------------
    def value(self, raw: Any, each: Mapping[str, Any] | None = None) -> Any:
        """A serialized HCL value (string template, list, map, scalar) evaluated to plain Python."""
        if isinstance(raw, list):
            return [self.value(x, each) for x in raw]
        if isinstance(raw, dict):
            return {k: self.value(v, each) for k, v in raw.items()}
        if not isinstance(raw, str):
            return raw
        spans = _interpolations(raw)
        if len(spans) == 1 and spans[0] == (0, len(raw)):
            return self.expression(raw[2:-1], each)
        out, at = [], 0
        for start, end in spans:
            out.append(raw[at:start])
            piece = self.expression(raw[start + 2 : end - 1], each)
            if not isinstance(piece, str | int):
                raise TerraformEvalError(f"interpolation of a {type(piece).__name__} in {raw!r}")
            out.append(str(piece))
            at = end
        out.append(raw[at:])
        return "".join(out).replace("$${", "${")

    def expression(self, text: str, each: Mapping[str, Any] | None = None) -> Any:
        """One Terraform expression (the inside of ${...})."""
        program = _program(text)
        activation: dict[str, Any] = {"var": self.variables}
        if each is not None:
            activation["count" if "index" in each else "each"] = dict(each)
        for root, name in set(_REFERENCE.findall(text)):
            if root == "local":
                activation.setdefault("local", {})[name] = self.local(name)
            elif root == "data":
                activation.setdefault("data", {}).update(self._data_values(text))
            else:
                activation.setdefault(root, {})[name] = self._resource_value(root, name)
        try:
            result = program.evaluate({k: json_to_cel(v) for k, v in activation.items()})
        except CELEvalError as err:
            raise TerraformEvalError(f"cannot evaluate Terraform expression {text!r}: {err.args[0]}") from err
        if isinstance(result, CELEvalError):
            raise TerraformEvalError(f"cannot evaluate Terraform expression {text!r}: {result.args[0]}")
        return _py(result)

    def local(self, name: str) -> Any:
        if name not in self._local_values:
            if name not in self._locals:
                raise TerraformEvalError(f"no such local value local.{name}")
            self._local_values[name] = self.value(self._locals[name])
        return self._local_values[name]

    def instances(self, body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
        """(index suffix, each) for every instance of a resource: for_each keys, count, or one."""
        if "for_each" in body:
            keys = self.value(body["for_each"])
            items = keys.items() if isinstance(keys, dict) else ((k, k) for k in keys)
            return [(f'["{k}"]', {"key": k, "value": v}) for k, v in items]
        if "count" in body:
            return [(f"[{i}]", {"index": i}) for i in range(int(self.value(body["count"])))]
        return [("", None)]

    def _attribute(self, body: Mapping[str, Any], key: str, each: Mapping[str, Any] | None) -> Any:
        if key not in body:
            raise TerraformEvalError(f"missing attribute {key!r}")
        return self.value(body[key], each)

    def _resource_value(self, kind: str, name: str) -> Any:
        """The attributes other expressions read from a resource of this configuration."""
        body = self.resources.get(kind, {}).get(name)
        if body is None:
            raise TerraformEvalError(f"no such resource {kind}.{name}")
        if kind == "google_service_account":
            email = f"{self.value(body['account_id'])}@{self.value(body['project'])}.iam.gserviceaccount.com"
            return {"email": email, "member": f"serviceAccount:{email}", "name": f"projects/-/serviceAccounts/{email}"}
        if kind == "google_project_iam_custom_role":
            out: dict[str, Any] = {}
            counted: list[Any] = []  # `count` instances, read as role[0]
            for _index, each in self.instances(body):
                project, role_id = self._attribute(body, "project", each), self._attribute(body, "role_id", each)
                permissions = self._attribute(body, "permissions", each)
                role = {"id": f"projects/{project}/roles/{role_id}", "permissions": permissions}
                if each is None:
                    return role
                if "index" in each:
                    counted.append(role)
                else:
                    out[each["key"]] = role
            return counted if "count" in body else out
        raise TerraformEvalError(f"the evaluator does not model attributes of {kind}.{name}")

    def _data_values(self, text: str) -> dict[str, Any]:
        """data.google_project.X: project_id and number (the number from the emulators' project registry)."""
        found: dict[str, Any] = {}
        for match in re.finditer(r"data\.([a-z0-9_]+)\.([A-Za-z0-9_-]+)", text):
            kind, name = match.groups()
            if kind != "google_project":
                raise TerraformEvalError(f"the evaluator does not model data.{kind}")
            body = self.data.get(kind, {}).get(name)
            if body is None:
                raise TerraformEvalError(f"no such data source data.{kind}.{name}")
            values: dict[str, Any] = {}
            for _index, each in self.instances(body):
                project = self._attribute(body, "project_id", each)
                entry = {"project_id": project, "number": self._project_number(project)}
                if each is None:
                    values = entry
                    break
                values[each["key"]] = entry
            found.setdefault(kind, {})[name] = values
        return found

    # -- grants ----------------------------------------------------------------------------------
    def custom_roles(self) -> dict[str, frozenset[str]]:
        """Every custom role of this configuration: its id (projects/P/roles/R) → permissions."""
        roles: dict[str, frozenset[str]] = {}
        for name in self.resources.get("google_project_iam_custom_role", {}):
            value = self._resource_value("google_project_iam_custom_role", name)
            roles_of = value if isinstance(value, list) else [value] if "id" in value else list(value.values())
            for role in roles_of:
                roles[role["id"]] = frozenset(role["permissions"])
        return roles

    def _members(self, body: Mapping[str, Any], each: Mapping[str, Any] | None) -> list[str]:
        raw = body.get("member", body.get("members"))
        try:
            value = self.value(raw, each)
        except TerraformEvalError:
            # A member computed from something this evaluator does not model (a service agent's identity,
            # say) is not a service account of this configuration; one that names one must evaluate.
            if "google_service_account." in str(raw):
                raise
            return []
        return [str(m) for m in value] if isinstance(value, list) else [str(value)]

    def grants_to(self, member: str) -> list[Grant]:
        """The grants of `member` (e.g. "serviceAccount:x@p.iam.gserviceaccount.com") this configuration makes."""
        custom: dict[str, frozenset[str]] | None = None
        grants: list[Grant] = []
        for kind, named in self.resources.items():
            if not kind.endswith(("_iam_member", "_iam_binding")):
                continue
            for name, body in named.items():
                try:
                    instances = self.instances(body)
                except TerraformEvalError as err:
                    # Instances computed from what this evaluator does not model: not a grant to a service
                    # account of this configuration, unless its member names one.
                    if "google_service_account." in str(body.get("member", body.get("members"))):
                        raise TerraformEvalError(f"{kind}.{name}: {err}") from err
                    continue
                for index, each in instances:
                    address = f"{kind}.{name}{index}"
                    try:
                        members = self._members(body, each)
                        if member not in members:
                            continue
                        if kind not in _SCOPES:
                            raise TerraformEvalError(f"IAM resource type {kind} is not modelled")
                        scope = _SCOPES[kind]
                        if scope is None:
                            continue
                        role = str(self._attribute(body, "role", each))
                        if _CUSTOM_ROLE.match(role):
                            custom = self.custom_roles() if custom is None else custom
                            if role not in custom:
                                raise TerraformEvalError(f"custom role {role} is not defined in this configuration")
                            permissions = custom[role]
                        else:
                            permissions = role_permissions(role)
                        keys = [k for k in ("project", "secret_id") if k in body]
                        attributes: dict[str, Any] = {k: self._attribute(body, k, each) for k in keys}
                        condition = (body.get("condition") or [None])[0]
                        grants.append(
                            Grant(
                                address=address,
                                role=role,
                                permissions=permissions,
                                resource=scope(attributes),
                                condition=None if condition is None else str(self.value(condition["expression"], each)),
                                condition_title=""
                                if condition is None
                                else str(self.value(condition.get("title", ""), each)),
                            )
                        )
                    except (TerraformEvalError, KeyError) as err:
                        raise TerraformEvalError(f"{address}: {err}") from err
        return grants


def service_account_grants(
    variables: Mapping[str, Any],
    *,
    project_number: Callable[[str], str],
    account: str = "runtime",
    directory: Path = TERRAFORM_DIR,
) -> tuple[str, list[Grant]]:
    """(the account's e-mail, its grants) for google_service_account.<account> of the configuration."""
    module = Module(variables, project_number=project_number, directory=directory)
    identity = module._resource_value("google_service_account", account)
    return str(identity["email"]), module.grants_to(str(identity["member"]))
