"""The operator's tools meet what others chose: the doctor prints a configured URL and cluster owners' project ids,
and puts those ids into request URLs. It must print no URL credential, no terminal control sequence, and ask
nothing about a name that is not valid."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pullsecret.operator import doctor
from tests.reliability import harness
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
    lines = doctor.run(adapter.application())
    text = doctor.render(lines)
    harness.count("cases tried")
    assert URL_PASSWORD not in text and "operator:" not in text, text
    assert api.netloc in text  # the API is still named
    assert all(c.isprintable() for c in text.replace("\n", "")), repr(text)
    for line in lines:  # no check asked about (and so named) a hostile project
        assert not any(p.strip() in line.text or p.strip() in line.fix for p in HOSTILE_PROJECTS.values()), line
    assert "projects/a/b" not in text and "secrets/x" not in text, text
    assert "3 listed cluster(s) with an id or GCP project id that is not a valid name" in text, text
