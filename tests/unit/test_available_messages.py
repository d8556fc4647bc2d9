"""The Available messages a cluster's owner reads (docs/contract.md "What a cluster's owner reads") are the code's:
the common reasons' (pullsecret.model.status) and each registered mode's and source's (its registration's
`declared.reasons`, assembled in pullsecret.declared.WORDS); every reason the code can report has a row, each message
is short and names nothing internal or secret."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pullsecret.declared import WORDS
from pullsecret.delivery import modes
from pullsecret.model import status
from pullsecret.source import sources

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
# Words an owner should never read: this function's settings, Google and Kubernetes resource names, credentials.
INTERNAL = re.compile(
    r"[A-Z][A-Z0-9]*_[A-Z0-9_]+|Secret Manager|Kubernetes Secret|namespace|projects/|principal|service account|"
    r"token|password|user:|dockerconfigjson|HYPERFLEET-|applied to the management cluster|matches it",
    re.IGNORECASE,
)


def _ready() -> dict[tuple[str, str], str]:
    """Every registered delivery mode's ready message for every registered source (its words' templates)."""
    return {
        (mode.name, source.name): mode.wording.available(own_credentials=source.own_credentials)
        for mode in modes.MODES
        for source in sorted(sources.SOURCES, key=lambda registered: registered.name)
    }


def _table() -> list[tuple[str, str, str]]:
    text = CONTRACT.read_text(encoding="utf-8")
    block = text.split("<!-- available:begin -->", 1)[1].split("<!-- available:end -->", 1)[0]
    rows = [line for line in block.strip().splitlines()[2:]]
    return [tuple(cell.strip() for cell in row.strip().strip("|").split("|")) for row in rows]  # type: ignore[misc]


def test_the_contract_table_is_the_codes() -> None:
    expected = [("`PullSecretAvailable` (True)", f"`{d}` delivery, `{s}` source", m) for (d, s), m in _ready().items()]
    expected += [(f"`{r}`", "", m) for r, m in status.AVAILABLE_MESSAGES.items()]
    expected += [(f"`{r}`", f"`{d.name}` delivery", m) for d in modes.MODES for r, m in d.declared.reasons.items()]
    expected += [(f"`{r}`", f"`{s.name}` source", m) for s in sources.SOURCES for r, m in s.declared.reasons.items()]
    expected.append(("any other reason", "", status.AVAILABLE_OTHER))
    assert _table() == expected


def _reported_reasons() -> set[str]:
    """Every reason a TerminalError (or subclass) is raised with literally, and every subclass's default."""
    reasons: set[str] = set()
    for path in (ROOT / "pullsecret").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "TerminalError":
                for keyword in node.keywords:
                    if keyword.arg == "reason" and isinstance(keyword.value, ast.Constant):
                        reasons.add(str(keyword.value.value))
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (
                        isinstance(item, ast.Assign)
                        and any(getattr(t, "id", None) == "default_reason" for t in item.targets)
                        and isinstance(item.value, ast.Constant)
                    ):
                        reasons.add(str(item.value.value))
    # The base classes' defaults, and the transient ones never reported as Available.
    return reasons - {"Error", "TransientFailure", "TerminalFailure", "NewerGeneration", "RotationHeld"}


def test_every_reason_the_code_reports_has_a_row() -> None:
    missing = _reported_reasons() - set(WORDS.messages)
    assert not missing, f"reasons without an owner's message in pullsecret.declared.WORDS: {sorted(missing)}"


def test_each_message_is_short_and_names_nothing_internal() -> None:
    messages = [*_ready().values(), *WORDS.messages.values(), status.AVAILABLE_OTHER]
    for message in messages:
        assert len(message) <= 200, message
        assert not INTERNAL.search(message), (message, INTERNAL.search(message))


def test_a_detail_is_shown_only_where_the_owner_can_act_and_is_bounded() -> None:
    shown = {r for r in WORDS.messages if WORDS.shows_detail(r)}
    assert shown == {"PreconditionsNotMet", "InvalidPullSecret", "InvalidCluster", "UnsupportedPlatform"}
    assert not WORDS.shows_detail("SomethingNew")  # any other reason: its message names only the reason
    long = WORDS.available_message("InvalidPullSecret", "x" * 2000)
    assert len(long) < status.MAX_DETAIL + 100
    hidden = WORDS.available_message("PermissionDenied", "denied roles/secretmanager.admin on projects/p")
    assert "projects/p" not in hidden and hidden == WORDS.messages["PermissionDenied"]
    assert WORDS.available_message("SomethingNew") == status.AVAILABLE_OTHER.format(reason="SomethingNew")


def test_a_detail_is_one_line_without_its_own_full_stop() -> None:
    # Whitespace runs become one space, and the detail's closing spaces and full stops give way to the template's.
    shown = WORDS.available_message("InvalidPullSecret", "  .dockerconfig of\n quay.X. \n")
    assert shown == WORDS.messages["InvalidPullSecret"].format(detail=".dockerconfig of quay.X")
    # No detail given is an empty one: nothing is made up in its place.
    assert WORDS.available_message("InvalidCluster") == WORDS.available_message("InvalidCluster", "")


def test_no_implementations_reason_is_in_the_common_table_and_two_never_word_one_reason_apart() -> None:
    declared = [*(m.declared for m in modes.MODES), *(s.declared for s in sources.SOURCES)]
    own = [reason for one in declared for reason in one.reasons]
    assert own and not set(own) & set(status.AVAILABLE_MESSAGES)
    assert set(WORDS.messages) == set(status.AVAILABLE_MESSAGES) | set(own)
    clash = status.Declared(reasons={own[0]: "Something else entirely."})
    with pytest.raises(ValueError, match=own[0]):
        status.Words.assembled((*declared, clash))
