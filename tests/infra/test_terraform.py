"""Static checks of terraform/: parse the HCL (python-hcl2) and assert what the platform team relies on."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hcl2
import pytest
from hcl2 import SerializationOptions

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TERRAFORM_DIR = REPOSITORY_ROOT / "terraform"
OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)

REQUIRED_APIS = {
    "secretmanager.googleapis.com",
    "container.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "cloudfunctions.googleapis.com",
    "eventarc.googleapis.com",
    "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "iamcredentials.googleapis.com",
    "iam.googleapis.com",
    "cloudresourcemanager.googleapis.com",
}
FUNCTION_ENVIRONMENT = {
    "HYPERFLEET_API_URL",
    "HYPERFLEET_API_TOKEN_FILE",
    "HYPERFLEET_STATUS_METHOD",
    "ADAPTER_NAME",
    "PRECONDITION_ADAPTERS",
    "PULL_SECRET_SOURCE",
    "SECRET_PROJECT_ID",
    "ALLOWED_SECRET_PROJECTS",
    "MANAGEMENT_CLUSTER",
    "MANAGEMENT_NAMESPACE_TEMPLATE",
    "MANAGEMENT_NAMESPACE_PATTERN",
    "LOG_LEVEL",
    "MAX_EVENT_AGE",
    "SECRET_REPLICATION_LOCATIONS",
    "SECRET_KMS_KEY",
    "DELETION_POLICY",
    "RETAIN_VERSIONS",
    "ADAPTER_TOPIC",
    "ROTATION_PUBLISH_RATE",
    "ROTATION_SLICE",
    "REGISTRY_VERIFICATION",
    "SECRET_ID_TEMPLATE",
    "RETRY_DEADLINE",
    "VPC_EGRESS",
}
SECRET_MANAGER_PERMISSIONS = {
    "secretmanager.secrets.get",
    "secretmanager.versions.add",
    "secretmanager.versions.access",
    "secretmanager.versions.get",
    "secretmanager.versions.list",
    "secretmanager.versions.destroy",
    "secretmanager.versions.disable",
}
IAM_RESOURCE_SUFFIXES = ("_iam_member", "_iam_binding", "_iam_policy")


class Config:
    """All .tf files of one directory, merged: resources keyed by (type, name)."""

    def __init__(self, directory: Path) -> None:
        self.resources: dict[tuple[str, str], dict[str, Any]] = {}
        self.data: dict[tuple[str, str], dict[str, Any]] = {}
        self.variables: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.locals: dict[str, Any] = {}
        self.terraform: list[dict[str, Any]] = []
        self.text: dict[str, str] = {}
        for path in sorted(directory.glob("*.tf")):
            self.text[path.name] = path.read_text()
            with path.open() as handle:
                parsed = hcl2.load(handle, serialization_options=OPTIONS)
            for block in parsed.get("resource", []):
                for kind, named in block.items():
                    for name, body in named.items():
                        assert (kind, name) not in self.resources, f"duplicate resource {kind}.{name}"
                        self.resources[(kind, name)] = body
            for block in parsed.get("data", []):
                for kind, named in block.items():
                    for name, body in named.items():
                        self.data[(kind, name)] = body
            for block in parsed.get("variable", []):
                self.variables.update(block)
            for block in parsed.get("output", []):
                self.outputs.update(block)
            for block in parsed.get("locals", []):
                self.locals.update(block)
            self.terraform.extend(parsed.get("terraform", []))

    def resource(self, kind: str, name: str) -> dict[str, Any]:
        assert (kind, name) in self.resources, f"missing resource {kind}.{name}"
        return self.resources[(kind, name)]

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {name: body for (k, name), body in self.resources.items() if k == kind}

    def iam_resources(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        for (kind, name), body in self.resources.items():
            if kind.endswith(IAM_RESOURCE_SUFFIXES):
                yield kind, name, body

    @property
    def all_text(self) -> str:
        return "\n".join(self.text.values())


@pytest.fixture(scope="module")
def config() -> Config:
    return Config(TERRAFORM_DIR)


def block(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The single nested block NAME of a resource body."""
    value = body[name]
    assert isinstance(value, list) and len(value) == 1, f"expected one {name} block, got {value!r}"
    result = value[0]
    assert isinstance(result, dict)
    return result


def test_expected_files_exist() -> None:
    for name in ("versions.tf", "variables.tf", "main.tf", "iam.tf", "outputs.tf", "README.md", "example.tfvars"):
        assert (TERRAFORM_DIR / name).is_file(), name


def test_google_provider_and_no_backend_in_the_module(config: Config) -> None:
    # The module requires its providers; each root under environments/ configures them and its backend.
    providers = {}
    backends = []
    for block_ in config.terraform:
        for entry in block_.get("required_providers", []):
            providers.update(entry)
        backends.extend(block_.get("backend", []))
    assert providers["google"]["source"] == "hashicorp/google"
    assert not backends and not re.search(r'^provider "', config.all_text, re.M)
    for root in sorted((TERRAFORM_DIR / "environments").iterdir()):
        assert 'backend "gcs"' in (root / "backend.tf").read_text(), root.name


def test_every_required_api_is_enabled_and_kept_on_destroy(config: Config) -> None:
    # The Cloud Resource Manager API is a resource of its own (test_data_source_deferral.py says why).
    manager = config.resource("google_project_service", "resource_manager")
    enabled = {*config.locals["required_apis"], manager["service"]}
    assert enabled >= REQUIRED_APIS
    apis = config.resource("google_project_service", "apis")
    assert apis["for_each"] == "${toset(local.required_apis)}"
    assert apis["service"] == "${each.value}"
    for name, body in config.of_type("google_project_service").items():
        assert body["disable_on_destroy"] is False, name


def test_cluster_events_topic_is_created_or_taken_from_a_variable(config: Config) -> None:
    topic = config.resource("google_pubsub_topic", "cluster_events")
    assert topic["count"] == "${local.create_cluster_events_topic ? 1 : 0}"
    assert "existing_cluster_events_topic" in config.variables
    assert config.locals["create_cluster_events_topic"] == '${var.existing_cluster_events_topic == ""}'
    assert "var.existing_cluster_events_topic" in config.locals["cluster_events_topic_id"]
    for name in ("cluster_events", "dead_letter"):
        body = config.resource("google_pubsub_topic", name)
        assert body["message_retention_duration"] == "${var.message_retention_duration}"
        assert body["kms_key_name"] == "${local.pubsub_kms_key_name}"
    dead_letter_sub = config.resource("google_pubsub_subscription", "dead_letter")
    assert dead_letter_sub["topic"] == "${google_pubsub_topic.dead_letter.id}"


def test_identities_exist_and_no_keys_anywhere(config: Config) -> None:
    accounts = config.of_type("google_service_account")
    assert {"runtime", "trigger"} <= set(accounts)
    assert not config.of_type("google_service_account_key")
    assert "google_service_account_key" not in config.all_text


# The build account's storage grant as Google documents it for a Cloud Run functions build account
# (https://cloud.google.com/functions/docs/securing/build-custom-sa: roles/storage.objectAdmin, no condition) and
# as the provider's builder example grants it; no document gives a narrower grant that builds (issue 32, item 4).
BUILD_STORAGE_GRANT = ("google_project_iam_member", "build_source_reader", "roles/storage.objectAdmin")


def test_the_build_account_has_the_documented_storage_grant(config: Config) -> None:
    build = "${google_service_account.build.member}"
    storage = [
        (kind, name, body)
        for kind, name, body in config.iam_resources()
        if body["member"] == build and body["role"].startswith("roles/storage.")
    ]
    assert [(kind, name, body["role"]) for kind, name, body in storage] == [BUILD_STORAGE_GRANT]
    ((_kind, _name, body),) = storage
    assert body["project"] == "${var.project_id}"
    assert "condition" not in body, "a condition on the build account's storage grant is documented nowhere"
    readme = (REPOSITORY_ROOT / "terraform" / "README.md").read_text()
    assert "`roles/storage.objectAdmin` (project" in readme


def test_no_primitive_admin_or_public_grants(config: Config) -> None:
    roles = []
    for kind, name, body in config.iam_resources():
        assert kind.endswith("_iam_member"), f"{kind}.{name}: use additive *_iam_member, never authoritative"
        role = body["role"]
        roles.append(role)
        assert role not in {"roles/owner", "roles/editor", "roles/viewer"}, f"{kind}.{name}"
        assert not role.endswith(".admin"), f"{kind}.{name}: {role}"
        # One documented exception only: the build account's storage grant (test below).
        assert "Admin" not in role or (kind, name, role) == BUILD_STORAGE_GRANT, f"{kind}.{name}: {role}"
        assert body["member"] not in {"allUsers", "allAuthenticatedUsers"}, f"{kind}.{name}"
    assert "roles/secretmanager.admin" not in roles
    for file_name, text in config.text.items():
        if file_name == "variables.tf":  # only mentions them to say they are refused
            continue
        assert "allUsers" not in text and "allAuthenticatedUsers" not in text, file_name
    # Publishers come from a variable: its validation must refuse public principals.
    condition = config.variables["cluster_events_publishers"]["validation"][0]["condition"]
    ((pattern,),) = [re.findall(r'regex\(\\?"((?:[^"\\]|\\.)*?)\\?"', condition)]
    for public in ("allUsers", "allAuthenticatedUsers"):
        assert not re.search(hcl_unescape(pattern), public)
    assert re.search(hcl_unescape(pattern), "serviceAccount:sentinel@p.iam.gserviceaccount.com")


def test_secret_manager_custom_role_has_exactly_the_functions_permissions(config: Config) -> None:
    assert set(config.locals["secret_manager_managed_base_permissions"]) == SECRET_MANAGER_PERMISSIONS
    assert config.locals["secret_manager_delete_permissions"] == ["secretmanager.secrets.delete"]
    managed = config.resource("google_project_iam_custom_role", "secret_manager_managed")
    assert managed["permissions"] == "${local.secret_manager_managed_permissions}"
    creator = config.resource("google_project_iam_custom_role", "secret_manager_creator")
    assert creator["permissions"] == ["secretmanager.secrets.create"]
    # secrets.update only on the rotation progress record (its own role, bound on that name).
    record = config.resource("google_project_iam_custom_role", "secret_manager_record_keeper")
    assert record["permissions"] == ["secretmanager.secrets.update"]
    for body in (managed, creator, record):
        assert body["for_each"] == "${local.secret_project_ids}"
        assert body["project"] == "${each.value}"


def test_secret_manager_bindings_are_conditioned_on_the_secret_id_template(config: Config) -> None:
    managed = config.resource("google_project_iam_member", "runtime_secret_manager_managed")
    assert managed["role"] == "${google_project_iam_custom_role.secret_manager_managed[each.value].id}"
    assert managed["member"] == "${google_service_account.runtime.member}"
    expression = block(managed, "condition")["expression"]
    assert expression == (
        '${replace(local.secret_manager_condition, "PROJECT_NUMBER", '
        "data.google_project.secret_projects[each.value].number)}"
    ), expression
    creator = config.resource("google_project_iam_member", "runtime_secret_manager_creator")
    assert "condition" not in creator
    # The unconditioned create grant must say why, next to it.
    iam_text = config.text["iam.tf"]
    assert re.search(r"secretmanager\.secrets\.create is checked against the parent project", iam_text)


def test_secret_accessor_only_on_the_named_secrets(config: Config) -> None:
    accessors = [
        (kind, name, body)
        for kind, name, body in config.iam_resources()
        if body["role"] == "roles/secretmanager.secretAccessor"
    ]
    assert {name for _, name, _ in accessors} == {
        "runtime_pull_secret_source",
        "runtime_hyperfleet_token",
        "runtime_pull_secret_service_token",
        "runtime_ca_bundle",  # each CA bundle secret (ca_bundles.tf; tests/infra/test_ca_bundles.py)
        "rekey_pull_secret_source",  # rekey's own account fans out the platform secret's newest version
    }
    for kind, name, body in accessors:
        assert kind == "google_secret_manager_secret_iam_member"
        account = "rekey[0]" if name.startswith("rekey_") else "runtime"
        assert body["member"] == f"${{google_service_account.{account}.member}}"
    rekey = config.resource("google_secret_manager_secret_iam_member", "rekey_pull_secret_source")
    assert rekey["secret_id"] == "${local.pull_secret_source_id}"
    assert rekey["count"] == "${local.rekey_account && !local.pull_secret_service ? 1 : 0}"
    source = config.resource("google_secret_manager_secret_iam_member", "runtime_pull_secret_source")
    assert source["secret_id"] == "${local.pull_secret_source_id}"
    # Service mode: no platform secret to read; the service token only in token-file mode (test_service_mode.py).
    assert source["count"] == "${local.pull_secret_service ? 0 : 1}"
    token = config.resource("google_secret_manager_secret_iam_member", "runtime_pull_secret_service_token")
    assert token["count"] == "${local.pull_secret_service_token_file ? 1 : 0}"
    assert token["secret_id"] == "${local.pull_secret_service_token_secret_id}"


DIRECT_ONLY_VIEWER = '${var.kubernetes_delivery == "direct" ? local.management_cluster_projects : toset([])}'


def test_gke_access_is_cluster_viewer_on_management_projects(config: Config) -> None:
    viewer = config.resource("google_project_iam_member", "runtime_cluster_viewer")
    assert viewer["role"] == "roles/container.clusterViewer"
    assert (
        viewer["for_each"] == DIRECT_ONLY_VIEWER
    )  # external-secrets: no GKE grant (tests/infra/test_delivery_modes.py)
    assert viewer["member"] == "${google_service_account.runtime.member}"


def test_runtime_account_project_roles_are_only_the_expected_ones(config: Config) -> None:
    runtime_roles = sorted(
        body["role"]
        for kind, _, body in config.iam_resources()
        if body["member"] == "${google_service_account.runtime.member}"
    )
    assert runtime_roles == sorted(
        [
            "${google_project_iam_custom_role.secret_manager_managed[each.value].id}",
            "${google_project_iam_custom_role.secret_manager_creator[each.value].id}",
            "${google_project_iam_custom_role.secret_manager_record_keeper[each.value].id}",  # one name
            "roles/secretmanager.secretAccessor",
            "roles/secretmanager.secretAccessor",
            "roles/secretmanager.secretAccessor",  # the Pull Secret Service token (service mode, token-file)
            "roles/secretmanager.secretAccessor",  # each CA bundle secret (ca_bundles.tf)
            "roles/container.clusterViewer",
            "${google_project_iam_custom_role.cluster_connect[each.value].id}",  # DNS endpoint only
            "${google_project_iam_custom_role.token_cluster[0].id}",  # service-account-token: the token's cluster
            "roles/pubsub.publisher",
        ]
    )
    connect = config.resource("google_project_iam_custom_role", "cluster_connect")
    assert connect["permissions"] == ["container.clusters.connect"]
    assert connect["for_each"] == (
        '${var.management_endpoint == "dns" && var.kubernetes_delivery == "direct" ? '
        "local.management_cluster_projects : toset([])}"
    )


def test_trigger_identity_may_only_invoke_the_function(config: Config) -> None:
    trigger_grants = [
        (kind, body)
        for kind, _, body in config.iam_resources()
        if body["member"] == "${google_service_account.trigger.member}"
    ]
    assert len(trigger_grants) == 1
    kind, body = trigger_grants[0]
    assert kind == "google_cloud_run_v2_service_iam_member"
    assert body["role"] == "roles/run.invoker"
    assert body["name"] == "${google_cloudfunctions2_function.adapter.service_config[0].service}"
    invokers = {name: b for _, name, b in config.iam_resources() if b["role"] == "roles/run.invoker"}
    # Besides the trigger, only the operators listed in manual_invokers (validated: never public).
    assert set(invokers) == {"trigger_invoker", "manual_invokers"}
    assert invokers["manual_invokers"]["for_each"] == "${toset(var.manual_invokers)}"
    assert invokers["manual_invokers"]["name"] == invokers["trigger_invoker"]["name"]


def test_pubsub_service_agent_can_dead_letter(config: Config) -> None:
    publisher = config.resource("google_pubsub_topic_iam_member", "dead_letter_publisher")
    assert publisher["role"] == "roles/pubsub.publisher"
    assert publisher["topic"] == "${google_pubsub_topic.dead_letter.name}"
    assert publisher["member"] == "${local.pubsub_service_agent_member}"
    token = config.resource("google_service_account_iam_member", "pubsub_agent_trigger_token")
    assert token["service_account_id"] == "${google_service_account.trigger.name}"
    assert token["role"] == "roles/iam.serviceAccountTokenCreator"
    script = (TERRAFORM_DIR / "scripts" / "configure-trigger-dead-letter.sh").read_text()
    assert '--role="roles/pubsub.subscriber"' in script


def test_function_trigger_ingress_identities_and_sizing(config: Config) -> None:
    function = config.resource("google_cloudfunctions2_function", "adapter")
    build = block(function, "build_config")
    assert build["entry_point"] == "handle_cluster_event"
    assert build["runtime"] == "${var.runtime}"
    assert config.variables["runtime"]["default"] == "python311"
    service = block(function, "service_config")
    assert service["ingress_settings"] == "${var.ingress_settings}"
    assert service["service_account_email"] == "${google_service_account.runtime.email}"
    for key in ("available_memory", "timeout_seconds", "max_instance_request_concurrency", "max_instance_count"):
        assert service[key] == "${var." + key + "}", key
    assert config.variables["timeout_seconds"]["default"] <= 540
    trigger = block(function, "event_trigger")
    assert trigger["retry_policy"] == "RETRY_POLICY_RETRY"
    assert trigger["event_type"] == "google.cloud.pubsub.topic.v1.messagePublished"
    assert trigger["pubsub_topic"] == "${local.cluster_events_topic_id}"
    assert trigger["service_account_email"] == "${google_service_account.trigger.email}"


def test_function_environment_comes_from_variables_and_token_is_a_secret_file(config: Config) -> None:
    function = config.resource("google_cloudfunctions2_function", "adapter")
    service = block(function, "service_config")
    assert service["environment_variables"] == "${local.function_environment}"
    environment = config.locals["function_environment"]
    assert set(environment) >= FUNCTION_ENVIRONMENT
    for key, value in environment.items():
        if key in {"LOG_EXECUTION_ID"}:
            continue
        assert "var." in value or "local." in value, f"{key} is hard-coded: {value}"
    hyperfleet = '${var.hyperfleet_api_auth == "token-file" ? [var.hyperfleet_api_token_secret] : []}'
    (volumes,) = [
        d["secret_volumes"] for d in service["dynamic"] if d.get("secret_volumes", {}).get("for_each") == hyperfleet
    ]
    assert volumes["for_each"] == '${var.hyperfleet_api_auth == "token-file" ? [var.hyperfleet_api_token_secret] : []}'
    volume = volumes["content"][0]
    assert volume["secret"] == "${local.hyperfleet_token_secret_id}"
    version = block(volume, "versions")
    mount = config.locals["hyperfleet_token_mount_path"]
    file_name = config.locals["hyperfleet_token_file_name"]
    assert environment["HYPERFLEET_API_TOKEN_FILE"] == (
        '${var.hyperfleet_api_auth == "token-file" ? '
        '"${local.hyperfleet_token_mount_path}/${local.hyperfleet_token_file_name}" : ""}'
    )
    assert volume["mount_path"] == "${local.hyperfleet_token_mount_path}"
    assert version["path"] == "${local.hyperfleet_token_file_name}"
    assert mount.startswith("/etc/secrets") and file_name
    assert "secret_environment_variables" not in service


def test_dead_letter_policy_step_targets_the_triggers_subscription(config: Config) -> None:
    step = config.resource("terraform_data", "trigger_dead_letter")
    assert "${google_cloudfunctions2_function.adapter.event_trigger[0].trigger}" in step["triggers_replace"]
    exec_ = step["provisioner"][0]["local-exec"]
    assert exec_["command"] == "${path.module}/scripts/configure-trigger-dead-letter.sh"
    env = exec_["environment"]
    assert env["DEAD_LETTER_TOPIC"] == "${google_pubsub_topic.dead_letter.id}"
    assert env["MAX_DELIVERY_ATTEMPTS"] == "${tostring(var.dead_letter_max_delivery_attempts)}"
    script_path = TERRAFORM_DIR / "scripts" / "configure-trigger-dead-letter.sh"
    assert os.access(script_path, os.X_OK)
    script = script_path.read_text()
    for flag in ("--dead-letter-topic=", "--max-delivery-attempts=", "transport.pubsub.subscription"):
        assert flag in script
    subprocess.run(["bash", "-n", str(script_path)], check=True)


def test_dead_letter_script_refuses_to_run_without_its_inputs(tmp_path: Path) -> None:
    script_path = TERRAFORM_DIR / "scripts" / "configure-trigger-dead-letter.sh"
    env = {"PATH": os.environ["PATH"], "PROJECT_ID": "p"}
    result = subprocess.run(["bash", str(script_path)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "REGION is not set" in result.stderr


def test_every_variable_is_described_and_validated(config: Config) -> None:
    for name, body in config.variables.items():
        assert body.get("description"), f"variable {name} has no description"
        if body.get("type") in ("bool", "${bool}"):
            continue
        assert body.get("validation"), f"variable {name} has no validation block"


def test_outputs_cover_what_a_deploy_step_needs(config: Config) -> None:
    needed = {
        "function_name",
        "function_uri",
        "region",
        "project_id",
        "cluster_events_topic",
        "dead_letter_topic",
        "eventarc_trigger",
        "runtime_service_account_email",
        "trigger_service_account_email",
        "kubernetes_manifests",
        "source_rotation_topic",
        "source_rotation_trigger",
    }
    assert needed <= set(config.outputs)
    for name, body in config.outputs.items():
        assert body.get("description"), f"output {name} has no description"


def test_log_metrics_are_built_on_the_structured_log_fields(config: Config) -> None:
    metrics = config.of_type("google_logging_metric")
    assert {"reconciles", "reconcile_duration", "slow_reconciles", "api_errors"} <= set(metrics)
    reconcile_filter = config.locals["reconcile_log_filter"]
    assert 'jsonPayload.operation=\\"reconcile\\"' in reconcile_filter or (
        'jsonPayload.operation="reconcile"' in reconcile_filter
    )
    assert metrics["reconciles"]["label_extractors"]["result"] == "EXTRACT(jsonPayload.result)"
    assert metrics["reconcile_duration"]["value_extractor"] == "EXTRACT(jsonPayload.duration_ms)"
    assert "jsonPayload.duration_ms>=${var.slow_reconcile_threshold_ms}" in metrics["slow_reconciles"]["filter"]
    assert metrics["api_errors"]["label_extractors"]["service"] == "EXTRACT(jsonPayload.service)"
    assert "cloud_run_revision" in config.locals["cloud_run_log_filter"]


def test_alert_policies_match_the_design(config: Config) -> None:
    alerts = config.of_type("google_monitoring_alert_policy")
    assert {"reconcile_failure_rate", "api_errors", "slow_reconcile"} <= set(alerts)
    for name, body in alerts.items():
        assert body["notification_channels"] == "${var.notification_channel_ids}", name
    failure = block(block(alerts["reconcile_failure_rate"], "conditions"), "condition_threshold")
    assert failure["threshold_value"] == "${var.failure_rate_threshold}"
    assert config.variables["failure_rate_threshold"]["default"] == 0.1
    assert block(failure, "aggregations")["alignment_period"] == "600s"
    assert "denominator_filter" in failure and "terminal|transient" in failure["filter"]
    slow = block(block(alerts["slow_reconcile"], "conditions"), "condition_threshold")
    assert "slow_reconciles" in slow["filter"]
    # Below the default RETRY_DEADLINE + 30 s, by which every reconcile ends (variables.tf validates it).
    assert (
        config.variables["slow_reconcile_threshold_ms"]["default"]
        < (config.variables["retry_deadline_seconds"]["default"] + 30) * 1000
    )
    # The subscription's dead-letter count, the documented metric (not the topic's send count), of each trigger
    # whose subscription dead-letters (tests/infra/test_fan_out.py).
    for condition in alerts["dead_lettered"]["conditions"]:
        dead = block(condition, "condition_threshold")
        assert "pubsub.googleapis.com/subscription/dead_letter_message_count" in dead["filter"]
        assert "pubsub_subscription" in dead["filter"]


def test_function_source_files_exist() -> None:
    for name in ("main.py", "requirements.txt"):
        assert (REPOSITORY_ROOT / name).is_file(), name
    assert list((REPOSITORY_ROOT / "pullsecret").glob("*.py"))


def test_fmt_check_fails_on_unformatted_hcl_and_passes_on_formatted(tmp_path: Path) -> None:
    from tests.infra import terraform_fmt

    (tmp_path / "main.tf").write_text("locals {\n  a = 1\n  bb = 2\n}\n")
    assert terraform_fmt.main([str(tmp_path)]) == 1
    (tmp_path / "main.tf").write_text("locals {\n  a  = 1\n  bb = 2\n}\n")
    assert terraform_fmt.main([str(tmp_path)]) == 0
    assert terraform_fmt.main([str(tmp_path / "missing")]) == 2


# --- example.tfvars against the variables' own validation rules --------------------------------

REGEX_CHECK = re.compile(r'can\(regex\(\\?"((?:[^"\\]|\\.)*?)\\?", var\.(\w+)\)\)')


def hcl_unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


def test_example_tfvars_sets_every_required_variable_and_passes_validation(config: Config) -> None:
    with (TERRAFORM_DIR / "example.tfvars").open() as handle:
        example = hcl2.load(handle, serialization_options=OPTIONS)
    example.pop("__comments__", None)
    unknown = set(example) - set(config.variables)
    assert not unknown, f"example.tfvars sets undeclared variables: {unknown}"
    required = {name for name, body in config.variables.items() if "default" not in body}
    assert required <= set(example), f"example.tfvars misses {required - set(example)}"
    checked = 0
    for name, body in config.variables.items():
        for validation in body.get("validation", []):
            for pattern, target in REGEX_CHECK.findall(validation["condition"]):
                if target != name or name not in example or not isinstance(example[name], str):
                    continue
                value = example[name]
                if value == "" and '== ""' in validation["condition"]:
                    continue
                assert re.search(hcl_unescape(pattern), value), f"{name}={value!r} fails {pattern}"
                checked += 1
    assert checked >= 6, "the regex validations were not found; the parser output changed?"


def test_regex_validation_extraction_rejects_a_bad_value(config: Config) -> None:
    condition = config.variables["management_cluster"]["validation"][0]["condition"]
    ((pattern, target),) = REGEX_CHECK.findall(condition)
    assert target == "management_cluster"
    assert re.search(hcl_unescape(pattern), "projects/my-project/locations/europe-west1/clusters/mc-1")
    assert not re.search(hcl_unescape(pattern), "projects/my-project/clusters/mc-1")


# --- source rotation (rotation.tf) ---------------------------------------------------------------

ROTATION_SCRIPT = TERRAFORM_DIR / "scripts" / "configure-source-rotation-topic.sh"
ROTATION_COUNT = "${var.enable_source_rotation ? 1 : 0}"


def test_source_rotation_variables_default_on_and_validated(config: Config) -> None:
    for name in ("enable_source_rotation", "configure_source_topics"):
        variable = config.variables[name]
        assert variable["type"] in ("bool", "${bool}"), name
        assert variable["default"] is True, name
        assert variable["description"], name
    rate = config.variables["rotation_publish_rate"]
    assert rate["default"] == 9  # 0.9 x 600 writes/min / 60 s / 1 write per changed cluster
    condition = rate["validation"][0]["condition"]
    assert "var.rotation_publish_rate >= 0.1" in condition and "var.rotation_publish_rate <= 1000" in condition


def test_source_rotation_topic_is_like_the_other_topics(config: Config) -> None:
    topic = config.resource("google_pubsub_topic", "source_rotation")
    assert topic["count"] == ROTATION_COUNT
    assert topic["project"] == "${var.project_id}"
    assert topic["message_retention_duration"] == "${var.message_retention_duration}"
    assert topic["kms_key_name"] == "${local.pubsub_kms_key_name}"
    assert topic["labels"] == "${local.labels}"


def test_secret_manager_agent_of_the_source_project_publishes_to_the_rotation_topic_only(config: Config) -> None:
    identity = config.resource("google_project_service_identity", "secretmanager")
    assert identity["service"] == "secretmanager.googleapis.com"
    assert identity["project"] == "${local.pull_secret_source_project}"
    assert identity["provider"] == "${google-beta}" or identity["provider"] == "google-beta"
    assert identity["count"] == ROTATION_COUNT
    agent = "${google_project_service_identity.secretmanager[0].member}"
    grants = [(kind, name, body) for kind, name, body in config.iam_resources() if body["member"] == agent]
    assert len(grants) == 1, grants
    kind, name, body = grants[0]
    assert (kind, name) == ("google_pubsub_topic_iam_member", "source_rotation_secretmanager_publisher")
    assert body["role"] == "roles/pubsub.publisher"
    assert body["topic"] == "${google_pubsub_topic.source_rotation[0].name}"
    assert body["count"] == ROTATION_COUNT


def test_runtime_account_publishes_to_its_own_fan_out_topic_only(config: Config) -> None:
    # Issue 42, item 8: the fan-out published on Sentinel's topic, and every adapter subscribed to it re-reconciled
    # every cluster at each rotation.
    runtime = "${google_service_account.runtime.member}"
    pubsub_grants = [
        (kind, name, body)
        for kind, name, body in config.iam_resources()
        if body["member"] == runtime and "pubsub" in (kind + body["role"])
    ]
    assert len(pubsub_grants) == 1, pubsub_grants
    kind, name, body = pubsub_grants[0]
    assert (kind, name) == ("google_pubsub_topic_iam_member", "runtime_fan_out_publisher")
    assert body["role"] == "roles/pubsub.publisher"
    assert body["topic"] == "${google_pubsub_topic.fan_out.name}"
    assert "count" not in body  # both source modes: rekey publishes there too (issue 48, item 5)
    topic = config.resource("google_pubsub_topic", "fan_out")
    assert topic["name"] == "${local.function_name}-fan-out"
    assert topic["name"] != config.variables["cluster_events_topic_name"]["default"]
    # Nothing project-level about Pub/Sub for the runtime account (nor for anyone else).
    for name, project_grant in config.of_type("google_project_iam_member").items():
        assert "pubsub" not in project_grant["role"], name


def test_the_fan_out_topic_has_its_own_trigger_to_the_function(config: Config) -> None:
    trigger = config.resource("google_eventarc_trigger", "fan_out")
    assert "count" not in trigger
    assert trigger["service_account"] == "${google_service_account.trigger.email}"
    assert block(block(trigger, "transport"), "pubsub")["topic"] == "${google_pubsub_topic.fan_out.id}"
    run = block(block(trigger, "destination"), "cloud_run_service")
    assert run["service"] == "${local.function_service_name}"
    dead_letter = config.resource("terraform_data", "fan_out_trigger_dead_letter")
    assert dead_letter["provisioner"][0]["local-exec"]["environment"]["TRIGGER"] == (
        "${google_eventarc_trigger.fan_out.name}"
    )


def test_rotation_trigger_routes_the_notification_topic_to_the_function(config: Config) -> None:
    trigger = config.resource("google_eventarc_trigger", "source_rotation")
    assert trigger["count"] == ROTATION_COUNT
    assert trigger["location"] == "${var.region}"
    assert trigger["service_account"] == "${google_service_account.trigger.email}"
    assert trigger["labels"] == "${local.labels}"
    criteria = block(trigger, "matching_criteria")
    assert criteria == {"attribute": "type", "value": "google.cloud.pubsub.topic.v1.messagePublished"}
    assert block(block(trigger, "transport"), "pubsub")["topic"] == "${google_pubsub_topic.source_rotation[0].id}"
    run = block(block(trigger, "destination"), "cloud_run_service")
    assert run["service"] == "${local.function_service_name}"
    assert run["region"] == "${var.region}"
    # The short name of the function's own Cloud Run service (the one the trigger account may invoke).
    service_name = config.locals["function_service_name"]
    assert "google_cloudfunctions2_function.adapter.service_config[0].service" in service_name
    invoker = config.resource("google_cloud_run_v2_service_iam_member", "trigger_invoker")
    assert invoker["name"] == "${google_cloudfunctions2_function.adapter.service_config[0].service}"
    assert "${google_cloud_run_v2_service_iam_member.trigger_invoker}" in trigger["depends_on"]


def test_function_environment_wires_the_fan_out(config: Config) -> None:
    environment = config.locals["function_environment"]
    assert environment["ADAPTER_TOPIC"] == "${local.fan_out_topic_id}"
    assert config.locals["fan_out_topic_id"] == "${google_pubsub_topic.fan_out.id}"
    assert environment["ROTATION_PUBLISH_RATE"] == "${tostring(var.rotation_publish_rate)}"
    # The fan-out's slice ends 30 s before the function timeout (issue 21, item 5).
    assert environment["ROTATION_SLICE"] == "${tostring(var.timeout_seconds - 30)}"
    # cluster_events_topic_id is a full projects/P/topics/T id in both branches (what ADAPTER_TOPIC needs).
    assert config.locals["cluster_events_topic_id"].count("google_pubsub_topic.cluster_events[0].id") == 1
    # The function starts only after the grant has propagated (the wait it depends on, main.tf).
    function = config.resource("google_cloudfunctions2_function", "adapter")
    assert "${time_sleep.iam_propagation}" in function["depends_on"]
    waited = config.resource("time_sleep", "iam_propagation")["depends_on"]
    assert "${google_pubsub_topic_iam_member.runtime_fan_out_publisher}" in waited


def test_source_topic_step_runs_the_script_after_the_publisher_grant(config: Config) -> None:
    step = config.resource("terraform_data", "source_rotation_topic")
    assert step["count"] == "${var.enable_source_rotation && var.configure_source_topics ? 1 : 0}"
    assert step["input"]["topic"] == "${google_pubsub_topic.source_rotation[0].id}"
    assert "${google_pubsub_topic.source_rotation[0].id}" in step["triggers_replace"]
    assert "${var.pull_secret_source_secret}" in step["triggers_replace"]
    assert step["input"]["secret"] == "${local.pull_secret_source_id}"
    assert step["input"]["secret_project"] == "${local.pull_secret_source_project}"
    assert step["input"]["script"] == "${path.module}/scripts/configure-source-rotation-topic.sh"
    assert "${google_pubsub_topic_iam_member.source_rotation_secretmanager_publisher}" in step["depends_on"]
    assert "${google_eventarc_trigger.source_rotation}" in step["depends_on"]
    create, destroy = (p["local-exec"] for p in step["provisioner"])
    assert create["environment"]["ACTION"] == "add" and "when" not in create
    assert destroy["environment"]["ACTION"] == "remove"
    assert destroy["when"] in ("destroy", "${destroy}")
    assert os.access(ROTATION_SCRIPT, os.X_OK)
    script = ROTATION_SCRIPT.read_text()
    for needle in ("gcloud secrets update", "--add-topics=", "--remove-topics=", "gcloud secrets describe"):
        assert needle in script
    subprocess.run(["bash", "-n", str(ROTATION_SCRIPT)], check=True)


def test_source_topic_script_refuses_to_run_without_its_inputs() -> None:
    env = {"PATH": os.environ["PATH"], "SECRET_PROJECT": "p"}
    result = subprocess.run(["bash", str(ROTATION_SCRIPT)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "SECRET is not set" in result.stderr
    env = {"PATH": os.environ["PATH"], "SECRET_PROJECT": "p", "SECRET": "s", "TOPIC": "t"}
    result = subprocess.run(["bash", str(ROTATION_SCRIPT)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "TOPIC must be projects/PROJECT/topics/TOPIC" in result.stderr


FAKE_GCLOUD = r"""#!/usr/bin/env bash
# A stand-in for gcloud secrets describe/update: the secret's topics live in $FAKE_TOPICS (one per line).
echo "$*" >>"$FAKE_CALLS"
case "$1 $2" in
  "secrets describe") paste -sd';' "$FAKE_TOPICS" ;;
  "secrets update")
    for arg in "$@"; do
      case "$arg" in
        --add-topics=*) echo "${arg#--add-topics=}" >>"$FAKE_TOPICS" ;;
        --remove-topics=*) grep -vxF "${arg#--remove-topics=}" "$FAKE_TOPICS" >"$FAKE_TOPICS.new" || true
                           mv "$FAKE_TOPICS.new" "$FAKE_TOPICS" ;;
      esac
    done ;;
  *) exit 3 ;;
esac
"""


def test_source_topic_script_adds_once_keeps_other_topics_and_removes(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(FAKE_GCLOUD)
    gcloud.chmod(0o755)
    topics = tmp_path / "topics"
    topics.write_text("projects/platform/topics/audit\n")
    calls = tmp_path / "calls"
    topic = "projects/adapters/topics/hyperfleet-pullsecret-adapter-source-rotation"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_TOPICS": str(topics),
        "FAKE_CALLS": str(calls),
        "SECRET_PROJECT": "platform",
        "SECRET": "projects/platform/secrets/platform-pull-secret",
        "TOPIC": topic,
    }

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(ROTATION_SCRIPT)], env=env | extra, capture_output=True, text=True, check=False
        )

    for _ in range(2):  # the second run finds the topic and changes nothing
        result = run()
        assert result.returncode == 0, result.stderr
    assert topics.read_text().splitlines() == ["projects/platform/topics/audit", topic]
    updates = [line for line in calls.read_text().splitlines() if line.startswith("secrets update")]
    assert updates == [f"secrets update platform-pull-secret --project=platform --add-topics={topic} --quiet"]
    result = run(ACTION="remove")
    assert result.returncode == 0, result.stderr
    assert topics.read_text().splitlines() == ["projects/platform/topics/audit"]
    assert run(ACTION="remove").returncode == 0
    assert run(ACTION="rotate").returncode == 2


# --- issue 10: what the first real deployment needs ---------------------------------------------

# Google's IAM permission of each Secret Manager method (cloud.google.com/secret-manager/docs/access-control).
SECRET_MANAGER_METHOD_PERMISSIONS = {
    "access_secret_version": "secretmanager.versions.access",
    "add_secret_version": "secretmanager.versions.add",
    "create_secret": "secretmanager.secrets.create",
    "delete_secret": "secretmanager.secrets.delete",
    "destroy_secret_version": "secretmanager.versions.destroy",
    "disable_secret_version": "secretmanager.versions.disable",
    "enable_secret_version": "secretmanager.versions.enable",
    "get_secret": "secretmanager.secrets.get",
    "get_secret_version": "secretmanager.versions.get",
    "list_secret_versions": "secretmanager.versions.list",
    "list_secrets": "secretmanager.secrets.list",
    "update_secret": "secretmanager.secrets.update",
}


def test_secret_manager_roles_grant_every_method_the_code_calls(config: Config) -> None:
    source = "\n".join(
        path.read_text() for path in sorted((REPOSITORY_ROOT / "pullsecret" / "secretstore").glob("*.py"))
    )
    called = set(re.findall(r"self\._client\.(\w+)", source))
    assert called, "no Secret Manager client calls found in pullsecret/secretstore/"
    unknown = called - set(SECRET_MANAGER_METHOD_PERMISSIONS)
    assert not unknown, f"add the IAM permission of {unknown} to SECRET_MANAGER_METHOD_PERMISSIONS"
    granted = {
        *config.locals["secret_manager_managed_base_permissions"],
        *config.locals["secret_manager_delete_permissions"],
        *config.resource("google_project_iam_custom_role", "secret_manager_creator")["permissions"],
        *config.resource("google_project_iam_custom_role", "secret_manager_record_keeper")["permissions"],
    }
    needed = {SECRET_MANAGER_METHOD_PERMISSIONS[method] for method in called}
    assert needed <= granted, f"the code calls methods whose permissions terraform/ never grants: {needed - granted}"


class CelString(str):
    """The three string functions IAM documents for resource.name in conditions."""

    def startsWith(self, prefix: str) -> bool:  # CEL's name
        return self.startswith(prefix)

    def endsWith(self, suffix: str) -> bool:  # CEL's name
        return self.endswith(suffix)

    def extract(self, template: str) -> CelString:
        # cloud.google.com/iam/docs/conditions-attribute-reference#extract: the text matched by {x}, up to
        # the literal that follows it; empty when the template does not match.
        before, _, after = template.partition("{")
        after = after.partition("}")[2]
        index = self.find(before)
        if index < 0:
            return CelString("")
        rest = self[index + len(before) :]
        end = rest.find(after) if after else len(rest)
        return CelString("" if end < 0 else rest[:end])


def evaluate_condition(expression: str, resource_name: str) -> bool:
    assert re.fullmatch(r'[\w\s.()"/{}&|!-]+', expression), expression  # nothing but CEL string calls
    resource = type("Resource", (), {"name": CelString(resource_name)})
    python = expression.replace("&&", " and ").replace("||", " or ")
    return bool(eval(python, {"__builtins__": {}}, {"resource": resource}))  # noqa: S307 - checked above


def test_secret_manager_condition_covers_only_the_secret_id_template(config: Config) -> None:
    template = config.variables["secret_id_template"]["default"]
    prefix, suffix = template.split("{cluster_id}")
    condition = hcl_unescape(config.locals["secret_manager_condition"])
    condition = condition.replace("${local.secret_id_prefix}", prefix).replace("${local.secret_id_suffix}", suffix)
    expression = condition.replace("PROJECT_NUMBER", "123")
    ours = "projects/123/secrets/" + template.format(cluster_id="2abc9def")
    for name in (ours, f"{ours}/versions/7", f"{ours}/versions/latest"):
        assert evaluate_condition(expression, name), name
    for name in (
        "projects/123/secrets/hyperfleet-api-token",  # a token in the same project (issue 10, defect 4)
        "projects/123/secrets/hyperfleet-api-token/versions/1",
        "projects/123/secrets/hyperfleet-api-token/versions/latest",
        "projects/123/secrets/platform-pull-secret",
        "projects/123/secrets/platform-pull-secret/versions/1",
        "projects/999/secrets/" + template.format(cluster_id="2abc9def"),
        "projects/123/secrets/" + template.format(cluster_id="x") + "-old",
    ):
        assert not evaluate_condition(expression, name), name
    assert config.locals["function_environment"]["SECRET_ID_TEMPLATE"] == "${var.secret_id_template}"


def test_secret_updates_are_conditioned_on_the_rotation_progress_record_alone(config: Config) -> None:
    from pullsecret import configured as function_config
    from pullsecret.source.platform.rotation import progress_secret_id

    binding = config.resource("google_project_iam_member", "runtime_secret_manager_record_keeper")
    assert binding["role"] == "${google_project_iam_custom_role.secret_manager_record_keeper[each.value].id}"
    assert "rotation_record_condition" in block(binding, "condition")["expression"]
    template = config.variables["secret_id_template"]["default"]
    adapter = config.variables["adapter_name"]["default"]
    prefix, suffix = template.split("{cluster_id}")
    record_id = hcl_unescape(config.locals["rotation_record_secret_id"])
    record_id = record_id.replace("${local.secret_id_prefix}", prefix).replace("${local.secret_id_suffix}", suffix)
    record_id = record_id.replace("${var.adapter_name}", adapter)
    settings = function_config.load(
        {
            "HYPERFLEET_API_URL": "http://hf.example",
            "ADAPTER_NAME": adapter,
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
        }
    )
    assert record_id == progress_secret_id(settings)  # the name the function writes
    condition = hcl_unescape(config.locals["rotation_record_condition"]).replace("PROJECT_NUMBER", "123")
    rekey_id = hcl_unescape(config.locals["rekey_record_secret_id"])  # rekey's own record (secretstore/progress.py)
    rekey_id = rekey_id.replace("${local.secret_id_prefix}", prefix).replace("${local.secret_id_suffix}", suffix)
    rekey_id = rekey_id.replace("${var.adapter_name}", adapter)
    expression = condition.replace("${local.rotation_record_secret_id}", record_id)
    expression = expression.replace("${local.rekey_record_secret_id}", rekey_id)
    assert evaluate_condition(expression, f"projects/123/secrets/{record_id}")
    assert evaluate_condition(expression, f"projects/123/secrets/{rekey_id}")
    for name in (
        "projects/123/secrets/" + template.format(cluster_id="2abc9def"),  # a cluster's secret
        f"projects/123/secrets/{record_id}/versions/1",
        f"projects/123/secrets/{record_id}-old",
        f"projects/999/secrets/{record_id}",
        "projects/123/secrets/platform-pull-secret",
    ):
        assert not evaluate_condition(expression, name), name


def test_no_grant_of_the_module_is_one_another_instance_holds_too(config: Config) -> None:
    # Issue 51, item 7: the Pub/Sub and Secret Manager service agents' grants on a shared CMEK key were the same
    # binding in production's, staging's and production-us's state: destroying staging removed production's. A grant
    # the module makes binds an identity of this instance, or binds on a resource of this instance.
    own = re.compile(
        r"\$\{(google_service_account\.|google_pubsub_topic\.|google_project_iam_custom_role\.|google_cloudfunctions2_)"
    )
    for kind, name, body in config.iam_resources():
        target = " ".join(
            str(body.get(k, "")) for k in ("topic", "role", "service_account_id", "name", "cloud_function")
        )
        assert own.search(str(body["member"])) or own.search(target), (kind, name)
    assert not config.of_type("google_kms_crypto_key_iam_member")
    # The roots forget what an earlier release made (never deleting it); the bootstrap makes it once per project.
    for root in (TERRAFORM_DIR / "environments").iterdir():
        text = (root / "main.tf").read_text()
        for address in ("pubsub_cmek", "secret_cmek"):
            assert re.search(
                rf"removed \{{\s*from = module\.adapter\.google_kms_crypto_key_iam_member\.{address}\s*"
                r"lifecycle \{\s*destroy = false",
                text,
            ), (root.name, address)
    bootstrap = (TERRAFORM_DIR / "bootstrap" / "commands.tf").read_text()
    assert "gcloud kms keys add-iam-policy-binding ${var.pubsub_kms_key_name}" in bootstrap
    assert "gcloud kms keys add-iam-policy-binding ${key}" in bootstrap


# What holds events (or the only copy of a failed one): never deleted by a plan (issue 51, item 6).
HOLDS_EVENTS = (
    ("google_pubsub_topic", "cluster_events"),
    ("google_pubsub_topic", "dead_letter"),
    ("google_pubsub_subscription", "dead_letter"),
    ("google_pubsub_topic", "fan_out"),
)


def test_what_holds_events_is_protected_from_destroy(config: Config) -> None:
    # Issue 51, item 6: a destroy, or a change of name_suffix or of the KMS key (both replace a topic), deleted
    # Sentinel's topic and the dead-letter subscription holding the only copy of failed events.
    for kind, name in HOLDS_EVENTS:
        lifecycle = config.resource(kind, name).get("lifecycle", [{}])[0]
        assert lifecycle.get("prevent_destroy") is True, f"{kind}.{name}"
    suffix = config.variables["name_suffix"]["description"]
    assert "cannot be changed" in suffix and "prevent_destroy" in suffix
    readme = (TERRAFORM_DIR / "README.md").read_text()
    assert "## What is never destroyed" in readme


def test_service_accounts_wait_for_the_apis(config: Config) -> None:
    for name, body in config.of_type("google_service_account").items():
        assert "${time_sleep.api_propagation}" in body.get("depends_on", []), name  # which waits for the APIs


def test_ingress_default_lets_an_invoker_call_the_function(config: Config) -> None:
    ingress = config.variables["ingress_settings"]
    # ALLOW_INTERNAL_ONLY refuses `gcloud functions call` from outside the VPC; IAM keeps everyone else out.
    assert ingress["default"] == "ALLOW_ALL"
    assert "run.invoker" in ingress["description"]
    assert config.variables["manual_invokers"]["default"] == []
    # gcloud functions call (gen2) reads the function first (GetFunction) for its URL, then posts to it.
    viewer = config.resource("google_cloudfunctions2_function_iam_member", "manual_invokers_viewer")
    assert viewer["role"] == "roles/cloudfunctions.viewer"
    assert viewer["for_each"] == "${toset(var.manual_invokers)}"
    assert viewer["cloud_function"] == "${google_cloudfunctions2_function.adapter.name}"


def test_trigger_ack_deadline_follows_the_function_timeout(config: Config) -> None:
    assert config.locals["trigger_ack_deadline_seconds"] == "${var.timeout_seconds + 60}"
    assert config.variables["timeout_seconds"]["default"] + 60 <= 600  # Pub/Sub's maximum ack deadline
    step = config.resource("terraform_data", "trigger_dead_letter")
    env = step["provisioner"][0]["local-exec"]["environment"]
    assert env["ACK_DEADLINE_SECONDS"] == "${tostring(local.trigger_ack_deadline_seconds)}"
    assert "${local.trigger_ack_deadline_seconds}" in step["triggers_replace"]
    rotation = config.resource("terraform_data", "rotation_trigger_ack_deadline")
    env = rotation["provisioner"][0]["local-exec"]["environment"]
    assert env["TRIGGER"] == "${google_eventarc_trigger.source_rotation[0].name}"
    assert env["ACK_DEADLINE_SECONDS"] == "${tostring(local.trigger_ack_deadline_seconds)}"
    assert "DEAD_LETTER_TOPIC" not in env
    assert config.locals["function_environment"]["RETRY_DEADLINE"] == "${tostring(var.retry_deadline_seconds)}"


FAKE_PUBSUB_GCLOUD = r"""#!/usr/bin/env bash
# A stand-in for the gcloud calls of configure-trigger-dead-letter.sh; the subscription lives in $FAKE_STATE.
echo "$*" >>"$FAKE_CALLS"
case "$1 $2 $3" in
  "eventarc triggers describe") echo "projects/p/subscriptions/eventarc-europe-west1-t-sub-1" ;;
  "pubsub subscriptions add-iam-policy-binding") ;;
  "pubsub subscriptions update")
    ack="" topic="" attempts=""
    for arg in "$@"; do
      case "$arg" in
        --ack-deadline=*) ack="${arg#*=}" ;;
        --dead-letter-topic=*) topic="${arg#*=}" ;;
        --max-delivery-attempts=*) attempts="${arg#*=}" ;;
      esac
    done
    printf '%s\t%s\t%s\n' "$ack" "$topic" "$attempts" >"$FAKE_STATE" ;;
  "pubsub subscriptions describe") cat "$FAKE_STATE" ;;
  *) exit 3 ;;
esac
"""


def test_dead_letter_script_sets_the_ack_deadline_and_the_policy(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(FAKE_PUBSUB_GCLOUD)
    gcloud.chmod(0o755)
    calls, state = tmp_path / "calls", tmp_path / "state"
    script = TERRAFORM_DIR / "scripts" / "configure-trigger-dead-letter.sh"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_CALLS": str(calls),
        "FAKE_STATE": str(state),
        "PROJECT_ID": "p",
        "REGION": "europe-west1",
        "TRIGGER": "projects/p/locations/europe-west1/triggers/t",
        "ACK_DEADLINE_SECONDS": "600",
    }
    dead_letter = {
        "DEAD_LETTER_TOPIC": "projects/p/topics/hyperfleet-pullsecret-adapter-dead-letter",
        "MAX_DELIVERY_ATTEMPTS": "10",
        "PUBSUB_SERVICE_AGENT": "serviceAccount:service-1@gcp-sa-pubsub.iam.gserviceaccount.com",
    }
    result = subprocess.run(["bash", str(script)], env=env | dead_letter, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert state.read_text().split("\t")[:2] == ["600", dead_letter["DEAD_LETTER_TOPIC"]]
    assert "--condition" not in calls.read_text()  # not a flag of the GA track (issue 10, defect 2)
    # The rotation trigger: ack deadline only.
    result = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert state.read_text().split("\t")[:2] == ["600", ""]
    bindings = [line for line in calls.read_text().splitlines() if "add-iam-policy-binding" in line]
    assert len(bindings) == 1, bindings
    for bad in ({"ACK_DEADLINE_SECONDS": "601"}, {"DEAD_LETTER_TOPIC": "projects/p/topics/t"}):
        result = subprocess.run(["bash", str(script)], env=env | bad, capture_output=True, text=True, check=False)
        assert result.returncode == 2, (bad, result.stderr)


def test_direct_vpc_egress_is_an_option_for_private_management_clusters(config: Config) -> None:
    # Issue 11, item 9: a private IP endpoint is reachable only through the cluster's VPC.
    service = block(config.resource("google_cloudfunctions2_function", "adapter"), "service_config")
    assert service["direct_vpc_egress"] == '${var.vpc_network == "" ? null : "VPC_EGRESS_${var.vpc_egress}"}'
    (interface,) = [
        d["direct_vpc_network_interface"] for d in service["dynamic"] if "direct_vpc_network_interface" in d
    ]
    assert interface["for_each"] == '${var.vpc_network == "" ? [] : [var.vpc_network]}'
    content = interface["content"][0]
    assert content["network"] == "${direct_vpc_network_interface.value}"
    assert content["subnetwork"] == '${var.vpc_subnetwork == "" ? null : var.vpc_subnetwork}'
    for name in ("vpc_network", "vpc_subnetwork"):
        assert config.variables[name]["default"] == "", name
    assert config.variables["vpc_egress"]["default"] == "PRIVATE_RANGES_ONLY"
    compute = config.resource("google_project_service", "compute")
    assert compute["count"] == '${var.vpc_network == "" ? 0 : 1}'
    assert "compute.googleapis.com" not in config.locals["required_apis"]  # would create the default network


def test_clusters_may_name_only_the_secret_projects_granted(config: Config) -> None:
    """ALLOWED_SECRET_PROJECTS is exactly the projects iam.tf grants Secret Manager roles in (the pinned one too)."""
    environment = config.locals["function_environment"]
    assert environment["ALLOWED_SECRET_PROJECTS"] == '${join(",", sort(local.secret_project_ids))}'
    granted = config.locals["secret_project_ids"]
    assert "var.pinned_secret_project_id" in granted and "var.secret_project_ids" in granted
    for name in ("secret_manager_managed", "secret_manager_creator"):
        assert config.resource("google_project_iam_custom_role", name)["for_each"] == "${local.secret_project_ids}"


@pytest.mark.parametrize(
    ("pinned", "listed", "expected"),
    [
        ("hf-secrets-prod", ["cust-a-1234", "cust-b-5678"], ("cust-a-1234", "cust-b-5678", "hf-secrets-prod")),
        ("", ["cust-b-5678", "cust-a-1234", "cust-a-1234"], ("cust-a-1234", "cust-b-5678")),
    ],
)
def test_the_real_terraform_renders_allowed_secret_projects_the_function_loads(
    tmp_path: Path, pinned: str, listed: list[str], expected: tuple[str, ...]
) -> None:
    """function.tf's SECRET_PROJECT_ID and ALLOWED_SECRET_PROJECTS over main.tf's secret_project_ids, computed by
    terraform and read by pullsecret/settings/common.py: the granted projects, the pinned one among them."""
    from pullsecret import configured as function_config
    from tests.infra import reality

    binary, why = reality.terraform((1, 9))
    if binary is None:
        reality.missing(why)
    assert binary is not None
    function_tf, main_tf = (TERRAFORM_DIR / name for name in ("function.tf", "main.tf"))
    entries = re.findall(r"^\s+(SECRET_PROJECT_ID|ALLOWED_SECRET_PROJECTS)\s+=\s+(.+)$", function_tf.read_text(), re.M)
    assert {name for name, _ in entries} == {"SECRET_PROJECT_ID", "ALLOWED_SECRET_PROJECTS"}
    (granted,) = re.findall(r"^\s+secret_project_ids\s+=\s+(.+)$", main_tf.read_text(), re.M)
    env = "\n".join(f"    {name} = {value}" for name, value in entries)
    variables = (
        'variable "pinned_secret_project_id" {\n  type = string\n}\n'
        'variable "secret_project_ids" {\n  type = list(string)\n}\n'
    )
    (tmp_path / "main.tf").write_text(
        f"{variables}locals {{\n  secret_project_ids = {granted}\n  environment = {{\n{env}\n  }}\n}}\n"
        'output "environment" { value = local.environment }\n'
    )
    (tmp_path / "terraform.tfvars.json").write_text(
        json.dumps({"pinned_secret_project_id": pinned, "secret_project_ids": listed})
    )
    environment = reality.terraform_outputs(binary, tmp_path)["environment"]
    base = {"HYPERFLEET_API_URL": "https://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    settings = function_config.load({**base, **environment})  # an empty value is unset for the function
    assert settings.allowed_secret_projects == expected
    assert settings.secret_project_id == (pinned or None)


def test_placements_may_name_only_clusters_of_the_granted_projects(config: Config) -> None:
    """ALLOWED_MANAGEMENT_CLUSTERS comes from the projects iam.tf grants clusterViewer in, never wider."""
    environment = config.locals["function_environment"]
    assert environment["ALLOWED_MANAGEMENT_CLUSTERS"] == '${join(",", local.allowed_management_clusters)}'
    allowed = config.locals["allowed_management_clusters"]
    assert "local.management_cluster_projects" in allowed and "projects/${p}/locations/*/clusters/*" in allowed
    viewer = config.resource("google_project_iam_member", "runtime_cluster_viewer")
    assert viewer["for_each"] == DIRECT_ONLY_VIEWER
    assert environment["REGISTRY_ALLOWED_HOSTS"] == '${join(",", var.registry_allowed_hosts)}'
    assert config.variables["registry_allowed_hosts"]["default"] == []
    # A realm on another domain only by a documented pair; the function's own default is the same.
    from pullsecret import configured as function_config

    assert environment["REGISTRY_TRUSTED_REALMS"] == '${join(",", var.registry_trusted_realms)}'
    default = config.variables["registry_trusted_realms"]["default"]
    assert default == ["registry.redhat.io=sso.redhat.com"]
    function_default = function_config.load(
        {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    ).registry_trusted_realms
    assert [f"{registry}={realm}" for registry, realm in function_default] == default


def test_retry_budget_defaults_follow_adr_0017(config: Config) -> None:
    # HyperFleet ADR-0017 (hyperfleet-infra terraform/main.tf max_delivery_attempts = 5): 5 delivery attempts,
    # and one attempt of a reconcile (RETRY_DEADLINE plus one call in flight, <= 30 s) inside 120 s.
    assert config.variables["dead_letter_max_delivery_attempts"]["default"] == 5
    assert config.variables["retry_deadline_seconds"]["default"] + 30 <= 120
