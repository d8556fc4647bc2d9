"""The operator's tools meet what others chose, and must not step around what guards the function: the doctor prints
a configured URL and cluster owners' project ids, and puts those ids into request URLs (it must print no URL
credential, no terminal control sequence, and ask nothing about a name that is not valid); the CLI writes with the
operator's credentials, which the admission policy does not judge (it must write only as the user it names)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from emulators.world import RUNTIME_SA
from pullsecret.doctor import run as doctor
from pullsecret.identity.google import RuntimeIdentity
from tests.reliability import campaign, harness
from tests.support import gcp_cluster

URL_PASSWORD = "op-s3cr3t-pw"
HOSTILE_PROJECTS = {
    "cls-esc01": "hf-demo-project\x1b]0;pwned\x07\x1b[2J",
    "cls-esc02": "a/b/../secrets/x\n",
    "cls-esc03": "hf-demo-project\u202e",
}


def test_the_doctor_prints_no_url_credential_or_control_sequence_and_asks_about_no_invalid_name(
    adapter_factory: Any, world: Any, function_env: dict[str, str]
) -> None:
    api = urlsplit(function_env["HYPERFLEET_API_URL"])
    with_credentials = api._replace(netloc=f"operator:{URL_PASSWORD}@{api.netloc}").geturl()
    for cid, project in HOSTILE_PROJECTS.items():
        body = gcp_cluster(cid, generation=1)
        body["spec"]["platform"]["gcp"]["projectID"] = project
        world.hyperfleet.seed_cluster(cid, body)
    adapter = adapter_factory(HYPERFLEET_API_URL=with_credentials, SECRET_PROJECT_ID=None)
    lines = doctor.run(adapter)
    text = doctor.render(lines)
    harness.count("cases tried")
    assert URL_PASSWORD not in text and "operator:" not in text, text
    assert api.netloc in text  # the API is still named
    assert all(c.isprintable() for c in text.replace("\n", "")), repr(text)
    for line in lines:  # no check asked about (and so named) a hostile project
        assert not any(p.strip() in line.text or p.strip() in line.fix for p in HOSTILE_PROJECTS.values()), line
    assert "projects/a/b" not in text and "secrets/x" not in text, text
    assert "3 listed cluster(s) with an id or GCP project id that is not a valid name" in text, text


OPERATOR = "alice@example.com"


def test_the_cli_with_an_operators_own_credentials_writes_nothing_the_policy_would_not_judge(
    adapter_factory: Any, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admission policy judges the runtime identity's user only; an operator's credentials (user ADC: no
    service-account e-mail) reach the management cluster as another user, cluster-admin, whose writes it admits
    unchecked. The CLI writes only as the user the policy names, and says how to become it."""
    monkeypatch.setattr(RuntimeIdentity, "email", property(lambda self: None))  # user ADC name no service account
    cid = "cls-operator1"
    campaign.seed_generation(world, cid, 1)
    adapter = adapter_factory()
    token = adapter.identity.token()
    world.kubernetes.add_token(token, OPERATOR)  # Kubernetes sees the operator; Google's emulators the same token
    world.kubernetes.grant(OPERATOR)  # cluster-admin, as an operator is
    outcome = adapter.reconcile_cluster(cid)
    harness.count("cases tried")
    assert (outcome.result, outcome.reason) == ("terminal", "PolicyIdentityMismatch"), outcome
    assert "--impersonate-service-account" in (outcome.detail or ""), outcome.detail
    assert OPERATOR not in (outcome.detail or "")  # the status names no operator
    assert world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret") is None

    # The same credentials seen as the runtime service account (impersonation): the policy judges them; written.
    world.kubernetes.add_token(token, RUNTIME_SA)
    outcome = adapter_factory().reconcile_cluster(cid)
    assert outcome.result == "applied", outcome
    assert world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret") is not None
