"""Every resource, data source, argument and nested block under terraform/ exists in the provider schema, at
both ends of the version range terraform/versions.tf pins (schemas from `make provider-schema`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.infra import provider_schema, reality

TERRAFORM_DIR = reality.REPOSITORY_ROOT / "terraform"


@pytest.fixture(scope="module")
def schemas() -> dict[str, list[dict[str, Any]]]:
    found = provider_schema.load_schemas()
    if not {"google", "google-beta"} <= set(found):
        reality.missing(
            f"no google / google-beta provider schemas in {provider_schema.SCHEMA_DIR}: run make provider-schema"
        )
    return found


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_the_schemas_are_the_ends_of_the_pinned_range(schemas: dict[str, list[dict[str, Any]]]) -> None:
    versions_tf = (TERRAFORM_DIR / "versions.tf").read_text()
    for provider in ("google", "google-beta"):
        block = re.search(rf"\n\s*{re.escape(provider)} = \{{(.*?)\}}", versions_tf, re.DOTALL)
        assert block, provider
        constraint = re.fullmatch(
            r'\s*source\s*=\s*"hashicorp/[\w-]+"\s*version\s*=\s*">= ([0-9.]+), <= ([0-9.]+)"\s*', block.group(1)
        )
        assert constraint, f"{provider}: the range must be >= CHECKED_LOW, <= CHECKED_HIGH: {block.group(1)}"
        low, high = constraint.groups()
        checked = sorted(version(s["version"]) for s in schemas[provider])
        assert checked[0][: len(version(low))] == version(low), (provider, checked, low)
        # No release newer than the newest schema checked: `terraform init` cannot take an untested 7.x.
        assert checked[-1] == version(high), (provider, checked, high)


def test_every_resource_argument_and_block_exists_in_the_provider_schema(
    schemas: dict[str, list[dict[str, Any]]],
) -> None:
    problems = provider_schema.check_directory(TERRAFORM_DIR, schemas)
    assert not problems, "\n".join(problems)


def test_the_check_catches_misspellings_and_the_wrong_provider(
    schemas: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    for path in TERRAFORM_DIR.glob("*.tf"):
        shutil.copy(path, tmp_path / path.name)
    edits = {
        "function.tf": [
            ("ingress_settings                 = var.ingress_settings", "ingres_settings = var.ingress_settings"),
            ("        versions {", "        version {"),  # inside dynamic "secret_volumes"
            ('dynamic "direct_vpc_network_interface"', 'dynamic "direct_vpc_network_interfaces"'),
        ],
        "main.tf": [
            (
                '  provider = google-beta\n\n  project = var.project_id\n  service = "pubsub',
                '  project = var.project_id\n  service = "pubsub',
            )
        ],
        "pubsub.tf": [
            (
                'resource "google_pubsub_subscription" "dead_letter"',
                'resource "google_pubsub_subscriptions" "dead_letter"',
            )
        ],
    }
    for name, replacements in edits.items():
        text = (tmp_path / name).read_text()
        for old, new in replacements:
            assert old in text, (name, old)
            text = text.replace(old, new, 1)
        (tmp_path / name).write_text(text)
    problems = "\n".join(provider_schema.check_directory(tmp_path, schemas))
    for expected in (
        "adapter (google 7.45.0).service_config: no argument or block 'ingres_settings'",
        "adapter (google 7.31.0).service_config.secret_volumes: no argument or block 'version'",
        "service_config: no block 'direct_vpc_network_interfaces' (dynamic)",
        "google_project_service_identity.pubsub (google 7.45.0): no such resource type",
        "google_pubsub_subscriptions.dead_letter (google 7.31.0): no such resource type",
    ):
        assert expected in problems, f"{expected!r} not reported in:\n{problems}"
