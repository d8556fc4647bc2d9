"""Credentials chosen to break the logs: a password of `", "` (which every serialised line contains), a token
`severity` (a key of every line), passwords holding `:`, `auth` with and without padding, several entries, a
malformed entry before a good one. Every line stays one JSON object with its keys, and no form of any credential
is printed, whatever text around it quotes it (an error echoing a request, a message naming a value)."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from pullsecret.logs import Logger, event_context, protect
from pullsecret.model import dockerconfig
from tests.reliability import campaign, harness
from tests.support import gcp_cluster

LINE_KEYS = {"severity", "message", "time"}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _lines(out: str) -> list[dict[str, Any]]:
    parsed = []
    for line in out.splitlines():
        if not line.strip():
            continue
        value = json.loads(line)  # raises on a line that is no longer JSON
        assert isinstance(value, dict) and set(value) >= LINE_KEYS, line[:300]
        parsed.append(value)
    return parsed


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_credentials_shaped_like_json_leave_every_line_whole(adapter_factory: Any, world: Any, capfd: Any) -> None:
    adapter = adapter_factory()
    cid = "cls-hostile-json"
    hostile = {
        "quote.registry.example": {"username": "robot", "password": '", "'},
        "key.registry.example": {"registrytoken": "severity"},
        "colon.registry.example": {"auth": _b64('robot:": {"message')},
    }
    body = gcp_cluster(cid)
    body["spec"]["pullSecret"] = {"data": {"auths": hostile}}
    world.hyperfleet.seed_cluster(cid, body)
    for name in ("validation", "dns", "placement"):
        world.hyperfleet.seed_status(cid, name, {"observed_generation": 1, "data": {}})
    world.kubernetes.add_namespace(f"clusters-{cid}")
    capfd.readouterr()
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    harness.count("cases tried", len(hostile))
    out, _ = capfd.readouterr()
    lines = _lines(out)
    assert lines and {line["severity"] for line in lines} <= {"DEBUG", "INFO", "NOTICE", "WARNING", "ERROR"}
    assert [line for line in lines if line.get("operation") == "reconcile" and line.get("result") == "applied"]
    for line in lines:
        assert line["logging.googleapis.com/labels"]["cluster_id"] == cid
        assert not [s for s in _strings(line) if '", "' in s or "severity" in s or '": {"message' in s], line


DOCUMENTS = {
    "password with colons": {"auths": {"a.example": {"username": "robot", "password": "pa:ss:Word-1"}}},
    "auth with a colon password, padded": {"auths": {"a.example": {"auth": _b64("robot:pa:ss:Word-22")}}},
    "auth unpadded": {"auths": {"a.example": {"auth": _b64("robot:Unpadded-Pass1").rstrip("=")}}},
    "several entries": {
        "auths": {
            "a.example": {"auth": _b64("first:First-Pass-1")},
            "b.example": {"username": "second", "password": "Second-Pass-2"},
            "c.example": {"identitytoken": "Identity-Token-3"},
            "d.example": {"registrytoken": "Registry-Token-4"},
        }
    },
    "non-ASCII password in auth": {"auths": {"a.example": {"auth": _b64("robot:Pässwörd-Ünïcode-6")}}},
    "fields of the wrong type before good ones": {
        "auths": {
            "0.example": {"password": 12345678, "identitytoken": ["x" * 12], "auth": True},
            "z.example": {"username": "robot", "password": "After-Wrong-Types-7"},
        }
    },
    "malformed entry before a good one": {
        "auths": {"0.example": "not an object", "1.example": [], "z.example": {"auth": _b64("late:Late-Pass-5")}}
    },
}


def _forms(document: dict[str, Any]) -> set[str]:
    """The forms harness.credential_forms knows, plus the padded form of an unpadded auth."""
    forms = harness.credential_forms(document)
    for entry in document["auths"].values():
        if isinstance(entry, dict) and isinstance(entry.get("auth"), str):
            forms.add(entry["auth"] + "=" * (-len(entry["auth"]) % 4))
    return forms


@pytest.mark.parametrize("case", sorted(DOCUMENTS))
def test_every_credential_form_is_redacted_wherever_a_line_quotes_it(case: str) -> None:
    """The event's redactor, fed as the reconcile feeds it, against lines quoting each form (as an error echoing
    a request would), in the message, in a field, nested, and in a stack trace."""
    document = DOCUMENTS[case]
    forms = _forms(document)
    stream = io.StringIO()
    logger = Logger(stream=stream, level="DEBUG")
    with event_context(labels={"cluster_id": "cls-redact"}, trace=None):
        protect(dockerconfig.sensitive_strings_of(json.dumps(document)))  # before validation, as reconcile does
        for form in sorted(forms):
            logger.warning(f"echo: {form}", detail={"sent": [form, f"Basic {form}"]}, body=json.dumps(document))
            try:
                raise ValueError(f"the server answered: {form}")
            except ValueError as exc:
                logger.log("ERROR", "unexpected", exc=exc)
    harness.count("cases tried")
    out = stream.getvalue()
    lines = _lines(out)
    assert len(lines) == 2 * len(forms)
    assert harness.scan(f"redaction ({case})", [out], forms) == []


def test_the_redactor_collects_every_form_of_every_entry() -> None:
    """What the mutants of `dockerconfig._sensitive` broke: rsplit for split (a password holding `:`), lstrip for
    rstrip (the unpadded form), break for continue (entries after a malformed one)."""
    for case, document in DOCUMENTS.items():
        listed = dockerconfig.sensitive_strings_of(document)
        assert all(isinstance(value, str) for value in listed), case  # only text goes to the redactor
        collected = set(listed)
        # Every form but the JSON text of a whole entry (redacted through the values inside it).
        expected = {form for form in _forms(document) if not form.startswith("{")}
        assert expected <= collected, (case, sorted(len(f) for f in expected - collected))
