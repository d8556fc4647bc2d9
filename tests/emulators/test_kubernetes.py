"""The Kubernetes emulator, driven by the official client over real HTTPS."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator

SA = "adapter@proj.iam.gserviceaccount.com"
TOKEN = "ya29.adapter-token"
NS = "clusters-abc"
# The generated models make every attribute Optional; the tests read them as plain values.
Api = Any
DOCKERCONFIG = json.dumps({"auths": {"quay.io": {"auth": base64.b64encode(b"u:p").decode()}}})


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[KubernetesEmulator, FaultBook]]:
    book = FaultBook()
    emu = KubernetesEmulator(book, authenticate=lambda token: SA if token == TOKEN else None)
    emu.start()
    yield emu, book
    emu.stop()


@pytest.fixture
def emu(server: tuple[KubernetesEmulator, FaultBook]) -> KubernetesEmulator:
    emulator, book = server
    emulator.reset()
    book.clear()
    book.reset_counters()
    emulator.add_namespace(NS)
    emulator.grant(SA, namespace=NS)
    return emulator


@pytest.fixture
def book(server: tuple[KubernetesEmulator, FaultBook]) -> FaultBook:
    return server[1]


def make_api(emu: KubernetesEmulator, tmp_path: Path, token: str = TOKEN, **kw: Any) -> Api:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(emu.ca_pem)
    config = client.Configuration(
        host=f"https://{emu.address}", ssl_ca_cert=str(ca), api_key={"authorization": f"Bearer {token}"}
    )
    config.retries = False
    for key, value in kw.items():
        setattr(config, key, value)
    return client.CoreV1Api(client.ApiClient(config))


@pytest.fixture
def api(emu: KubernetesEmulator, tmp_path: Path) -> Api:
    return make_api(emu, tmp_path)


def pull_secret(name: str = "cls-abc-pull-secret", **labels: str) -> client.V1Secret:
    return client.V1Secret(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {"managed-by": "hyperfleet"}),
        type="kubernetes.io/dockerconfigjson",
        data={".dockerconfigjson": b64(DOCKERCONFIG)},
    )


def status_of(exc: ApiException) -> dict[str, Any]:
    assert exc.body is not None
    body: dict[str, Any] = json.loads(exc.body)
    return body


# -- CRUD ---------------------------------------------------------------------------------------
def test_create_get_and_server_fields(api: Api, emu: KubernetesEmulator) -> None:
    created = api.create_namespaced_secret(NS, pull_secret())
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert int(created.metadata.resource_version) > 0
    assert created.metadata.generation is None
    got = api.read_namespaced_secret("cls-abc-pull-secret", NS)
    assert got.data == {".dockerconfigjson": b64(DOCKERCONFIG)}
    assert got.type == "kubernetes.io/dockerconfigjson"
    [entry] = got.metadata.managed_fields
    assert (entry.manager, entry.operation) == ("OpenAPI-Generator", "Update")
    assert entry.fields_v1["f:data"] == {".": {}, "f:.dockerconfigjson": {}}
    stored = emu.get_secret(NS, "cls-abc-pull-secret")
    assert stored is not None and stored["kind"] == "Secret" and stored["apiVersion"] == "v1"


def test_string_data_is_folded_and_type_defaults(api: Api) -> None:
    body = client.V1Secret(metadata=client.V1ObjectMeta(name="plain"), string_data={"a": "b"})
    created = api.create_namespaced_secret(NS, body)
    assert created.data == {"a": b64("b")} and created.string_data is None
    assert created.type == "Opaque"


def test_create_twice_is_already_exists(api: Api) -> None:
    api.create_namespaced_secret(NS, pull_secret())
    with pytest.raises(ApiException) as err:
        api.create_namespaced_secret(NS, pull_secret())
    assert err.value.status == 409 and err.value.reason == "Conflict"
    status = status_of(err.value)
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'secrets "cls-abc-pull-secret" already exists'


def test_create_in_missing_namespace_is_namespace_not_found(api: Api, emu: KubernetesEmulator) -> None:
    emu.grant(SA)
    with pytest.raises(ApiException) as err:
        api.create_namespaced_secret("nope", pull_secret())
    status = status_of(err.value)
    assert err.value.status == 404
    assert status["message"] == 'namespaces "nope" not found'
    assert status["details"] == {"name": "nope", "kind": "namespaces"}


def test_get_missing_is_not_found(api: Api) -> None:
    with pytest.raises(ApiException) as err:
        api.read_namespaced_secret("missing", NS)
    status = status_of(err.value)
    assert err.value.status == 404
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'secrets "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "secrets"},
        "code": 404,
    }


def test_namespace_get(api: Api) -> None:
    assert api.read_namespace(NS).status.phase == "Active"
    with pytest.raises(ApiException) as err:
        api.read_namespace("other")
    assert err.value.status == 403  # no right outside the granted namespace


def test_list_with_label_selectors(api: Api) -> None:
    api.create_namespaced_secret(NS, pull_secret("a", app="x", tier="web"))
    api.create_namespaced_secret(NS, pull_secret("b", app="y"))
    api.create_namespaced_secret(NS, pull_secret("c", tier="db"))

    def names(selector: str) -> list[str]:
        listed = api.list_namespaced_secret(NS, label_selector=selector)
        assert int(listed.metadata.resource_version) > 0
        return [s.metadata.name for s in listed.items]

    assert names("") == ["a", "b", "c"]
    assert names("app=x") == ["a"]
    assert names("app==x,tier=web") == ["a"]
    assert names("app!=x") == ["b", "c"]
    assert names("app") == ["a", "b"]
    assert names("!app") == ["c"]
    assert names("app in (x, y)") == ["a", "b"]
    assert names("tier notin (web)") == ["b", "c"]
    with pytest.raises(ApiException) as err:
        names("app in x")
    assert err.value.status == 400


def test_list_pages_with_limit_and_continue(api: Api) -> None:
    for name in ("a", "b", "c"):
        api.create_namespaced_secret(NS, pull_secret(name))
    first = api.list_namespaced_secret(NS, limit=2)
    assert [s.metadata.name for s in first.items] == ["a", "b"]
    rest = api.list_namespaced_secret(NS, limit=2, _continue=first.metadata._continue)
    assert [s.metadata.name for s in rest.items] == ["c"] and rest.metadata._continue is None


def test_replace_with_stale_resource_version_conflicts(api: Api) -> None:
    created = api.create_namespaced_secret(NS, pull_secret())
    created.metadata.labels["x"] = "1"
    updated = api.replace_namespaced_secret(created.metadata.name, NS, created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.metadata.labels["x"] = "2"
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_secret(created.metadata.name, NS, created)
    assert err.value.status == 409 and err.value.reason == "Conflict"
    status = status_of(err.value)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on secrets "cls-abc-pull-secret": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert status["details"] == {"name": "cls-abc-pull-secret", "kind": "secrets"}


def test_replace_missing_and_name_mismatch(api: Api) -> None:
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_secret("cls-abc-pull-secret", NS, pull_secret())
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_secret("other", NS, pull_secret())
    assert err.value.status == 400
    assert "does not match the name on the URL" in status_of(err.value)["message"]


def test_unchanged_writes_do_not_bump_resource_version(api: Api) -> None:
    created = api.create_namespaced_secret(NS, pull_secret())
    rv = created.metadata.resource_version
    again = api.replace_namespaced_secret(created.metadata.name, NS, created)
    assert again.metadata.resource_version == rv
    patched = api.patch_namespaced_secret(
        created.metadata.name, NS, {"metadata": {"labels": {"managed-by": "hyperfleet"}}}
    )
    assert patched.metadata.resource_version == rv


def test_delete_and_preconditions(api: Api) -> None:
    created = api.create_namespaced_secret(NS, pull_secret())
    with pytest.raises(ApiException) as err:
        api.delete_namespaced_secret(
            created.metadata.name, NS, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
        )
    assert err.value.status == 409
    assert "Precondition failed: UID in precondition: other" in status_of(err.value)["message"]
    gone = api.delete_namespaced_secret(created.metadata.name, NS)
    # Depending on the client's model for Status, the answer comes back as a model or a dict.
    assert (gone["status"] if isinstance(gone, dict) else gone.status) == "Success"
    with pytest.raises(ApiException) as err:
        api.delete_namespaced_secret(created.metadata.name, NS)
    assert err.value.status == 404


def test_dry_run_create_stores_nothing(api: Api, emu: KubernetesEmulator) -> None:
    api.create_namespaced_secret(NS, pull_secret(), dry_run="All")
    assert emu.get_secret(NS, "cls-abc-pull-secret") is None


# -- patches -------------------------------------------------------------------------------------
def test_strategic_merge_patch_is_the_client_default_for_dicts(api: Api) -> None:
    api.create_namespaced_secret(NS, pull_secret())
    patched = api.patch_namespaced_secret(
        "cls-abc-pull-secret", NS, {"metadata": {"labels": {"extra": "1", "managed-by": None}}}
    )
    assert patched.metadata.labels == {"extra": "1"}
    replaced = api.patch_namespaced_secret(
        "cls-abc-pull-secret", NS, {"metadata": {"labels": {"$patch": "replace", "only": "me"}}}
    )
    assert replaced.metadata.labels == {"only": "me"}


def test_merge_patch(api: Api) -> None:
    api.create_namespaced_secret(NS, pull_secret())
    patched = api.patch_namespaced_secret(
        "cls-abc-pull-secret",
        NS,
        {"data": {"extra": b64("x")}, "metadata": {"annotations": {"a": "b"}}},
        _content_type="application/merge-patch+json",
    )
    assert set(patched.data) == {".dockerconfigjson", "extra"}
    assert patched.metadata.annotations == {"a": "b"}


def test_json_patch(api: Api) -> None:
    api.create_namespaced_secret(NS, pull_secret())
    ops = [
        {"op": "test", "path": "/type", "value": "kubernetes.io/dockerconfigjson"},
        {"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "ps"},
        {"op": "remove", "path": "/metadata/labels/managed-by"},
    ]
    patched = api.patch_namespaced_secret("cls-abc-pull-secret", NS, ops)
    assert patched.metadata.labels == {"app.kubernetes.io/name": "ps"}
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_secret("cls-abc-pull-secret", NS, [{"op": "test", "path": "/type", "value": "Opaque"}])
    assert err.value.status == 422


def test_patch_with_stale_resource_version_conflicts(api: Api) -> None:
    created = api.create_namespaced_secret(NS, pull_secret())
    api.patch_namespaced_secret(created.metadata.name, NS, {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_secret(
            created.metadata.name,
            NS,
            {"metadata": {"resourceVersion": created.metadata.resource_version, "labels": {"x": "2"}}},
            _content_type="application/merge-patch+json",
        )
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"


# -- server-side apply ---------------------------------------------------------------------------
def apply_body(name: str = "cls-abc-pull-secret", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS, "labels": {"managed-by": "hyperfleet"}},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": b64(DOCKERCONFIG), **{k: b64(v) for k, v in data.items()}},
    }


def apply(api: Api, body: dict[str, Any], manager: str = "pullsecret", force: bool = False) -> Any:
    return api.patch_namespaced_secret(
        body["metadata"]["name"],
        NS,
        body,
        field_manager=manager,
        force=force,
        _content_type="application/apply-patch+yaml",
    )


def test_apply_creates_then_is_idempotent(api: Api) -> None:
    first = apply(api, apply_body())
    [entry] = first.metadata.managed_fields
    assert (entry.manager, entry.operation) == ("pullsecret", "Apply")
    assert entry.fields_v1 == {
        "f:data": {"f:.dockerconfigjson": {}},
        "f:metadata": {"f:labels": {"f:managed-by": {}}},
        "f:type": {},
    }
    again = apply(api, apply_body())
    assert again.metadata.resource_version == first.metadata.resource_version


def test_apply_conflicts_with_another_manager(api: Api) -> None:
    apply(api, apply_body(x="1"), manager="other-manager")
    with pytest.raises(ApiException) as err:
        apply(api, apply_body(x="2"))
    assert err.value.status == 409 and err.value.reason == "Conflict"
    status = status_of(err.value)
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "other-manager": .data.x'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "other-manager"', "field": ".data.x"}
    ]
    # The same value is shared ownership, not a conflict; force takes the field over.
    apply(api, apply_body(x="1"))
    taken = apply(api, apply_body(x="2"), force=True)
    assert taken.data["x"] == b64("2")
    owners = {e.manager: e.fields_v1 for e in taken.metadata.managed_fields}
    assert "f:x" not in owners["other-manager"]["f:data"]


def test_apply_conflicts_with_an_update_manager(api: Api, emu: KubernetesEmulator) -> None:
    seeded = apply_body(x="1")
    emu.put_secret(seeded, manager="kubectl-edit")
    with pytest.raises(ApiException) as err:
        apply(api, apply_body(x="2"))
    assert status_of(err.value)["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.x'
    )


def test_apply_conflicts_with_its_own_name_s_create(api: Api) -> None:
    # Managers are keyed by (name, operation): a create by "pullsecret" is an Update entry that an Apply by
    # "pullsecret" conflicts with (kubernetes/kubernetes#107417, #80916); force takes the field into the Apply entry.
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name="cls-abc-pull-secret", labels={"managed-by": "hyperfleet"}),
        type="kubernetes.io/dockerconfigjson",
        data={".dockerconfigjson": b64(DOCKERCONFIG), "x": b64("1")},
    )
    api.create_namespaced_secret(NS, body, field_manager="pullsecret")
    with pytest.raises(ApiException) as err:
        apply(api, apply_body(x="2"))
    assert status_of(err.value)["message"] == (
        'Apply failed with 1 conflict: conflict with "pullsecret" using v1: .data.x'
    )
    taken = apply(api, apply_body(x="2"), force=True)
    owners = {(e.manager, e.operation): e.fields_v1 for e in taken.metadata.managed_fields}
    assert "f:x" in owners[("pullsecret", "Apply")]["f:data"]
    assert "f:x" not in owners[("pullsecret", "Update")]["f:data"]


def test_apply_drops_fields_the_manager_no_longer_applies(api: Api) -> None:
    apply(api, apply_body(x="1"))
    dropped = apply(api, apply_body())
    assert set(dropped.data) == {".dockerconfigjson"}


def test_apply_needs_field_manager(api: Api) -> None:
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_secret(
            "cls-abc-pull-secret", NS, apply_body(), _content_type="application/apply-patch+yaml"
        )
    assert err.value.status == 422
    assert status_of(err.value)["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


def test_apply_type_is_immutable(api: Api) -> None:
    apply(api, {**apply_body(), "type": "Opaque"})
    with pytest.raises(ApiException) as err:
        apply(api, apply_body())
    status = status_of(err.value)
    assert err.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        'Secret "cls-abc-pull-secret" is invalid: type: Invalid value: "kubernetes.io/dockerconfigjson": '
        "field is immutable"
    )


# -- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("secret", "message", "field"),
    [
        (
            client.V1Secret(metadata=client.V1ObjectMeta(name="x"), type="kubernetes.io/dockerconfigjson", data={}),
            'Secret "x" is invalid: data[.dockerconfigjson]: Required value',
            "data[.dockerconfigjson]",
        ),
        (
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="x"),
                type="kubernetes.io/dockerconfigjson",
                data={".dockerconfigjson": b64("[1]")},
            ),
            'Secret "x" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
            "data[.dockerconfigjson]",
        ),
        (
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="x"),
                type="kubernetes.io/dockerconfigjson",
                data={".dockerconfigjson": b64("{not json")},
            ),
            None,
            "data[.dockerconfigjson]",
        ),
        (client.V1Secret(metadata=client.V1ObjectMeta(name="Bad_Name")), None, "metadata.name"),
        (client.V1Secret(metadata=client.V1ObjectMeta(name="x", labels={"a": "v" * 64})), None, "metadata.labels"),
        (client.V1Secret(metadata=client.V1ObjectMeta(name="x", labels={"a/b/c": "v"})), None, "metadata.labels"),
        (client.V1Secret(metadata=client.V1ObjectMeta(name="x"), data={"bad key": b64("v")}), None, "data[bad key]"),
        (
            client.V1Secret(metadata=client.V1ObjectMeta(name="x"), data={"k": b64("v" * (1024 * 1024 + 1))}),
            None,
            "data",
        ),
        (
            client.V1Secret(metadata=client.V1ObjectMeta(name="x", annotations={"a": "v" * (256 * 1024)})),
            None,
            "metadata.annotations",
        ),
    ],
)
def test_invalid_secrets_are_422(api: Api, secret: client.V1Secret, message: str | None, field: str) -> None:
    with pytest.raises(ApiException) as err:
        api.create_namespaced_secret(NS, secret)
    status = status_of(err.value)
    assert err.value.status == 422 and status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Secret"
    assert [c["field"] for c in status["details"]["causes"]] == [field]
    if message is not None:
        assert status["message"] == message


def test_invalid_base64_is_bad_request(api: Api) -> None:
    with pytest.raises(ApiException) as err:
        api.create_namespaced_secret(NS, client.V1Secret(metadata=client.V1ObjectMeta(name="x"), data={"k": "!!"}))
    assert err.value.status == 400
    assert "illegal base64 data at input byte 0" in status_of(err.value)["message"]


def test_type_is_immutable_on_replace(api: Api) -> None:
    created = api.create_namespaced_secret(NS, pull_secret())
    created.type = "Opaque"
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_secret(created.metadata.name, NS, created)
    assert status_of(err.value)["message"] == (
        'Secret "cls-abc-pull-secret" is invalid: type: Invalid value: "Opaque": field is immutable'
    )


# -- authentication, authorisation, TLS -----------------------------------------------------------
def test_unknown_token_is_401(emu: KubernetesEmulator, tmp_path: Path) -> None:
    with pytest.raises(ApiException) as err:
        make_api(emu, tmp_path, token="expired").read_namespaced_secret("x", NS)
    assert err.value.status == 401 and status_of(err.value)["reason"] == "Unauthorized"


def test_static_token(emu: KubernetesEmulator, tmp_path: Path) -> None:
    emu.add_token("static", "robot@proj.iam.gserviceaccount.com")
    emu.grant("robot@proj.iam.gserviceaccount.com", namespace=NS, verbs=("list",))
    assert make_api(emu, tmp_path, token="static").list_namespaced_secret(NS).items == []


def test_missing_right_is_403_with_the_real_message(emu: KubernetesEmulator, tmp_path: Path) -> None:
    emu.add_token("reader", "reader@p.iam.gserviceaccount.com")
    emu.grant("reader@p.iam.gserviceaccount.com", namespace=NS, verbs=("get",))
    reader = make_api(emu, tmp_path, token="reader")
    with pytest.raises(ApiException) as err:
        reader.patch_namespaced_secret("x", NS, {"data": {}})
    status = status_of(err.value)
    assert err.value.status == 403 and status["reason"] == "Forbidden"
    assert status["message"] == (
        'secrets "x" is forbidden: User "reader@p.iam.gserviceaccount.com" cannot patch resource "secrets" '
        'in API group "" in the namespace "clusters-abc"'
    )
    with pytest.raises(ApiException) as err:
        reader.create_namespaced_secret(NS, pull_secret())
    assert status_of(err.value)["message"].startswith("secrets is forbidden: User")


def test_tls_is_verified(emu: KubernetesEmulator) -> None:
    config = client.Configuration(host=f"https://{emu.address}", api_key={"authorization": f"Bearer {TOKEN}"})
    config.retries = False
    untrusting = client.CoreV1Api(client.ApiClient(config))
    with pytest.raises(ApiException) as err:
        untrusting.read_namespace(NS)
    # The client reports TLS failures as status 0 with the SSL error as reason.
    assert err.value.status == 0 and "CERTIFICATE_VERIFY_FAILED" in str(err.value.reason)


def test_certificate_names_localhost(emu: KubernetesEmulator, tmp_path: Path) -> None:
    ctx = ssl.create_default_context(cadata=emu.ca_pem.decode())
    port = int(emu.address.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as raw, ctx.wrap_socket(raw, server_hostname="localhost"):
        pass


# -- faults and counters --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "reason"),
    [("429", "TooManyRequests"), ("500", "InternalError"), ("503", "ServiceUnavailable"), ("504", "Timeout")],
)
def test_injected_status_faults(api: Api, book: FaultBook, code: str, reason: str) -> None:
    book.add({"service": "kubernetes", "method": "get.secrets", "code": code, "count": 1})
    with pytest.raises(ApiException) as err:
        api.read_namespaced_secret("x", NS)
    assert err.value.status == int(code) and status_of(err.value)["reason"] == reason
    if code == "429":
        assert err.value.headers is not None and err.value.headers["Retry-After"] == "1"
    with pytest.raises(ApiException) as err:
        api.read_namespaced_secret("x", NS)
    assert err.value.status == 404  # the rule is spent
    assert book.calls()["kubernetes"]["get.secrets"] == 2
    assert book.faults_injected()["kubernetes"]["get.secrets"] == 1


def test_injected_apf_style_429_is_plain_text(api: Api, book: FaultBook) -> None:
    book.add({"service": "kubernetes", "method": "get.secrets", "code": "429-text", "count": 1})
    with pytest.raises(ApiException) as err:
        api.read_namespaced_secret("x", NS)
    assert err.value.status == 429 and str(err.value.body).startswith("Too many requests")


def test_injected_reset_drops_the_connection(api: Api, book: FaultBook) -> None:
    book.add({"service": "kubernetes", "method": "create.secrets", "code": "reset", "count": 1})
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.create_namespaced_secret(NS, pull_secret())
    assert api.create_namespaced_secret(NS, pull_secret()).metadata.uid


def test_injected_timeout_hangs_until_the_client_gives_up(api: Api, book: FaultBook) -> None:
    book.add({"service": "kubernetes", "method": "list.secrets", "code": "timeout", "count": 1})
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.list_namespaced_secret(NS, _request_timeout=0.5)
    assert 0.4 < time.monotonic() - started < 5
    assert api.list_namespaced_secret(NS).items == []


def test_concurrent_clients(emu: KubernetesEmulator, tmp_path: Path) -> None:
    api = make_api(emu, tmp_path, connection_pool_maxsize=100)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            apply(api, apply_body(f"s-{i}"))
            api.read_namespaced_secret(f"s-{i}", NS)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(api.list_namespaced_secret(NS).items) == 100


# -- admin routes ---------------------------------------------------------------------------------
def test_admin_routes(emu: KubernetesEmulator, api: Api) -> None:
    assert emu.handle_admin("PUT", "/namespaces/extra", None)[0] == 200
    code, _ = emu.handle_admin("PUT", "/rbac", {"identity": SA, "namespace": "extra", "verbs": ["get"]})
    assert code == 200
    code, seeded = emu.handle_admin(
        "PUT", "/namespaces/extra/secrets/theirs", {"type": "Opaque", "data": {"k": b64("v")}}
    )
    assert code == 200 and seeded["metadata"]["resourceVersion"]
    assert api.read_namespaced_secret("theirs", "extra").data == {"k": b64("v")}
    assert emu.handle_admin("DELETE", "/namespaces/extra/secrets/theirs", None)[0] == 200
    assert emu.handle_admin("GET", "/namespaces/extra/secrets/theirs", None)[0] == 404
    code, state = emu.handle_admin("GET", "/state", None)
    assert code == 200 and "extra" in state["namespaces"]
    json.dumps(state)
    assert emu.handle_admin("POST", "/reset", None)[0] == 200
    assert emu.state()["namespaces"] == []
