"""Every `validation` block of terraform/variables.tf, evaluated by a real Terraform (`terraform test`).

The variables are copied alone into a scratch module (no providers, so `terraform init` is offline) and each
case becomes a plan-only test file: the defaults, example.tfvars and a few known-good values must plan; at
least one bad value per validation block must fail with that block's own error message. Python re-implementing
Terraform's functions (regex, startswith, can) is exactly what missed issue 10's defect 1, hence the binary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.infra import reality
from tests.infra.terraform_offline import hcl_literal, load, terraform_test

TERRAFORM_DIR = reality.REPOSITORY_ROOT / "terraform"
# Validations that refer to other variables (secret_id_template, timeout_seconds) need Terraform 1.9.

GOOD: dict[str, dict[str, Any]] = {
    "example": {},
    "token_beside_the_cluster_secrets": {
        # The case of issue 10, defect 4: an API token in the project that holds the cluster secrets.
        "hyperfleet_api_token_secret": "projects/hyperfleet-secrets-prod/secrets/hyperfleet-api-token",
    },
    "namespace_pattern_with_alternatives": {"management_namespace_pattern": "^(clusters|hcp)-[a-z0-9-]{1,40}$"},
    "cmek_per_location": {
        "secret_replication_locations": ["europe-west1", "europe-west4"],
        "secret_kms_key": "projects/hyperfleet-kms-prod/locations/{location}/keyRings/r/cryptoKeys/k",
    },
    "private_cluster_over_vpc": {
        "vpc_network": "projects/hyperfleet-net-prod/global/networks/shared",
        "vpc_subnetwork": "projects/hyperfleet-net-prod/regions/europe-west1/subnetworks/functions",
        "vpc_egress": "ALL_TRAFFIC",
        "ingress_settings": "ALLOW_INTERNAL_ONLY",
        "manual_invokers": ["group:hyperfleet-oncall@example.com"],
    },
    "rotation_record_in_the_functions_project": {
        "pinned_secret_project_id": "",
        "secret_project_ids": ["hyperfleet-adapters-prod", "customer-project-1"],
    },
    "second_region": {"name_suffix": "us", "operators": ["group:hyperfleet-oncall@example.com"]},
    # Issue 51: a doctor window in the past is harmless (IAM refuses it), a recorded commit, an environment that
    # shares on purpose.
    "doctor_window": {
        "operators": ["group:hyperfleet-oncall@example.com"],
        "operator_doctor_until": "2026-11-30T18:00:00Z",
    },
    "recorded_commit": {"source_commit": "5eec32f0" * 5},
    "environment_sharing_on_purpose": {"environment": "staging", "secret_project_shared_with": ["production"]},
    "short_timeout_without_rotation": {"enable_source_rotation": False, "timeout_seconds": 90},
    # HYPERFLEET_API_AUTH=google-id-token: no token secret to name, mount or grant (issue 19).
    "google_id_token_without_a_token": {"hyperfleet_api_auth": "google-id-token", "hyperfleet_api_token_secret": ""},
    "external_secrets_delivery": {"kubernetes_delivery": "external-secrets"},
    # HYPERFLEET_API_AUTH=service-account-token behind hyperfleet-gateway (issue 39), the service the same way.
    "service_account_token": {
        "hyperfleet_api_auth": "service-account-token",
        "hyperfleet_api_token_secret": "",
        "hyperfleet_token_cluster": "projects/hyperfleet-regional-prod/locations/us-central1/clusters/regional-1",
    },
    # Private root CAs (ca_bundles.tf): one PEM for HyperFleet's gateway and the service, another for registries.
    "ca_bundles": {
        "pull_secret_source_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "enable_source_rotation": False,
        "hyperfleet_api_ca_bundle_secret": "projects/hyperfleet-adapters-prod/secrets/gateway-root-ca",
        "pull_secret_service_ca_bundle_secret": "projects/hyperfleet-adapters-prod/secrets/gateway-root-ca",
        "registry_ca_bundle_secret": "projects/hyperfleet-adapters-prod/secrets/registry-roots",
    },
    "on_premises_registries": {"registry_allowed_hosts": ["registry.corp.example:5000", "10.1.2.3", "[fd00::5]:443"]},
    "no_trusted_realms": {"registry_trusted_realms": []},
    # Service mode (issue 29): the Pull Secret Service in place of the platform pull secret, both auth modes.
    "service_google_id_token": {
        "pull_secret_source_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "enable_source_rotation": False,
    },
    "service_token_file": {
        "pull_secret_source_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com/api/",
        "pull_secret_service_auth": "token-file",
        "pull_secret_service_token_secret": "projects/hyperfleet-adapters-prod/secrets/pull-secret-service-token",
        "pull_secret_service_registries": ["quay"],
        "enable_source_rotation": False,
    },
    "service_audience": {
        "pull_secret_source_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "pull_secret_service_audience": "pull-secret-service",
        "enable_source_rotation": False,
    },
    # Issue 50, item 4: one token cluster and account for both, each credential with its own audience (the
    # service's: its URL).
    "service_account_token_both": {
        "pull_secret_source_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "enable_source_rotation": False,
        "hyperfleet_api_auth": "service-account-token",
        "hyperfleet_api_token_secret": "",
        "hyperfleet_token_cluster": "projects/hyperfleet-regional-prod/locations/us-central1/clusters/regional-1",
        "pull_secret_service_auth": "service-account-token",
    },
    "google_id_token_both": {
        "pull_secret_source_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "enable_source_rotation": False,
        "hyperfleet_api_auth": "google-id-token",
        "hyperfleet_api_token_secret": "",
    },
}

SERVICE = {
    "pull_secret_source_secret": "",
    "pull_secret_service_url": "https://pull-secrets.example.com",
    "enable_source_rotation": False,
}

# (variable, index of its validation block, overrides of example.tfvars)
BAD: list[tuple[str, int, dict[str, Any]]] = [
    ("project_id", 0, {"project_id": "Hyperfleet_Prod"}),
    ("region", 0, {"region": "europe"}),
    ("function_name", 0, {"function_name": "Hyperfleet"}),
    ("labels", 0, {"labels": {"Team": "x"}}),
    ("existing_cluster_events_topic", 0, {"existing_cluster_events_topic": "topics/events"}),
    ("cluster_events_topic_name", 0, {"cluster_events_topic_name": "goog-events"}),
    ("cluster_events_publishers", 0, {"cluster_events_publishers": ["allUsers"]}),
    ("message_retention_duration", 0, {"message_retention_duration": "599s"}),
    ("pubsub_kms_key_name", 0, {"pubsub_kms_key_name": "my-key"}),
    ("dead_letter_max_delivery_attempts", 0, {"dead_letter_max_delivery_attempts": 4}),
    ("rotation_publish_rate", 0, {"rotation_publish_rate": 0}),
    # Service mode has no platform pull secret to fan out: refused, not silently ignored.
    ("enable_source_rotation", 0, {**SERVICE, "enable_source_rotation": True}),
    # Issue 42, item 5: no pinned project, and the function's project (where the progress record goes) not granted.
    ("enable_source_rotation", 1, {"pinned_secret_project_id": "", "secret_project_ids": ["customer-project-1"]}),
    ("pinned_secret_project_id", 0, {"pinned_secret_project_id": "Secrets"}),
    ("secret_project_ids", 0, {"secret_project_ids": ["Secrets"]}),
    ("pull_secret_source_secret", 0, {"pull_secret_source_secret": "platform-pull-secret"}),
    ("pull_secret_source_version", 0, {"pull_secret_source_version": "0"}),
    ("pull_secret_service_url", 0, {**SERVICE, "pull_secret_service_url": "http://pull-secrets.example.com"}),
    ("pull_secret_service_url", 0, {**SERVICE, "pull_secret_service_url": "https://u:p@pull-secrets.example.com"}),
    ("pull_secret_service_url", 0, {**SERVICE, "pull_secret_service_url": "https://pull-secrets.example.com/?a=b"}),
    # Exactly one of the platform pull secret and the service: both, and neither.
    (
        "pull_secret_service_url",
        1,
        {**SERVICE, "pull_secret_source_secret": "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret"},
    ),
    ("pull_secret_service_url", 1, {"pull_secret_source_secret": ""}),
    ("pull_secret_service_auth", 0, {**SERVICE, "pull_secret_service_auth": "oidc"}),
    ("hyperfleet_token_cluster", 0, {"hyperfleet_token_cluster": "projects/p-1234/locations/l/clusters/c"}),  # unused
    (
        "hyperfleet_token_cluster",
        0,
        {"hyperfleet_api_auth": "service-account-token", "hyperfleet_api_token_secret": ""},  # required
    ),
    ("hyperfleet_service_account", 0, {"hyperfleet_service_account": "pullsecret-adapter"}),
    ("hyperfleet_api_auth_scheme", 0, {"hyperfleet_api_auth_scheme": "Basic"}),
    ("pull_secret_service_audience", 0, {**SERVICE, "pull_secret_service_audience": "pull secrets"}),
    ("pull_secret_service_audience", 0, {"pull_secret_service_audience": "pull-secret-service"}),  # platform mode
    # Issue 50, item 4: one identity for two audiences: the service would receive tokens the HyperFleet API admits.
    (
        "pull_secret_service_audience",
        1,
        {
            **SERVICE,
            "hyperfleet_api_auth": "service-account-token",
            "hyperfleet_api_token_secret": "",
            "hyperfleet_token_cluster": "projects/hyperfleet-regional-prod/locations/us-central1/clusters/regional-1",
            "pull_secret_service_auth": "service-account-token",
            "pull_secret_service_audience": "hyperfleet-api",
        },
    ),
    (
        "pull_secret_service_audience",
        1,
        {
            **SERVICE,
            "pull_secret_service_url": "https://pull-secrets.example.com//",  # empty audience: the URL, unslashed
            "hyperfleet_api_auth": "google-id-token",
            "hyperfleet_api_token_secret": "",
            "hyperfleet_api_audience": "https://pull-secrets.example.com",
        },
    ),
    (
        "pull_secret_service_token_secret",
        1,
        {
            **SERVICE,
            "pull_secret_service_auth": "token-file",
            "pull_secret_service_token_secret": "projects/hyperfleet-adapters-prod/secrets/hyperfleet-api-token",
        },
    ),
    # token-file needs a token secret, google-id-token none, platform mode none.
    ("pull_secret_service_token_secret", 0, {**SERVICE, "pull_secret_service_auth": "token-file"}),
    (
        "pull_secret_service_token_secret",
        0,
        {**SERVICE, "pull_secret_service_auth": "token-file", "pull_secret_service_token_secret": "token"},
    ),
    (
        "pull_secret_service_token_secret",
        0,
        {**SERVICE, "pull_secret_service_token_secret": "projects/hyperfleet-adapters-prod/secrets/pss-token"},
    ),
    (
        "pull_secret_service_token_secret",
        0,
        {"pull_secret_service_token_secret": "projects/hyperfleet-adapters-prod/secrets/pss-token"},
    ),
    ("pull_secret_service_registries", 0, {**SERVICE, "pull_secret_service_registries": []}),
    ("pull_secret_service_registries", 0, {**SERVICE, "pull_secret_service_registries": ["Quay"]}),
    ("pull_secret_service_registries", 0, {**SERVICE, "pull_secret_service_registries": ["r"] * 9}),
    ("pull_secret_service_registries", 0, {**SERVICE, "pull_secret_service_registries": ["a" * 33]}),
    ("secret_id_template", 0, {"secret_id_template": "{cluster_id}"}),
    ("secret_id_template", 0, {"secret_id_template": "hyperfleet-{cluster_id}"}),
    (
        "secret_id_template",
        1,
        {"hyperfleet_api_token_secret": "projects/hyperfleet-secrets-prod/secrets/hyperfleet-token-pull-secret"},
    ),
    (
        "secret_id_template",
        1,
        {
            "secret_id_template": "platform-{cluster_id}-secret",
            "pull_secret_source_secret": "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret",
        },
    ),
    (
        # The service token in a secret project, named like the cluster secrets: the runtime grant would cover it.
        "secret_id_template",
        1,
        {
            **SERVICE,
            "pull_secret_service_auth": "token-file",
            "pull_secret_service_token_secret": "projects/hyperfleet-secrets-prod/secrets/hyperfleet-pss-pull-secret",
        },
    ),
    ("secret_replication_locations", 0, {"secret_replication_locations": ["Europe"]}),
    ("secret_kms_key", 0, {"secret_kms_key": "key"}),
    ("deletion_policy", 0, {"deletion_policy": "KEEP"}),
    ("retain_versions", 0, {"retain_versions": 0}),
    ("hyperfleet_api_url", 0, {"hyperfleet_api_url": "http://hyperfleet.example.com"}),
    ("hyperfleet_api_token_secret", 0, {"hyperfleet_api_token_secret": "hyperfleet-api-token"}),
    ("hyperfleet_api_token_secret", 0, {"hyperfleet_api_token_secret": ""}),  # token-file needs one
    ("hyperfleet_api_token_secret", 0, {"hyperfleet_api_auth": "google-id-token"}),  # and google-id-token none
    ("hyperfleet_api_auth", 0, {"hyperfleet_api_auth": "oidc"}),
    ("hyperfleet_api_audience", 0, {"hyperfleet_api_audience": "hyperfleet api"}),
    ("kubernetes_delivery", 0, {"kubernetes_delivery": "eso"}),
    ("external_secrets_service_account", 0, {"external_secrets_service_account": "Reader_SA"}),
    ("hyperfleet_status_method", 0, {"hyperfleet_status_method": "PATCH"}),
    ("adapter_name", 0, {"adapter_name": "Pull_Secret"}),
    ("precondition_adapters", 0, {"precondition_adapters": ["DNS"]}),
    ("management_cluster", 0, {"management_cluster": "projects/hyperfleet-mgmt-prod/clusters/mc-eu-1"}),
    ("management_cluster_project_ids", 0, {"management_cluster_project_ids": ["Mgmt"]}),
    ("management_endpoint", 0, {"management_endpoint": "private"}),
    ("management_namespace_template", 0, {"management_namespace_template": "clusters"}),
    ("kubernetes_secret_template", 0, {"kubernetes_secret_template": "{cluster_id}-Pull'secret"}),
    ("management_namespace_pattern", 0, {"management_namespace_pattern": "^(clusters-[a-z0-9-]+$"}),
    ("management_namespace_pattern", 0, {"management_namespace_pattern": "clusters-[a-z0-9-]+"}),
    ("runtime", 0, {"runtime": "python310"}),
    ("log_level", 0, {"log_level": "TRACE"}),
    ("max_event_age_seconds", 0, {"max_event_age_seconds": 59}),
    ("available_memory", 0, {"available_memory": "512MB"}),
    ("available_cpu", 0, {"available_cpu": "0.5"}),
    ("ingress_settings", 0, {"ingress_settings": "ALLOW_INTERNAL"}),
    ("manual_invokers", 0, {"manual_invokers": ["allAuthenticatedUsers"]}),
    ("operators", 0, {"operators": ["allUsers"]}),
    ("name_suffix", 0, {"name_suffix": "eu-west"}),  # a hyphen would break the custom role ids
    ("name_suffix", 0, {"name_suffix": "europe1x"}),  # 8: hf-pullsecret-trigger-SUFFIX is over 30
    ("retry_deadline_seconds", 0, {"retry_deadline_seconds": 0}),
    ("vpc_network", 0, {"vpc_network": "Shared Net"}),
    ("vpc_subnetwork", 0, {"vpc_subnetwork": "functions"}),
    ("vpc_egress", 0, {"vpc_egress": "ALL"}),
    ("registry_verification", 0, {"registry_verification": "warn"}),
    ("registry_allowed_hosts", 0, {"registry_allowed_hosts": ["https://registry.corp.example"]}),
    ("registry_trusted_realms", 0, {"registry_trusted_realms": ["registry.redhat.io=https://sso.redhat.com"]}),
    ("timeout_seconds", 0, {"timeout_seconds": 541}),
    ("timeout_seconds", 1, {"enable_source_rotation": False, "retry_deadline_seconds": 100, "timeout_seconds": 120}),
    ("timeout_seconds", 2, {"timeout_seconds": 300}),
    ("max_instance_request_concurrency", 0, {"max_instance_request_concurrency": 0}),
    ("max_instance_count", 0, {"max_instance_count": 101}),
    ("min_instance_count", 0, {"min_instance_count": 11}),
    ("notification_channel_ids", 0, {"notification_channel_ids": ["channels/1"]}),
    ("failure_rate_threshold", 0, {"failure_rate_threshold": 1}),
    ("api_error_threshold", 0, {"api_error_threshold": -1}),
    ("fleet_metric_prefix", 0, {"fleet_metric_prefix": "Second-"}),
    ("external_secrets_refresh_interval", 0, {"external_secrets_refresh_interval": "0m"}),
    ("hyperfleet_system_header", 0, {"hyperfleet_system_header": "X HyperFleet System"}),
    ("slow_reconcile_threshold_ms", 0, {"slow_reconcile_threshold_ms": 999}),
    ("slow_reconcile_threshold_ms", 1, {"slow_reconcile_threshold_ms": 300000}),
    ("api_propagation_wait_seconds", 0, {"api_propagation_wait_seconds": 10}),
    ("iam_propagation_wait_seconds", 0, {"iam_propagation_wait_seconds": 30}),  # below the provider example's 60 s
    ("log_metric_wait_seconds", 0, {"log_metric_wait_seconds": 1801}),
    ("hyperfleet_api_ca_bundle_secret", 0, {"hyperfleet_api_ca_bundle_secret": "gateway-root-ca"}),
    ("pull_secret_service_ca_bundle_secret", 0, {"pull_secret_service_ca_bundle_secret": "projects/p-1234/secrets/ca"}),
    ("registry_ca_bundle_secret", 0, {"registry_ca_bundle_secret": "projects/hyperfleet-adapters-prod/secrets/"}),
    ("operator_doctor_until", 0, {"operator_doctor_until": "2999-01-01T00:00:00Z"}),  # a standing grant in disguise
    ("operator_doctor_until", 0, {"operator_doctor_until": "tomorrow"}),
    ("source_commit", 0, {"source_commit": "5eec32f"}),  # a short id could name two commits
    ("environment", 0, {"environment": "Production"}),
    ("secret_project_shared_with", 0, {"secret_project_shared_with": ["all", "Prod"]}),
]


@pytest.fixture(scope="module")
def variables() -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for block in load(TERRAFORM_DIR / "variables.tf").get("variable", []):
        merged.update(block)
    return merged


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return load(TERRAFORM_DIR / "example.tfvars")


def case_text(values: dict[str, Any]) -> str:
    body = "\n".join(f"    {key} = {hcl_literal(value)}" for key, value in sorted(values.items()))
    return f'run "check" {{\n  command = plan\n  variables {{\n{body}\n  }}\n}}\n'


def run_cases(variables_tf: Path, cases: dict[str, dict[str, Any]], work: Path) -> dict[str, dict[str, Any]]:
    """Plan every case with the real terraform; {case: {"status": ..., "errors": [detail, ...]}}."""
    return terraform_test([variables_tf], {name: case_text(values) for name, values in cases.items()}, work)


def cases_of(variables: dict[str, dict[str, Any]], example: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # hyperfleet_api_token_secret defaults to "" (google-id-token) but is required in the default token-file mode;
    # pull_secret_source_secret defaults to "" (service mode) but is required without pull_secret_service_url;
    # pinned_secret_project_id (or project_id among secret_project_ids) with source rotation on, the default.
    required = {name for name, body in variables.items() if "default" not in body} | {
        "hyperfleet_api_token_secret",
        "pull_secret_source_secret",
        "pinned_secret_project_id",
    }
    cases = {"defaults": {name: example[name] for name in required}}
    for name, overrides in GOOD.items():
        cases[f"good_{name}"] = {**example, **overrides}
    for index, (_, _, overrides) in enumerate(BAD):
        cases[f"bad_{index:02d}"] = {**example, **overrides}
    return cases


def test_every_validation_block_has_a_bad_value(variables: dict[str, dict[str, Any]]) -> None:
    blocks = {(name, i) for name, body in variables.items() for i in range(len(body.get("validation", [])))}
    covered = {(name, index) for name, index, _ in BAD}
    assert not blocks - covered, f"validation blocks without a bad value in BAD: {sorted(blocks - covered)}"
    assert not covered - blocks, f"BAD names validation blocks that do not exist: {sorted(covered - blocks)}"


def test_real_terraform_accepts_the_good_values_and_refuses_each_bad_one(
    variables: dict[str, dict[str, Any]], example: dict[str, Any], tmp_path: Path
) -> None:
    results = run_cases(TERRAFORM_DIR / "variables.tf", cases_of(variables, example), tmp_path)
    problems = []
    for name, result in results.items():
        if not name.startswith("bad_") and result["status"] != "pass":
            problems.append(f"{name} should plan but did not: {result['errors']}")
    for index, (variable, block, overrides) in enumerate(BAD):
        result = results[f"bad_{index:02d}"]
        message = variables[variable]["validation"][block]["error_message"]
        if result["status"] == "pass" or not any(message in error for error in result["errors"]):
            problems.append(
                f"{variable} validation #{block} did not refuse {overrides}: {result['status']} {result['errors']}"
            )
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_validation_that_refuses_its_own_default(tmp_path: Path) -> None:
    # Issue 10, defect 1: can(regex(pattern, "probe")) is false for the anchored default.
    variables_tf = tmp_path / "variables.tf"
    variables_tf.write_text(
        'variable "pattern" {\n  type    = string\n  default = "^clusters-[a-z0-9-]+$"\n'
        '  validation {\n    condition     = can(regex(var.pattern, "probe"))\n'
        '    error_message = "The pattern must be valid RE2."\n  }\n}\n'
    )
    results = run_cases(variables_tf, {"defaults": {}}, tmp_path / "work")
    assert results["defaults"]["status"] != "pass"
    assert any("The pattern must be valid RE2." in error for error in results["defaults"]["errors"])
