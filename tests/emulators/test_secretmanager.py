"""The Secret Manager emulator driven by the official client over real gRPC."""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.api_core import exceptions as gexc
from google.api_core import retry as gretry
from google.cloud import secretmanager_v1 as sm

from emulators.faults import FaultBook
from emulators.secretmanager import SecretManagerEmulator, crc32c, crc32c_pure
from tests.emulators.secretmanager_client import NUMBER, PROJECT, SA_A, SA_B, TOKENS, make_client

AUTO: dict[str, dict[str, str]] = {"automatic": {}}
ClientFactory = Callable[..., sm.SecretManagerServiceClient]


@pytest.fixture
def book() -> FaultBook:
    return FaultBook()


@pytest.fixture
def emulator(book: FaultBook) -> Iterator[SecretManagerEmulator]:
    emu = SecretManagerEmulator(book)
    emu.add_project(PROJECT, NUMBER)
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def client(emulator: SecretManagerEmulator) -> sm.SecretManagerServiceClient:
    return make_client(emulator.address)


@pytest.fixture
def auth_emulator(book: FaultBook) -> Iterator[SecretManagerEmulator]:
    emu = SecretManagerEmulator(book, authenticate=TOKENS.get)
    emu.add_project(PROJECT, NUMBER)
    emu.start()
    yield emu
    emu.stop()


def create(client: sm.SecretManagerServiceClient, sid: str = "s1", **fields: object) -> sm.Secret:
    secret = sm.Secret({"replication": AUTO, **fields})
    return client.create_secret(parent=f"projects/{PROJECT}", secret_id=sid, secret=secret)


def add(client: sm.SecretManagerServiceClient, data: bytes, sid: str = "s1") -> sm.SecretVersion:
    return client.add_secret_version(
        parent=f"projects/{PROJECT}/secrets/{sid}",
        payload=sm.SecretPayload({"data": data, "data_crc32c": crc32c(data)}),
    )


NO_RETRY = None


# -- secrets -------------------------------------------------------------------------------------
def test_create_answers_with_project_number_and_accepts_id_or_number(
    client: sm.SecretManagerServiceClient,
) -> None:
    secret = create(client, labels={"managed-by": "hyperfleet"}, annotations={"Owner.Team": "x"})
    assert secret.name == f"projects/{NUMBER}/secrets/s1"
    assert secret.etag.startswith('"') and secret.create_time
    by_id = client.get_secret(name=f"projects/{PROJECT}/secrets/s1")
    by_number = client.get_secret(name=f"projects/{NUMBER}/secrets/s1")
    assert by_id.name == by_number.name == secret.name
    assert dict(by_id.labels) == {"managed-by": "hyperfleet"}
    with pytest.raises(gexc.AlreadyExists):
        client.create_secret(parent=f"projects/{NUMBER}", secret_id="s1", secret=sm.Secret({"replication": AUTO}))


def test_projects_are_separate_namespaces(emulator: SecretManagerEmulator) -> None:
    client = make_client(emulator.address)
    create(client)
    other = client.create_secret(
        parent="projects/other-project", secret_id="s1", secret=sm.Secret({"replication": AUTO})
    )
    assert other.name.startswith("projects/") and other.name != f"projects/{NUMBER}/secrets/s1"
    number = other.name.split("/")[1]
    assert len(number) == 12 and number.isdigit()
    # the derived number is deterministic
    assert SecretManagerEmulator(FaultBook()).projects.number("other-project") == number
    with pytest.raises(gexc.NotFound):
        client.get_secret(name="projects/third-project/secrets/s1")


@pytest.mark.parametrize(
    ("secret_id", "fields"),
    [
        ("bad.id", {}),
        ("x" * 256, {}),
        ("ok", {"labels": {"Env": "x"}}),
        ("ok", {"labels": {"1env": "x"}}),
        ("ok", {"labels": {"cluster-name": "My.Cluster"}}),
        ("ok", {"labels": {f"k{i}": "v" for i in range(65)}}),
        ("ok", {"annotations": {"hyperfleet.io/path": "x"}}),
        ("ok", {"annotations": {"-x": "y"}}),
        ("ok", {"annotations": {"big": "v" * 16 * 1024}}),
        ("ok", {"replication": {}}),
        ("ok", {"replication": {"user_managed": {"replicas": []}}}),
    ],
)
def test_create_rejects_what_the_real_service_rejects(
    client: sm.SecretManagerServiceClient, secret_id: str, fields: dict[str, object]
) -> None:
    with pytest.raises(gexc.InvalidArgument):
        create(client, secret_id, **fields)


def test_user_managed_replication_and_immutable_replication(client: sm.SecretManagerServiceClient) -> None:
    replication = {"user_managed": {"replicas": [{"location": "us-east1"}, {"location": "europe-west1"}]}}
    secret = create(client, replication=replication)
    assert [r.location for r in secret.replication.user_managed.replicas] == ["us-east1", "europe-west1"]
    with pytest.raises(gexc.InvalidArgument):
        client.update_secret(
            secret=sm.Secret({"name": secret.name, "replication": AUTO}),
            update_mask={"paths": ["replication"]},
        )


def test_update_labels_with_etag(client: sm.SecretManagerServiceClient) -> None:
    secret = create(client, labels={"a": "1"})
    updated = client.update_secret(
        secret=sm.Secret({"name": secret.name, "labels": {"b": "2"}, "etag": secret.etag}),
        update_mask={"paths": ["labels"]},
    )
    assert dict(updated.labels) == {"b": "2"} and updated.etag != secret.etag
    with pytest.raises(gexc.FailedPrecondition):
        client.update_secret(
            secret=sm.Secret({"name": secret.name, "labels": {"c": "3"}, "etag": secret.etag}),
            update_mask={"paths": ["labels"]},
        )
    with pytest.raises(gexc.InvalidArgument):  # an update still validates labels
        client.update_secret(
            secret=sm.Secret({"name": secret.name, "labels": {"c": "UP"}}), update_mask={"paths": ["labels"]}
        )
    with pytest.raises(gexc.InvalidArgument):  # no mask
        client.update_secret(secret=sm.Secret({"name": secret.name, "labels": {"c": "3"}}))
    # an empty etag means unconditional
    again = client.update_secret(
        secret=sm.Secret({"name": secret.name, "annotations": {"k": "v"}}),
        update_mask={"paths": ["annotations"]},
    )
    assert dict(again.labels) == {"b": "2"} and dict(again.annotations) == {"k": "v"}
    with pytest.raises(gexc.NotFound):
        client.update_secret(
            secret=sm.Secret({"name": f"projects/{PROJECT}/secrets/nope"}), update_mask={"paths": ["labels"]}
        )


def test_delete_with_etag(client: sm.SecretManagerServiceClient) -> None:
    secret = create(client)
    add(client, b"x")
    with pytest.raises(gexc.FailedPrecondition):
        client.delete_secret(request={"name": secret.name, "etag": '"0"'})
    client.delete_secret(request={"name": secret.name, "etag": secret.etag})
    with pytest.raises(gexc.NotFound):
        client.get_secret(name=secret.name)
    with pytest.raises(gexc.NotFound):
        client.access_secret_version(name=f"{secret.name}/versions/latest", retry=NO_RETRY)


def test_list_secrets_with_label_filter_and_pages(client: sm.SecretManagerServiceClient) -> None:
    for i in range(5):
        create(client, f"s{i}", labels={"managed-by": "hyperfleet" if i % 2 == 0 else "other"})
    names = [s.name for s in client.list_secrets(parent=f"projects/{PROJECT}")]
    assert len(names) == 5
    mine = client.list_secrets(request={"parent": f"projects/{NUMBER}", "filter": "labels.managed-by=hyperfleet"})
    assert [s.name.rsplit("/", 1)[1] for s in mine] == ["s0", "s2", "s4"]
    page = client.list_secrets(request={"parent": f"projects/{PROJECT}", "page_size": 2})
    first = next(iter(page.pages))
    assert len(first.secrets) == 2 and first.next_page_token
    assert len(list(page)) == 5
    with pytest.raises(gexc.InvalidArgument):
        client.list_secrets(request={"parent": f"projects/{PROJECT}", "page_token": "garbage!"}).pages.__next__()


def test_crc32c_matches_the_reference_vector() -> None:
    assert crc32c(b"123456789") == crc32c_pure(b"123456789") == 0xE3069283
    assert crc32c(b"x" * 70000) == crc32c_pure(b"x" * 70000)


# -- versions ------------------------------------------------------------------------------------
def test_add_and_access_round_trips_crc32c(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    data = b'{"auths": {"quay.io": {"auth": "dTpw"}}}'
    version = add(client, data)
    assert version.name == f"projects/{NUMBER}/secrets/s1/versions/1"
    assert version.state == sm.SecretVersion.State.ENABLED and version.client_specified_payload_checksum
    got = client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/latest")
    assert got.name == version.name  # latest resolves to the number
    assert got.payload.data == data and got.payload.data_crc32c == crc32c(data)
    plain = client.add_secret_version(
        parent=f"projects/{PROJECT}/secrets/s1", payload=sm.SecretPayload({"data": b"v2"})
    )
    assert not plain.client_specified_payload_checksum and plain.name.endswith("/versions/2")


def test_add_version_rejections(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    parent = f"projects/{PROJECT}/secrets/s1"
    with pytest.raises(gexc.DataLoss):
        client.add_secret_version(
            parent=parent, payload=sm.SecretPayload({"data": b"abc", "data_crc32c": crc32c(b"abd")})
        )
    with pytest.raises(gexc.InvalidArgument):
        client.add_secret_version(parent=parent, payload=sm.SecretPayload({"data": b"x" * (64 * 1024 + 1)}))
    with pytest.raises(gexc.InvalidArgument):
        client.add_secret_version(parent=parent, payload=sm.SecretPayload({"data": b""}))
    with pytest.raises(gexc.NotFound):
        client.add_secret_version(
            parent=f"projects/{PROJECT}/secrets/missing", payload=sm.SecretPayload({"data": b"x"})
        )
    assert client.add_secret_version(parent=parent, payload=sm.SecretPayload({"data": b"x" * 64 * 1024})).name.endswith(
        "/1"
    )


def test_latest_is_newest_version_whatever_its_state(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    add(client, b"one")
    two = add(client, b"two")
    client.disable_secret_version(name=two.name)
    with pytest.raises(gexc.FailedPrecondition, match="is in DISABLED state"):
        client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/latest", retry=NO_RETRY)
    assert client.get_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/latest").name == two.name
    assert client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/1").payload.data == b"one"
    with pytest.raises(gexc.NotFound):
        client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/3", retry=NO_RETRY)


def test_version_state_machine_and_etags(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    v1 = add(client, b"one")
    with pytest.raises(gexc.FailedPrecondition):
        client.disable_secret_version(request={"name": v1.name, "etag": '"1"'})
    disabled = client.disable_secret_version(request={"name": v1.name, "etag": v1.etag})
    assert disabled.state == sm.SecretVersion.State.DISABLED and disabled.etag != v1.etag
    enabled = client.enable_secret_version(request={"name": v1.name, "etag": disabled.etag})
    assert enabled.state == sm.SecretVersion.State.ENABLED
    with pytest.raises(gexc.InvalidArgument):  # state changes need a version number
        client.destroy_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/latest")
    destroyed = client.destroy_secret_version(name=v1.name)
    assert destroyed.state == sm.SecretVersion.State.DESTROYED and destroyed.destroy_time
    with pytest.raises(gexc.FailedPrecondition, match="DESTROYED"):
        client.access_secret_version(name=v1.name, retry=NO_RETRY)
    with pytest.raises(gexc.FailedPrecondition):
        client.enable_secret_version(name=v1.name)


def test_destroy_with_version_destroy_ttl_schedules(
    client: sm.SecretManagerServiceClient, emulator: SecretManagerEmulator
) -> None:
    create(client, version_destroy_ttl=dt.timedelta(days=1))
    v1 = add(client, b"one")
    scheduled = client.destroy_secret_version(name=v1.name)
    assert scheduled.state == sm.SecretVersion.State.DISABLED
    assert scheduled.scheduled_destroy_time > dt.datetime.now(dt.UTC)
    assert emulator.payload(PROJECT, "s1", 1) == b"one"  # still recoverable
    restored = client.enable_secret_version(name=v1.name)
    assert restored.state == sm.SecretVersion.State.ENABLED
    assert "scheduled_destroy_time" not in restored


def test_list_versions_newest_first_paged_and_filtered(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    for i in range(5):
        add(client, f"v{i}".encode())
    client.disable_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/2")
    parent = f"projects/{PROJECT}/secrets/s1"
    numbers = [int(v.name.rsplit("/", 1)[1]) for v in client.list_secret_versions(parent=parent)]
    assert numbers == [5, 4, 3, 2, 1]
    pager = client.list_secret_versions(request={"parent": parent, "page_size": 2})
    assert [len(p.versions) for p in pager.pages] == [2, 2, 1]
    enabled = client.list_secret_versions(request={"parent": parent, "filter": "state:ENABLED"})
    assert [int(v.name.rsplit("/", 1)[1]) for v in enabled] == [5, 4, 3, 1]
    with pytest.raises(gexc.NotFound):
        list(client.list_secret_versions(parent=f"projects/{PROJECT}/secrets/none"))


def test_latest_of_a_secret_without_versions_is_not_found(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    with pytest.raises(gexc.NotFound, match="not found or has no versions"):
        client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/latest", retry=NO_RETRY)
    with pytest.raises(gexc.InvalidArgument):
        client.get_secret(name=f"projects/{PROJECT}/secrets/bad.id")


def test_concurrent_adds_get_distinct_versions_and_state_is_json(
    client: sm.SecretManagerServiceClient, emulator: SecretManagerEmulator
) -> None:
    create(client)
    with ThreadPoolExecutor(8) as pool:
        names = list(pool.map(lambda i: add(client, f"v{i}".encode()).name, range(16)))
    assert len(set(names)) == 16
    snapshot = json.loads(json.dumps(emulator.state()))
    assert len(snapshot["secrets"][0]["versions"]) == 16


# -- quota, faults, counters -----------------------------------------------------------------------
def test_write_quota_per_project(client: sm.SecretManagerServiceClient, emulator: SecretManagerEmulator) -> None:
    assert emulator.handle_admin("PUT", "/quota", {"writes_per_minute": 2, "window_s": 60})[0] == 200
    create(client)
    add(client, b"1")
    with pytest.raises(gexc.ResourceExhausted, match="Quota exceeded for quota metric 'Write requests'") as info:
        add(client, b"2")
    assert any(getattr(d, "reason", "") == "RATE_LIMIT_EXCEEDED" for d in info.value.details)
    # reads are not write-limited; another project has its own budget
    assert client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/1").payload.data == b"1"
    client.create_secret(parent="projects/other-project", secret_id="s1", secret=sm.Secret({"replication": AUTO}))
    assert emulator.quota.rejected == 1
    emulator.quota.configure(None)
    add(client, b"2")


def test_fault_count_rate_latency_and_counters(client: sm.SecretManagerServiceClient, book: FaultBook) -> None:
    create(client)
    add(client, b"x")
    name = f"projects/{PROJECT}/secrets/s1/versions/latest"
    book.add({"service": "secretmanager", "method": "AccessSecretVersion", "code": "UNAVAILABLE", "count": 2})
    with pytest.raises(gexc.ServiceUnavailable):
        client.access_secret_version(name=name, retry=NO_RETRY)
    quick = gretry.Retry(initial=0.01, maximum=0.02, timeout=5, predicate=gretry.if_transient_error)
    assert client.access_secret_version(name=name, retry=quick).payload.data == b"x"
    assert book.calls()["secretmanager"]["AccessSecretVersion"] == 3
    assert book.faults_injected()["secretmanager"]["AccessSecretVersion"] == 2

    book.clear()
    book.add({"service": "secretmanager", "method": "GetSecret", "code": "INTERNAL", "rate": 1.0, "seed": 1})
    with pytest.raises(gexc.InternalServerError):
        client.get_secret(name=f"projects/{PROJECT}/secrets/s1", retry=NO_RETRY)
    book.clear()
    book.add({"service": "secretmanager", "method": "*", "code": "reset", "count": 1})
    with pytest.raises(gexc.ServiceUnavailable, match="reset"):
        client.get_secret(name=f"projects/{PROJECT}/secrets/s1", retry=NO_RETRY)
    book.clear()
    book.add({"service": "secretmanager", "method": "*", "code": "RESOURCE_EXHAUSTED", "count": 1})
    with pytest.raises(gexc.ResourceExhausted):
        client.get_secret(name=f"projects/{PROJECT}/secrets/s1", retry=NO_RETRY)

    book.clear()
    book.add({"service": "secretmanager", "method": "GetSecret", "latency_ms": 150})
    start = time.monotonic()
    client.get_secret(name=f"projects/{PROJECT}/secrets/s1")
    assert time.monotonic() - start >= 0.15


def test_timeout_fault_hangs_until_the_client_deadline(client: sm.SecretManagerServiceClient, book: FaultBook) -> None:
    create(client)
    book.add({"service": "secretmanager", "method": "GetSecret", "code": "timeout", "count": 1})
    start = time.monotonic()
    with pytest.raises(gexc.DeadlineExceeded):
        client.get_secret(name=f"projects/{PROJECT}/secrets/s1", retry=NO_RETRY, timeout=0.3)
    assert 0.25 < time.monotonic() - start < 5


# -- auth and IAM --------------------------------------------------------------------------------
def test_auth_missing_or_bad_token_is_unauthenticated(auth_emulator: SecretManagerEmulator) -> None:
    with pytest.raises(gexc.Unauthenticated):
        make_client(auth_emulator.address).get_secret(name=f"projects/{PROJECT}/secrets/s1")
    with pytest.raises(gexc.Unauthenticated):
        make_client(auth_emulator.address, "wrong").get_secret(name=f"projects/{PROJECT}/secrets/s1")


def test_iam_grants_per_project_and_writer_is_recorded(auth_emulator: SecretManagerEmulator) -> None:
    a = make_client(auth_emulator.address, "tok-a")
    b = make_client(auth_emulator.address, "tok-b")
    create(b, "open")  # no grants on the project yet: any authenticated caller may act
    auth_emulator.grant(PROJECT, SA_A)
    create(a)
    add(a, b"secret")
    with pytest.raises(gexc.PermissionDenied):
        b.access_secret_version(name=f"projects/{NUMBER}/secrets/s1/versions/1", retry=NO_RETRY)
    with pytest.raises(gexc.PermissionDenied):  # denied before existence is revealed
        b.get_secret(name=f"projects/{PROJECT}/secrets/missing")
    secret = auth_emulator.secret(NUMBER, "s1")
    assert secret is not None and secret["created_by"] == SA_A
    assert auth_emulator.versions(PROJECT, "s1")[0]["created_by"] == SA_A
    assert auth_emulator.secret(PROJECT, "open")["created_by"] == SA_B  # type: ignore[index]


def test_plaintext_channel_works_without_auth(emulator: SecretManagerEmulator) -> None:
    client = make_client(emulator.address, insecure=True)
    assert create(client).name == f"projects/{NUMBER}/secrets/s1"


# -- admin routes --------------------------------------------------------------------------------
def test_admin_routes(emulator: SecretManagerEmulator, client: sm.SecretManagerServiceClient) -> None:
    payload = base64.b64encode(b"seeded").decode()
    status, body = emulator.handle_admin(
        "PUT", f"/projects/{PROJECT}/secrets/seeded", {"labels": {"a": "b"}, "versions": [payload, payload]}
    )
    assert status == 200 and body["name"] == f"projects/{NUMBER}/secrets/seeded"
    got = client.access_secret_version(name=f"projects/{PROJECT}/secrets/seeded/versions/latest")
    assert got.payload.data == b"seeded" and got.name.endswith("/versions/2")
    status, one = emulator.handle_admin("GET", f"/projects/{NUMBER}/secrets/seeded", None)
    assert status == 200 and one["versions"][0]["payload_b64"] == payload
    assert emulator.handle_admin("GET", f"/projects/{PROJECT}/secrets/none", None)[0] == 404
    assert emulator.handle_admin("PUT", f"/projects/{PROJECT}/secrets/bad", {"labels": {"A": "b"}})[0] == 400
    assert len(emulator.handle_admin("GET", "/secrets", None)[1]) == 1
    assert emulator.handle_admin("POST", "/iam", {"project": PROJECT, "identity": SA_A})[0] == 200
    [owner] = emulator.state()["iam"]
    assert (owner["member"], owner["role"], owner["resource"]) == (SA_A, "roles/owner", f"projects/{NUMBER}")
    assert emulator.handle_admin("POST", "/projects", {"project_id": "p2", "number": "222222222222"})[0] == 200
    assert emulator.projects.number("p2") == "222222222222"
    assert emulator.handle_admin("PUT", "/quota", {"writes_per_minute": 5})[1]["limit"] == 5
    assert emulator.handle_admin("POST", "/reset", None)[0] == 200
    assert emulator.state()["secrets"] == [] and emulator.state()["iam"] == []
    assert emulator.handle_admin("GET", "/nothing", None)[0] == 404


# -- allow policies on secrets (emulators/secret_iam_policy.py) ------------------------------------
ACCESSOR = "roles/secretmanager.secretAccessor"
WI_MEMBER = (
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
    "my-project.svc.id.goog/subject/ns/clusters-a/sa/pull-secret-reader"
)


def test_iam_policy_read_modify_write_with_etags(client: sm.SecretManagerServiceClient) -> None:
    """https://cloud.google.com/iam/docs/policies#etag: a stale etag is ABORTED and changes nothing."""
    create(client)
    name = f"projects/{PROJECT}/secrets/s1"
    first = client.get_iam_policy(request={"resource": name})
    assert list(first.bindings) == [] and first.etag
    first.bindings.add(role=ACCESSOR, members=[WI_MEMBER])
    written = client.set_iam_policy(request={"resource": name, "policy": first})
    assert written.etag != first.etag and [list(b.members) for b in written.bindings] == [[WI_MEMBER]]
    stale = client.get_iam_policy(request={"resource": name})
    stale.etag = first.etag
    stale.bindings.add(role=ACCESSOR, members=["user:someone@example.com"])
    with pytest.raises(gexc.Aborted):
        client.set_iam_policy(request={"resource": name, "policy": stale}, retry=NO_RETRY)
    now = client.get_iam_policy(request={"resource": name})
    assert now.etag == written.etag and len(now.bindings) == 1
    stale.etag = b""  # no etag: a blind overwrite
    assert len(client.set_iam_policy(request={"resource": name, "policy": stale}).bindings) == 2


def test_iam_policy_refuses_what_iam_refuses_and_goes_with_the_secret(client: sm.SecretManagerServiceClient) -> None:
    create(client)
    name = f"projects/{PROJECT}/secrets/s1"
    for member, role in (("alice@example.com", ACCESSOR), (WI_MEMBER, "secretAccessor")):
        policy = client.get_iam_policy(request={"resource": name})
        policy.bindings.add(role=role, members=[member])
        with pytest.raises(gexc.InvalidArgument):
            client.set_iam_policy(request={"resource": name, "policy": policy}, retry=NO_RETRY)
    policy = client.get_iam_policy(request={"resource": name})
    policy.bindings.add(role=ACCESSOR, members=[WI_MEMBER]).condition.expression = "true"
    with pytest.raises(gexc.InvalidArgument):  # a condition needs version 3
        client.set_iam_policy(request={"resource": name, "policy": policy}, retry=NO_RETRY)
    policy.version = 3
    assert client.set_iam_policy(request={"resource": name, "policy": policy}).version == 3
    client.delete_secret(name=name)
    with pytest.raises(gexc.NotFound):
        client.get_iam_policy(request={"resource": name}, retry=NO_RETRY)
    create(client)
    assert list(client.get_iam_policy(request={"resource": name}).bindings) == []


def test_iam_policy_needs_its_permissions_under_the_condition(auth_emulator: SecretManagerEmulator) -> None:
    """setIamPolicy only on the secrets the caller's IAM condition covers."""
    a = make_client(auth_emulator.address, "tok-a")
    auth_emulator.grant(PROJECT, SA_B)
    b = make_client(auth_emulator.address, "tok-b")
    create(b, "hyperfleet-c1-pull-secret")
    create(b, "other")
    auth_emulator.bind(
        SA_A,
        "roles/custom",
        f"projects/{PROJECT}",
        permissions=frozenset({"secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy"}),
        condition=f'resource.name.startsWith("projects/{NUMBER}/secrets/hyperfleet-")',
    )
    ours = f"projects/{PROJECT}/secrets/hyperfleet-c1-pull-secret"
    policy = a.get_iam_policy(request={"resource": ours})
    policy.bindings.add(role=ACCESSOR, members=[WI_MEMBER])
    a.set_iam_policy(request={"resource": ours, "policy": policy})
    for call in (a.get_iam_policy, a.set_iam_policy):
        request = {"resource": f"projects/{PROJECT}/secrets/other"}
        if call == a.set_iam_policy:
            request["policy"] = policy  # type: ignore[assignment]
        with pytest.raises(gexc.PermissionDenied):
            call(request=request, retry=NO_RETRY)


def test_iam_policy_admin_race_lands_after_the_next_read(
    emulator: SecretManagerEmulator, client: sm.SecretManagerServiceClient
) -> None:
    create(client)
    name = f"projects/{PROJECT}/secrets/s1"
    other = {"bindings": [{"role": "roles/secretmanager.viewer", "members": ["group:ops@example.com"]}]}
    assert emulator.handle_admin("POST", f"/projects/{PROJECT}/secrets/s1/iamPolicyRace", other)[0] == 200
    read = client.get_iam_policy(request={"resource": name})
    assert list(read.bindings) == []  # the read saw the policy before the other writer
    read.bindings.add(role=ACCESSOR, members=[WI_MEMBER])
    with pytest.raises(gexc.Aborted):
        client.set_iam_policy(request={"resource": name, "policy": read}, retry=NO_RETRY)
    shown = emulator.secret(PROJECT, "s1")
    assert shown is not None and shown["iam_policy"]["bindings"] == other["bindings"]
    status, _ = emulator.handle_admin("PUT", f"/projects/{PROJECT}/secrets/s1/iamPolicy", {"bindings": []})
    assert status == 200 and list(client.get_iam_policy(request={"resource": name}).bindings) == []


def test_the_admin_api_adds_a_version_as_another_writer_would(
    emulator: SecretManagerEmulator, client: sm.SecretManagerServiceClient
) -> None:
    """`POST /projects/{p}/secrets/{id}/versions` (a platform team rotating its secret, for the playground's recipe):
    the next number, enabled, what AccessSecretVersion `latest` then answers; a bad body changes nothing."""
    create(client)
    add(client, b"v1")
    code, answer = emulator.handle_admin(
        "POST", f"/projects/{PROJECT}/secrets/s1/versions", {"payload": base64.b64encode(b"v2").decode()}
    )
    assert code == 200 and answer["versions"][-1]["name"].endswith("/versions/2"), answer
    got = client.access_secret_version(name=f"projects/{PROJECT}/secrets/s1/versions/latest")
    assert got.name.endswith("/versions/2") and got.payload.data == b"v2"
    for body in ({}, {"payload": "not base64!"}, {"payload": ""}, []):
        code, _ = emulator.handle_admin("POST", f"/projects/{PROJECT}/secrets/s1/versions", body)
        assert code == 400, body
    missing = emulator.handle_admin("POST", f"/projects/{PROJECT}/secrets/nope/versions", {"payload": "djM="})
    assert missing[0] == 404
    assert len(list(client.list_secret_versions(parent=f"projects/{PROJECT}/secrets/s1"))) == 2
