"""Settings: defaults, and each bad value failing with the variable's name."""

from __future__ import annotations

import pytest

from pullsecret.configured import load
from pullsecret.errors import ConfigError
from pullsecret.source.platform.settings import PlatformSettings
from pullsecret.source.service.settings import ServiceSettings

BASE = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}


def test_defaults() -> None:
    settings = load(BASE)
    assert settings.hyperfleet_status_method == "PUT"
    assert settings.adapter_name == "pullsecret"
    assert settings.precondition_adapters == ("validation", "dns", "placement")
    assert settings.management_namespace_template == "clusters-{cluster_id}"
    assert settings.management_namespace_pattern.pattern == "^clusters-[a-z0-9-]+$"
    assert settings.max_event_age_s == 3600
    assert settings.source == "platform"
    assert settings.of(PlatformSettings) == PlatformSettings(BASE["PULL_SECRET_SOURCE"], ttl_s=30.0)
    assert settings.of(ServiceSettings) == ServiceSettings()  # read, and not the one selected


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({}, "HYPERFLEET_API_URL"),
        (
            {"HYPERFLEET_API_URL": "ftp://x", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"},
            "HYPERFLEET_API_URL",
        ),
        ({**BASE, "HYPERFLEET_STATUS_METHOD": "PATCH"}, "HYPERFLEET_STATUS_METHOD"),
        ({**BASE, "HYPERFLEET_SYSTEM_HEADER": "X HyperFleet System"}, "HYPERFLEET_SYSTEM_HEADER"),
        ({**BASE, "HYPERFLEET_SYSTEM_HEADER": "Authorization"}, "HYPERFLEET_SYSTEM_HEADER"),
        ({**BASE, "HYPERFLEET_TIMEOUT": "10"}, "HYPERFLEET_TIMEOUT"),
        ({**BASE, "EXTERNAL_SECRETS_REFRESH_INTERVAL": "0m"}, "EXTERNAL_SECRETS_REFRESH_INTERVAL"),
        ({**BASE, "EXTERNAL_SECRETS_REFRESH_INTERVAL": "5 minutes"}, "EXTERNAL_SECRETS_REFRESH_INTERVAL"),
        ({**BASE, "HYPERFLEET_API_TOKEN_FILE": "/nonexistent/token"}, "HYPERFLEET_API_TOKEN_FILE"),
        ({**BASE, "PULL_SECRET_SOURCE": "projects/p/secrets/s"}, "PULL_SECRET_SOURCE"),
        ({**BASE, "SECRET_PROJECT_ID": "Bad_Project"}, "SECRET_PROJECT_ID"),
        ({**BASE, "MANAGEMENT_CLUSTER": "mgmt-1"}, "MANAGEMENT_CLUSTER"),
        ({**BASE, "MANAGEMENT_NAMESPACE_TEMPLATE": "clusters"}, "MANAGEMENT_NAMESPACE_TEMPLATE"),
        ({**BASE, "MANAGEMENT_NAMESPACE_PATTERN": "^.*$"}, "MANAGEMENT_NAMESPACE_PATTERN"),
        ({**BASE, "MANAGEMENT_NAMESPACE_PATTERN": "clusters-.*"}, "MANAGEMENT_NAMESPACE_PATTERN"),
        ({**BASE, "MANAGEMENT_NAMESPACE_PATTERN": "^(unclosed$"}, "MANAGEMENT_NAMESPACE_PATTERN"),
        ({**BASE, "SECRET_MANAGER_EMULATOR_HOST": "localhost"}, "SECRET_MANAGER_EMULATOR_HOST"),
        ({**BASE, "LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({**BASE, "MAX_EVENT_AGE": "soon"}, "MAX_EVENT_AGE"),
        ({**BASE, "ADAPTER_NAME": "Pull Secret"}, "ADAPTER_NAME"),
        ({**BASE, "DELETION_POLICY": "SHRED"}, "DELETION_POLICY"),
        ({**BASE, "SECRET_KMS_KEY": "key"}, "SECRET_KMS_KEY"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(env)
    assert variable in str(caught.value)


def test_lists_and_numbers() -> None:
    settings = load(
        {
            **BASE,
            "PRECONDITION_ADAPTERS": " validation , placement ,",
            "MAX_EVENT_AGE": "60",
            "PULL_SECRET_SOURCE": "projects/p1/secrets/platform-pull-secret/versions/latest",
            "HYPERFLEET_STATUS_METHOD": "post",
        }
    )
    assert settings.precondition_adapters == ("validation", "placement")
    assert settings.max_event_age_s == 60
    assert settings.hyperfleet_status_method == "POST"


def test_rotation_pace_is_derived_from_the_write_quota() -> None:
    assert load(BASE).publish_rate() == pytest.approx(9.5)  # 95 % of 600 writes/min at 1 write per cluster
    doubled = load({**BASE, "SECRET_WRITE_QUOTA": "1200", "ROTATION_WRITES_PER_CLUSTER": "2"})
    assert doubled.publish_rate() == pytest.approx(9.5)
    assert load({**BASE, "ROTATION_WRITES_PER_CLUSTER": "2"}).publish_rate() == pytest.approx(4.75)
    assert load({**BASE, "ROTATION_PUBLISH_RATE": "3"}).publish_rate() == 3.0  # an explicit pace wins


def test_allowed_management_clusters_match_segment_by_segment() -> None:
    from pullsecret.model.names import cluster_allowed

    allowed = ("projects/hf-mgmt/locations/*/clusters/mgmt-*", "projects/other/locations/us-east1/clusters/c1")
    assert cluster_allowed("projects/hf-mgmt/locations/us-central1/clusters/mgmt-1", allowed)
    assert cluster_allowed("projects/other/locations/us-east1/clusters/c1", allowed)
    for name in (
        "projects/hf-mgmt-evil/locations/us-central1/clusters/mgmt-1",  # `*` never spans a segment
        "projects/hf-mgmt/locations/a/b/clusters/mgmt-1",
        "projects/hf-mgmt/locations/us-central1/clusters/evil",
        "projects/other/locations/us-east1/clusters/c10",
        "projects/HF-MGMT/locations/us-central1/clusters/mgmt-1",
        "projects/hf.mgmt/locations/us-central1/clusters/mgmt-1",
    ):
        assert not cluster_allowed(name, allowed), name


def test_allowed_secret_projects_match_a_whole_project_id() -> None:
    from pullsecret.settings.secret_projects import project_allowed

    allowed = ("hf-demo-project", "tenant-*-prod", "acme-*")
    for project in ("hf-demo-project", "tenant-a-prod", "tenant-a-b-prod", "tenant--prod", "acme-x1", "acme-"):
        assert project_allowed(project, allowed), project
    for project in (
        "hf-demo-projectx",  # the match is whole
        "xhf-demo-project",
        "hf-demo-project\n",
        "tenant-a-prod-x",
        "xtenant-a-prod",
        "tenant-a.prod",  # `*` stands for project-id characters only
        "tenant-a/prod",
        "hf.demo-project",  # `.` and `-` are themselves, no regular expression
        "HF-DEMO-PROJECT",
        "acme",
        "",
    ):
        assert not project_allowed(project, allowed), project
    assert not project_allowed("hf-demo-project", ())
    assert project_allowed("any-project", ("*",))


def test_allowed_secret_projects_configuration() -> None:
    base = {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    assert load(base).allowed_secret_projects == ()
    loaded = load({**base, "ALLOWED_SECRET_PROJECTS": " proj-one, tenant-*-prod ,"})
    assert loaded.allowed_secret_projects == ("proj-one", "tenant-*-prod")
    for bad in ("Proj-One", "projects/proj-one", "proj one", "proj-\none", "1proj-one", "p" * 31, "a?", "proj"):
        with pytest.raises(ConfigError, match="ALLOWED_SECRET_PROJECTS"):
            load({**base, "ALLOWED_SECRET_PROJECTS": bad})
    with pytest.raises(ConfigError, match="SECRET_PROJECT_ID 'proj-two' is not among ALLOWED_SECRET_PROJECTS"):
        load({**base, "ALLOWED_SECRET_PROJECTS": "proj-one", "SECRET_PROJECT_ID": "proj-two"})
    pinned = load({**base, "ALLOWED_SECRET_PROJECTS": "proj-*", "SECRET_PROJECT_ID": "proj-two"})
    assert pinned.secret_project_id == "proj-two"


def test_the_adapter_warns_at_start_when_no_secret_project_is_allowlisted_or_pinned(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pullsecret.handler import Adapter

    base = {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    Adapter(load(base))
    Adapter(load({**base, "ALLOWED_SECRET_PROJECTS": "proj-one"}))
    Adapter(load({**base, "SECRET_PROJECT_ID": "proj-one"}))
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "ALLOWED_SECRET_PROJECTS and SECRET_PROJECT_ID are unset" in line]
    assert len(warnings) == 1 and '"severity": "WARNING"' in warnings[0]


def test_allowed_management_clusters_configuration() -> None:
    base = {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    assert load(base).allowed_management_clusters == ()
    names = "projects/p1/locations/*/clusters/*, projects/p2/locations/l/clusters/c"
    loaded = load({**base, "ALLOWED_MANAGEMENT_CLUSTERS": names})
    assert loaded.allowed_management_clusters == (
        "projects/p1/locations/*/clusters/*",
        "projects/p2/locations/l/clusters/c",
    )
    with pytest.raises(ConfigError, match="ALLOWED_MANAGEMENT_CLUSTERS"):
        load({**base, "ALLOWED_MANAGEMENT_CLUSTERS": "mgmt-1"})
    with pytest.raises(ConfigError, match="not among ALLOWED_MANAGEMENT_CLUSTERS"):
        load(
            {
                **base,
                "ALLOWED_MANAGEMENT_CLUSTERS": "projects/p2/locations/l/clusters/c",
                "MANAGEMENT_CLUSTER": "projects/p1/locations/l/clusters/c",
            }
        )


def test_the_adapter_warns_at_start_when_no_management_cluster_is_allowlisted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pullsecret.handler import Adapter

    Adapter(
        load({"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"})
    )
    Adapter(
        load(
            {
                "HYPERFLEET_API_URL": "http://hf.example",
                "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
                "ALLOWED_MANAGEMENT_CLUSTERS": "projects/p/locations/l/clusters/c",
            }
        )
    )
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "ALLOWED_MANAGEMENT_CLUSTERS is unset" in line]
    assert len(warnings) == 1 and '"severity": "WARNING"' in warnings[0]


def test_api_auth_modes() -> None:
    assert (load(BASE).hyperfleet_api_auth, load(BASE).hyperfleet_api_audience) == ("token-file", "hyperfleet-api")
    settings = load({**BASE, "HYPERFLEET_API_AUTH": "google-id-token", "HYPERFLEET_API_AUDIENCE": "https://hf.example"})
    assert (settings.hyperfleet_api_auth, settings.hyperfleet_api_audience) == ("google-id-token", "https://hf.example")
    with pytest.raises(ConfigError, match=r"^HYPERFLEET_API_AUTH must be one of"):
        load({**BASE, "HYPERFLEET_API_AUTH": "oidc"})
    with pytest.raises(ConfigError, match=r"^HYPERFLEET_API_TOKEN_FILE must be unset"):
        load({**BASE, "HYPERFLEET_API_AUTH": "google-id-token", "HYPERFLEET_API_TOKEN_FILE": __file__})
    with pytest.raises(ConfigError, match=r"^HYPERFLEET_API_AUDIENCE"):
        load({**BASE, "HYPERFLEET_API_AUTH": "google-id-token", "HYPERFLEET_API_AUDIENCE": "two words"})


SERVICE = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SERVICE_URL": "https://pss.example.com/"}


def test_the_pull_secret_service_settings_and_their_defaults() -> None:
    settings = load(SERVICE)
    assert settings.source == "service"
    service = settings.of(ServiceSettings)
    assert service.url == "https://pss.example.com"
    assert service.auth == "google-id-token"
    assert service.audience == "https://pss.example.com"  # the base URL by default
    assert service.registries == ("quay", "rhit")
    assert service.timeout_s == 10.0
    assert settings.of(PlatformSettings).version is None
    local = load(
        {**SERVICE, "PULL_SECRET_SERVICE_URL": "http://127.0.0.1:9000", "PULL_SECRET_SERVICE_REGISTRIES": "quay"}
    )
    assert local.of(ServiceSettings).registries == ("quay",)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({**SERVICE, "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}, "PULL_SECRET_SERVICE_URL"),
        ({**SERVICE, "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}, "PULL_SECRET_SOURCE"),
        ({**SERVICE, "PULL_SECRET_SERVICE_URL": "http://pss.example.com"}, "PULL_SECRET_SERVICE_URL"),
        ({**SERVICE, "PULL_SECRET_SERVICE_URL": "https://user:pw@pss.example.com"}, "PULL_SECRET_SERVICE_URL"),
        ({"HYPERFLEET_API_URL": "http://127.0.0.1:8000"}, "PULL_SECRET_SOURCE"),  # neither: both named
        ({"HYPERFLEET_API_URL": "http://127.0.0.1:8000"}, "PULL_SECRET_SERVICE_URL"),
        ({**SERVICE, "PULL_SECRET_SERVICE_AUTH": "password"}, "PULL_SECRET_SERVICE_AUTH"),
        ({**SERVICE, "PULL_SECRET_SERVICE_AUTH": "token-file"}, "PULL_SECRET_SERVICE_TOKEN_FILE"),
        ({**SERVICE, "PULL_SECRET_SERVICE_REGISTRIES": "quay,Bad Registry"}, "PULL_SECRET_SERVICE_REGISTRIES"),
        ({**SERVICE, "PULL_SECRET_SERVICE_REGISTRIES": ","}, "PULL_SECRET_SERVICE_REGISTRIES"),
        ({**BASE, "PULL_SECRET_SERVICE_AUDIENCE": "x"}, "PULL_SECRET_SERVICE_AUDIENCE"),
    ],
)
def test_bad_pull_secret_service_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(env)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("SECRET_WRITE_QUOTA", "SECRET_WRITE_QUOTA must be a number of Secret Manager writes per minute, got 'fast'"),
        ("ROTATION_PUBLISH_RATE", "ROTATION_PUBLISH_RATE must be a number of events per second, got 'fast'"),
        (
            "ROTATION_WRITES_PER_CLUSTER",
            "ROTATION_WRITES_PER_CLUSTER must be a number of Secret Manager writes per cluster, got 'fast'",
        ),
        ("ROTATION_SLICE", "ROTATION_SLICE must be a number of seconds, got 'fast'"),
    ],
)
def test_a_rotation_pace_that_is_no_number_is_refused_in_its_own_unit(name: str, said: str) -> None:
    """A rate is not a number of seconds: the message says what the setting counts (README's Configuration)."""
    with pytest.raises(ConfigError) as raised:
        load({**BASE, name: "fast"})
    assert str(raised.value) == said
