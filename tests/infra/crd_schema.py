"""Validate a custom resource against its CustomResourceDefinition's structural schema, as the API server does for
`kubectl apply` (server-side field validation Strict, kubectl's default since 1.27), and vendor such schemas.

What the API server checks (k8s.io/apiextensions-apiserver pkg/apiserver/validation, "Validation" and "Field
pruning" in https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/):
- the OpenAPI v3 keywords of a structural schema (type, properties, required, items, enum, pattern, min/max
  Length/Items/Properties, minimum, additionalProperties, anyOf): the same words in JSON Schema, checked here
  by jsonschema;
- `x-kubernetes-int-or-string`: an integer or a string;
- a field the schema does not declare, under an object whose schema lists `properties` and neither
  `additionalProperties` nor `x-kubernetes-preserve-unknown-fields`: pruned, which Strict field validation turns
  into the error `unknown field "spec.x"`; here the same field is a validation error (additionalProperties false);
- `x-kubernetes-validations`: each CEL `rule` evaluated with `self` bound to the value (transition rules, which
  name `oldSelf`, only run on update and are skipped), with the CEL implementation the Kubernetes emulator's
  admission uses (common-expression-language).
Not modelled: `format` (int32, byte, date-time...), defaulting, `x-kubernetes-list-type` uniqueness, `metadata`
(validated as ObjectMeta by the server, not by the CRD), and null for a non-nullable field, which the server
prunes and which is an error here.

`python -m tests.infra.crd_schema vendor GIT_DIR COMMIT CRD_PATH VERSION OUT [--only-provider NAME]` writes one
version's schema from an upstream repository's git history, with a provenance header, as the vendored files under
emulators/contracts/ were made.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cel
import jsonschema  # type: ignore[import-untyped]
import yaml

Schema = dict[str, Any]


def strict_json_schema(schema: Schema) -> Schema:
    """The JSON Schema that checks what the API server checks of `schema` (an openAPIV3Schema), unknown fields
    refused; `x-kubernetes-validations` are left to `cel_failures`."""
    node = {k: v for k, v in schema.items() if k not in ("x-kubernetes-validations", "default", "example")}
    if node.pop("x-kubernetes-int-or-string", False):
        node.pop("type", None)
        node.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.pop("nullable", False) and "type" in node:
        node["type"] = [node["type"], "null"]
    preserve = node.pop("x-kubernetes-preserve-unknown-fields", False)
    for key in ("x-kubernetes-map-type", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "format"):
        node.pop(key, None)
    if "properties" in node:
        node["properties"] = {name: strict_json_schema(child) for name, child in node["properties"].items()}
        if not preserve and "additionalProperties" not in node:
            node["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = strict_json_schema(node["additionalProperties"])
    if "items" in node:
        node["items"] = strict_json_schema(node["items"])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in node:
            node[key] = [strict_json_schema(choice) for choice in node[key]]
    return node


def _reached(schema: Schema, value: Any, path: str) -> Iterator[tuple[str, Schema, Any]]:
    """(path, schema node, value) for every value of the document and the schema node that governs it."""
    yield path, schema, value
    if isinstance(value, dict):
        for name, child in value.items():
            if name in schema.get("properties", {}):
                yield from _reached(schema["properties"][name], child, f"{path}.{name}")
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from _reached(schema["additionalProperties"], child, f"{path}[{name}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, child in enumerate(value):
            yield from _reached(schema["items"], child, f"{path}[{index}]")


def cel_rules_reached(schema: Schema, document: Any) -> list[tuple[str, str]]:
    """(path, rule) of every x-kubernetes-validations rule on a value the document sets."""
    return [
        (path, rule["rule"])
        for path, node, _value in _reached(schema, document, "")
        for rule in node.get("x-kubernetes-validations", [])
    ]


def cel_failures(schema: Schema, document: Any) -> list[str]:
    """The x-kubernetes-validations rules the document breaks, with the CRD's message, as the server words it."""
    failures = []
    for path, node, value in _reached(schema, document, ""):
        for rule in node.get("x-kubernetes-validations", []):
            if "oldSelf" in rule["rule"]:
                continue
            try:
                held = cel.compile(rule["rule"]).execute({"self": value}) is True
            except (ValueError, TypeError, KeyError, IndexError, RuntimeError, OverflowError) as exc:
                failures.append(f"{path or '<root>'}: {rule['rule']!r}: evaluation error: {exc}")
                continue
            if not held:
                failures.append(f"{path or '<root>'}: Invalid value: {rule.get('message', rule['rule'])}")
    return failures


def problems(schema: Schema, document: Any) -> list[str]:
    """Every reason the API server would refuse `document` under `schema` (empty: it is admitted)."""
    validator = jsonschema.Draft202012Validator(strict_json_schema(schema))
    found = [
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]
    return found + (cel_failures(schema, document) if not found else [])


def load_vendored(path: Path) -> tuple[dict[str, str], Schema]:
    """(identity: group, version, kind, served; openAPIV3Schema) of a file written by `vendor`."""
    document = yaml.safe_load(path.read_text())
    return document["crd"], document["openAPIV3Schema"]


def vendor(git_dir: str, commit: str, crd_path: str, version: str, *, only_provider: str | None = None) -> str:
    """The text of a vendored schema: one served version of a CRD at `commit`, with its provenance."""
    show = ["git", "-C", git_dir, "show", f"{commit}:{crd_path}"]
    crd = yaml.safe_load(subprocess.run(show, capture_output=True, text=True, check=True).stdout)
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = copy.deepcopy(entry["schema"]["openAPIV3Schema"])
    note = "unmodified"
    if only_provider:
        provider = schema["properties"]["spec"]["properties"]["provider"]
        dropped = sorted(set(provider["properties"]) - {only_provider})
        provider["properties"] = {only_provider: provider["properties"][only_provider]}
        note = (
            f"unmodified except spec.provider, which keeps only `{only_provider}` (the {len(dropped)} other "
            "providers are cut for size; a manifest naming one of them is refused here as an unknown field)"
        )
    blob = subprocess.run(
        ["git", "-C", git_dir, "rev-parse", f"{commit}:{crd_path}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    provenance = (
        f"{crd['spec']['names']['kind']} {crd['spec']['group']}/{version}: the openAPIV3Schema of the CRD "
        f"https://github.com/external-secrets/external-secrets {crd_path} at commit {commit} (git blob {blob}), "
        f"{note}. Copyright The ESO Authors, Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0). "
        "Written by `python -m tests.infra.crd_schema vendor` (emulators/contracts/README.md)."
    )
    header = "".join(f"# {line}\n" for line in textwrap.wrap(provenance, 114, break_on_hyphens=False))
    identity = {
        "group": crd["spec"]["group"],
        "version": version,
        "kind": crd["spec"]["names"]["kind"],
        "scope": crd["spec"]["scope"],
        "served": entry["served"],
        "storage": entry["storage"],
    }
    body = {"crd": identity, "openAPIV3Schema": schema}
    return header + yaml.safe_dump(body, sort_keys=False, width=120, allow_unicode=True)


def main(argv: list[str]) -> int:
    if len(argv) < 6 or argv[0] != "vendor":
        print(__doc__, file=sys.stderr)
        return 2
    _, git_dir, commit, crd_path, version, out, *rest = argv
    only = rest[1] if rest[:1] == ["--only-provider"] else None
    Path(out).write_text(vendor(git_dir, commit, crd_path, version, only_provider=only))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
