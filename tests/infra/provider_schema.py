"""The google / google-beta provider schemas, read offline from the CDK bindings' jsii assemblies, and a check
of every resource, data source, argument and nested block under terraform/ against them.

`python -m tests.infra.provider_schema build WHEEL_DIR OUT_DIR` turns each wheel of
requirements-provider-schema.txt (prebuilt CDK bindings generated from the provider's own schema, versions at
both ends of the range in terraform/versions.tf) into OUT_DIR/<provider>-<version>.json:
{"provider", "version", "provider_config", "resources": {type: block}, "data_sources": {type: block}} where a
block is {"arguments": [...], "blocks": {name: block}} (arguments that may be set; computed-only attributes are
not in the bindings' config types, so setting one is reported too).
`make provider-schema` fetches the wheels (`fetch`), builds the schemas and deletes the wheels (the JSON files,
under 2 MB each, are the cache in .cache/provider-schema); `check TERRAFORM_DIR` runs the check (make infra-check).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import hcl2
from hcl2 import SerializationOptions

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = REPOSITORY_ROOT / ".cache" / "provider-schema"
OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
META_ARGUMENTS = {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}
REPRESENTS = re.compile(
    r"Represents a \{@link https://registry\.terraform\.io/providers/hashicorp/(google(?:-beta)?)/([0-9.]+)/docs"
    r"(?:/(resources|data-sources)/\w+ (\w+))?[ }]"
)
ANCHOR = re.compile(r"#(\w+) \w+#\w+\}")

Block = dict[str, Any]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _struct_fqns(type_ref: dict[str, Any]) -> list[str]:
    if "fqn" in type_ref:
        return [type_ref["fqn"]]
    if "collection" in type_ref:
        return _struct_fqns(type_ref["collection"]["elementtype"])
    if "union" in type_ref:
        return [fqn for member in type_ref["union"]["types"] for fqn in _struct_fqns(member)]
    return []


class Assembly:
    def __init__(self, assembly: dict[str, Any]) -> None:
        self.types: dict[str, Any] = assembly["types"]
        self._blocks: dict[str, Block] = {}

    def _properties(self, fqn: str) -> list[dict[str, Any]]:
        spec = self.types.get(fqn)
        if spec is None:  # e.g. cdktn.TerraformMetaArguments: count, for_each, ... (META_ARGUMENTS)
            return []
        properties = list(spec.get("properties", []))
        for parent in spec.get("interfaces", []):
            properties.extend(self._properties(parent))
        return properties

    def block(self, fqn: str, depth: int = 0) -> Block:
        if fqn in self._blocks:
            return self._blocks[fqn]
        arguments: list[str] = []
        blocks: dict[str, Block] = {}
        for prop in self._properties(fqn):
            remarks = prop.get("docs", {}).get("remarks", "")
            anchor = ANCHOR.search(remarks)
            name = anchor.group(1) if anchor else _snake(prop["name"])
            nested = [f for f in _struct_fqns(prop["type"]) if self.types.get(f, {}).get("datatype") and f != fqn]
            if nested and depth < 12:
                blocks[name] = self.block(nested[0], depth + 1)
            else:
                arguments.append(name)
        result = {"arguments": sorted(set(arguments)), "blocks": blocks}
        self._blocks[fqn] = result
        return result

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resources": {}, "data_sources": {}}
        for spec in self.types.values():
            if spec.get("kind") != "class":
                continue
            match = REPRESENTS.search(spec.get("docs", {}).get("summary", ""))
            if not match:
                continue
            provider, version, kind, type_name = match.groups()
            config = next(
                (p["type"]["fqn"] for p in spec.get("initializer", {}).get("parameters", []) if p["name"] == "config"),
                None,
            )
            if config is None:
                continue
            out["provider"], out["version"] = provider, version
            if kind is None:
                out["provider_config"] = self.block(config)
            else:
                out["resources" if kind == "resources" else "data_sources"][type_name] = self.block(config)
        return out


def _assembly_from_wheel(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(archive.read(member)), mode="r:gz") as tgz:
            handle = tgz.extractfile("package/.jsii")
            assert handle is not None
            loaded: dict[str, Any] = json.load(handle)
            return loaded


def build(wheel_dir: Path, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for wheel in sorted(wheel_dir.glob("*.whl")):
        schema = Assembly(_assembly_from_wheel(wheel)).schema()
        path = out_dir / f"{schema['provider']}-{schema['version']}.json"
        path.write_text(json.dumps(schema, sort_keys=True))
        written.append(path)
        print(f"provider_schema: {wheel.name} -> {path.name} ({len(schema['resources'])} resources)")
    return written


def load_schemas(directory: Path = SCHEMA_DIR) -> dict[str, list[dict[str, Any]]]:
    """{provider: [schema, ...]} for every schema file in DIRECTORY."""
    schemas: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(directory.glob("*.json")):
        schema = json.loads(path.read_text())
        schemas.setdefault(schema["provider"], []).append(schema)
    return schemas


def _check_body(body: dict[str, Any], block: Block, where: str, meta: bool) -> list[str]:
    problems = []
    for key, value in body.items():
        if key.startswith("__") or (meta and key in META_ARGUMENTS):
            continue
        if key == "dynamic":
            for dynamic in value:
                for label, spec in dynamic.items():
                    if label not in block["blocks"]:
                        problems.append(f"{where}: no block {label!r} (dynamic)")
                        continue
                    for content in spec.get("content", []):
                        problems.extend(_check_body(content, block["blocks"][label], f"{where}.{label}", False))
            continue
        if key in block["arguments"]:
            continue
        if key in block["blocks"]:
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                problems.append(f"{where}: {key!r} is a block, written as an argument")
                continue
            for nested in value:
                problems.extend(_check_body(nested, block["blocks"][key], f"{where}.{key}", False))
            continue
        problems.append(f"{where}: no argument or block {key!r}")
    return problems


def _provider_of(kind: str, body: dict[str, Any]) -> str | None:
    if not kind.startswith("google_"):
        return None  # terraform_data, archive_file, ...: not the google providers
    provider = str(body.get("provider", "google")).strip("${}")
    return provider.split(".")[0]


def check_directory(directory: Path, schemas: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every problem of the .tf files in DIRECTORY against every schema of the provider each block uses."""
    problems = []
    for path in sorted(directory.glob("*.tf")):
        with path.open() as handle:
            parsed = hcl2.load(handle, serialization_options=OPTIONS)
        sections = [("resource", "resources"), ("data", "data_sources")]
        for section, key in sections:
            for entry in parsed.get(section, []):
                for kind, named in entry.items():
                    for name, body in named.items():
                        provider = _provider_of(kind, body)
                        if provider is None:
                            continue
                        if provider not in schemas:
                            problems.append(f"{path.name}: {section} {kind}.{name}: no schema of {provider}")
                        for schema in schemas.get(provider, []):
                            where = f"{path.name}: {section} {kind}.{name} ({provider} {schema['version']})"
                            if kind not in schema[key]:
                                problems.append(f"{where}: no such {section} type")
                                continue
                            problems.extend(_check_body(body, schema[key][kind], where, True))
        for entry in parsed.get("provider", []):
            for provider, body in entry.items():
                for schema in schemas.get(provider, []):
                    where = f"{path.name}: provider {provider} ({schema['version']})"
                    problems.extend(_check_body(body, schema["provider_config"], where, True))
    return problems


def fetch(requirements: Path, wheel_dir: Path) -> None:
    """pip download each hash-pinned line on its own (pip refuses two versions of one package in one run)."""
    lines = [line for line in requirements.read_text().splitlines() if line.strip() and not line.startswith("#")]
    with tempfile.TemporaryDirectory() as work:
        for index, line in enumerate(lines):
            single = Path(work) / f"{index}.txt"
            single.write_text(line + "\n")
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
            command += ["--no-deps", "--require-hashes", "-r", str(single), "-d", str(wheel_dir)]
            subprocess.run(command, check=True)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "fetch":
        fetch(Path(argv[1]), Path(argv[2]))
        return 0
    if len(argv) == 3 and argv[0] == "build":
        return 0 if build(Path(argv[1]), Path(argv[2])) else 1
    if len(argv) == 2 and argv[0] == "check":
        schemas = load_schemas()
        if not schemas:
            print(f"provider_schema: no schemas in {SCHEMA_DIR}; run make provider-schema", file=sys.stderr)
            return 2
        problems = check_directory(Path(argv[1]), schemas)
        for problem in problems:
            print(f"provider_schema: {problem}", file=sys.stderr)
        versions = ", ".join(f"{s['provider']} {s['version']}" for v in schemas.values() for s in v)
        print(f"provider_schema: {argv[1]} checked against {versions}: {len(problems)} problem(s)")
        return 1 if problems else 0
    print(
        "usage: python -m tests.infra.provider_schema fetch REQUIREMENTS WHEEL_DIR | build WHEEL_DIR OUT_DIR"
        " | check TERRAFORM_DIR",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
