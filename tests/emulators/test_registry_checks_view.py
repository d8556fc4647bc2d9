"""`make trigger` and `make demo` show each registry check with what it means, in the words of
docs/registry-verification.md."""

from __future__ import annotations

import re

from emulators import registry_checks
from pullsecret.registry.verification import RESULTS, Check
from tests.support import ROOT


def readme_meanings() -> dict[str, str]:
    section = (ROOT / "docs" / "registry-verification.md").read_text().split("# Registry verification", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", section, re.MULTILINE)
    return {result: meaning.replace("**", "") for result, meaning in rows}


def test_every_result_has_the_meaning_the_readme_gives_it() -> None:
    readme = readme_meanings()
    assert set(registry_checks.MEANINGS) == set(RESULTS) == set(readme), (registry_checks.MEANINGS, RESULTS, readme)
    for result, meaning in registry_checks.MEANINGS.items():
        assert readme[result].startswith(meaning), (result, meaning, readme[result])


def test_each_line_says_why_from_what_the_status_really_holds() -> None:
    # The entries as the function writes them into data.registry_checks: a reason only for what was never contacted.
    checks = [Check(result, f"log-only detail of {result}").to_json(f"registry-{result}.example") for result in RESULTS]
    checks.append(Check("skipped", "x", "not an image registry (REGISTRY_SKIP_HOSTS)").to_json("cloud.openshift.com"))
    shown = registry_checks.lines(checks)
    assert len(shown) == len(checks)
    for line, check in zip(shown, checks, strict=True):
        registry, result, why = re.split(r"\s{2,}| (?=\S)", line, maxsplit=2)
        assert (registry, result) == (check["registry"], check["result"]), line
        assert why == check.get("reason", registry_checks.MEANINGS[check["result"]]), line
        assert "log-only detail" not in line  # what answered, and how, stays in the log
    column = max(len(check["registry"]) for check in checks) + 2  # results line up under each other
    assert all(line[column:].startswith(check["result"]) for line, check in zip(shown, checks, strict=True)), shown
