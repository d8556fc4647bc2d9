"""Mutation testing of the decision and redaction code: `make mutation` (slow, so not part of `make test`).

mutmut (requirements-mutation.txt; configured in pyproject.toml's [tool.mutmut]) changes one thing at a time
in the functions listed in MODULES and runs the unit tests that reach the function. A mutant that survives
them is run once more against the whole unit suite in a fresh process, with
MUTANT_UNDER_TEST naming it, so a test mutmut did not associate with the function still counts. A mutant is
killed when a test fails or times out. Modules run one after the other; the last lines printed are the kill
rate of each, and the exit status is 1 when one is below MIN_KILLED.

    python -m tests.mutation [--jobs N] [MODULE ...]      # MODULE: a key of MODULES, e.g. lineage
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
MIN_KILLED = 0.90

# The code whose every decision a unit test should pin. Whole modules where the module is pure; for the
# two modules that also do I/O, only their pure functions (the I/O is covered by the integration suites).
_KUBESECRET_PURE = (
    "probe_manifest",
    "generation_of",
    "differs",
    "body_of",
    "policy_denial",
    "would_create_without_data",
    "_owned_paths",
    "_applied_paths",
    "only_ours_own",
    "field_conflict",
)
_KUBESECRET_PURE_METHODS = ("DesiredSecret.annotations", "DesiredSecret.data", "DesiredSecret.manifest")
# Registry verification's pure parts: parsing of keys and credentials (credentials), the verdicts (verdicts), the
# reading of a token answer (handshake); challenges: www_authenticate, all pure.
_REGISTRY_CREDENTIALS = ("registry_host", "hostname_of", "credential_of", "beyond_per_host")
_REGISTRY_CREDENTIALS_METHODS = ("Credential.sensitive",)
_REGISTRY_VERDICTS = ("not_contacted", "safe_name", "unexpected")
# (Verification.rejected is a property: mutmut 3 does not mutate decorated functions.)
_REGISTRY_VERDICTS_METHODS = ("Check.to_json", "Verification.data", "Verification.enforce")
_REGISTRY_HANDSHAKE_PURE = ("token_of",)
# Where verification may connect: host and allowlist parsing, address and name classification, the token realm
# rule, and Egress.vet (its resolver is a constructor argument); not system_resolver, the one call to the OS.
_HOSTNAMES_PURE = ("split_host", "allowed_entry")
_EGRESS_PURE = ("address_refusal", "_ip", "name_refusal", "realm_trusted")
_EGRESS_PURE_METHODS = ("Egress.__init__", "Egress.vet")


def _functions(module: str, names: tuple[str, ...], methods: tuple[str, ...] = ()) -> tuple[str, ...]:
    """mutmut's mutant-name patterns in MODULE (dotted): x_NAME__mutmut_N, xǁCLASSǁNAME__mutmut_N for methods."""
    patterns = [f"{module}.x_{name}__mutmut_*" for name in names]
    patterns += [f"{module}.x\u01c1{cls}\u01c1{name}__mutmut_*" for cls, name in (m.split(".") for m in methods)]
    return tuple(patterns)


MODULES: dict[str, tuple[str, ...]] = {
    "dockerconfig": ("pullsecret.model.dockerconfig.*",),
    "preconditions": ("pullsecret.model.preconditions.*",),
    "status": ("pullsecret.model.status.*",),
    # lineage.version_id is model/names.version_id (one parser of version names): mutated with lineage.
    "lineage": ("pullsecret.model.lineage.*", *_functions("pullsecret.model.names", ("version_id",))),
    "kubesecret": (
        _functions("pullsecret.delivery.direct.kubesecret", _KUBESECRET_PURE, _KUBESECRET_PURE_METHODS)
        + _functions("pullsecret.model.names", ("kube_label_value",))
    ),
    "admission_policy": ("pullsecret.delivery.direct.admission_policy.*",),
    "www_authenticate": ("pullsecret.registry.www_authenticate.*",),
    "registry_verification": (
        _functions("pullsecret.registry.credentials", _REGISTRY_CREDENTIALS, _REGISTRY_CREDENTIALS_METHODS)
        + _functions("pullsecret.registry.verdicts", _REGISTRY_VERDICTS, _REGISTRY_VERDICTS_METHODS)
        + _functions("pullsecret.registry.handshake", _REGISTRY_HANDSHAKE_PURE)
    ),
    "registry_egress": (
        _functions("pullsecret.registry.egress", _EGRESS_PURE, _EGRESS_PURE_METHODS)
        + _functions("pullsecret.settings.hostnames", _HOSTNAMES_PURE)
    ),
    # The deep-JSON fallback (issue 40 item 5: budgets, duplicate keys) and redaction (item 4: union of spans).
    "jsonsplit": ("pullsecret.hyperfleet.jsonsplit.*",),
    "redaction": ("pullsecret.redaction.*",),
    # Reading one setting (trimmed, typed, checked); test_operator_settings scans its text as written.
    "envvars": ("pullsecret.settings.envvars.*",),
}
KILLED = {"killed", "timeout", "caught by type check"}

# Survivors no test can kill, for nothing observable changes, each with why. They still count against the rate
# (it is not adjusted); mutants/<module>.survivors marks them so no one analyses them again. Each names the
# mutated text as `mutmut show` prints it, so a renumbered mutant is not excused by an old entry.
_ORDER = "the order of the alternation and of the hits is unobservable: scrub unites every hit's spans"
_SHORT = "the extra slices are shorter than WINDOW, and every head (a string's first WINDOW characters) is not"
_STRICT = "scanstring's strict argument defaults to True"
_FIRST_BRACE = (
    "members read `{` (after whitespace) before any `}`: the `}` found is never at 0, and with no member (`last` "
    "unchanged) find from 0, 1 or None finds the same one"
)
_TIERS = "when the late tier merges into the first is a cost choice: both are searched, the line is the same"
_VALIDATES = "this datetime is built only to raise ValueError on a field out of range: its zone is no field"
_TIMEGM = "calendar.timegm reads the first six fields of the tuple only"
_LAST_SEGMENT = "the last segment is the same however often the name is split from the right"
_NO_TOKEN = "no token either way: only a non-empty text is a token (the code's own comment says so)"
_NO_SPANS = "a shortcut: with no span (no hit) _replace gives the text itself, and _occurrences finds none"
EQUIVALENT: dict[str, tuple[str, str]] = {
    "pullsecret.redaction.x\u01c1_Regex\u01c1__init____mutmut_4": ("key=None, reverse=True", _ORDER),
    "pullsecret.redaction.x\u01c1_Regex\u01c1__init____mutmut_7": ("sorted(secrets, reverse=True)", _ORDER),
    "pullsecret.redaction.x\u01c1_Regex\u01c1__init____mutmut_8": ("sorted(secrets, key=len, )", _ORDER),
    "pullsecret.redaction.x\u01c1_Regex\u01c1__init____mutmut_9": ("key=len, reverse=False", _ORDER),
    "pullsecret.redaction.x\u01c1_Windows\u01c1hits__mutmut_6": ("len(text) + WINDOW + 1", _SHORT),
    "pullsecret.redaction.x\u01c1_Windows\u01c1hits__mutmut_7": ("len(text) - WINDOW + 2", _SHORT),
    "pullsecret.redaction.x\u01c1Redactor\u01c1_matchers__mutmut_2": ("len(self._late) >= max(", _TIERS),
    "pullsecret.redaction.x\u01c1Redactor\u01c1_matchers__mutmut_7": ("len(self._bulk) / 4", _TIERS),
    "pullsecret.redaction.x\u01c1Redactor\u01c1_matchers__mutmut_8": ("len(self._bulk) // 5", _TIERS),
    "pullsecret.redaction.x__replace__mutmut_2": ("at = None", "text[None:start] is text[0:start]"),
    "pullsecret.redaction.x_redact__mutmut_8": ("if (spans) or True", _NO_SPANS),
    "pullsecret.redaction.x\u01c1Redactor\u01c1occurrences__mutmut_7": ("if (hits) or True", _NO_SPANS),
    "pullsecret.hyperfleet.jsonsplit.x_sub_pages__mutmut_12": (
        "range(2, size + 2)",
        "size + 1 never divides size (> 1), and for size 1 neither candidate does: the same factor",
    ),
    "pullsecret.hyperfleet.jsonsplit.x__skip_ws__mutmut_7": (
        "if (match) or True",
        "_WS (`[ \\t\\n\\r]*`) matches the empty string: there is always a match",
    ),
    "pullsecret.hyperfleet.jsonsplit.x_page_items__mutmut_8": ('body.decode("UTF-8")', "the same codec"),
    "pullsecret.hyperfleet.jsonsplit.x_value_end__mutmut_14": ("scanstring(text, pos + 1, )", _STRICT),
    "pullsecret.hyperfleet.jsonsplit.x_value_end__mutmut_62": ("scanstring(text, cursor, )", _STRICT),
    "pullsecret.hyperfleet.jsonsplit.x_members__mutmut_37": ("scanstring(text, pos + 1, )", _STRICT),
    "pullsecret.hyperfleet.jsonsplit.x_string_member__mutmut_21": ("scanstring(text, start + 1, )", _STRICT),
    "pullsecret.hyperfleet.jsonsplit.x_string_member__mutmut_24": (
        "scanstring(text, start + 1, False)",
        "members found this string's end strictly (raw_decode or value_end): a control character never gets here",
    ),
    "pullsecret.hyperfleet.jsonsplit.x_value_end__mutmut_45": (
        "steps -= 1",
        "-n % 256 == 0 exactly when n % 256 == 0: the budget is looked at on the same runs",
    ),
    "pullsecret.hyperfleet.jsonsplit.x_page_items__mutmut_11": ("last = None", _FIRST_BRACE),
    "pullsecret.hyperfleet.jsonsplit.x_page_items__mutmut_12": ("last = 1", _FIRST_BRACE),
    "pullsecret.hyperfleet.jsonsplit.x_page_items__mutmut_52": ("rest <= 0", _FIRST_BRACE),
    "pullsecret.hyperfleet.jsonsplit.x_page_items__mutmut_53": ("rest < 1", _FIRST_BRACE),
    "pullsecret.settings.hostnames.x_split_host__mutmut_23": ('encode("IDNA")', "the same codec"),
    "pullsecret.settings.hostnames.x_split_host__mutmut_25": ('decode("ASCII")', "the same codec"),
    "pullsecret.settings.envvars.x_flag__mutmut_6": (
        "upper=None",
        "None is false, as False is: the value is lower-cased",
    ),
    "pullsecret.settings.envvars.x_flag__mutmut_15": ('"FALSE"', "the default is lower-cased like any value: false"),
    "pullsecret.settings.envvars.x_template__mutmut_13": (
        'cluster_id="X"',
        'the trial value only has to fail every format "x" fails: a one-letter string either way',
    ),
    "pullsecret.settings.envvars.x_is_loopback__mutmut_7": ('host or "XXXX"', "neither is an IP address: not loopback"),
    "pullsecret.settings.hostnames.x_split_host__mutmut_15": (
        'rstrip("XX.XX")',
        "urllib's hostname is lower case: there is never an X to strip",
    ),
    "pullsecret.settings.hostnames.x_allowed_entry__mutmut_10": (
        'text.count("XX:XX") > 1',
        "two colons without brackets leave split_host a port it cannot read: refused either way",
    ),
    "pullsecret.settings.hostnames.x_allowed_entry__mutmut_12": (
        'text.count(":") > 2',
        "two colons without brackets leave split_host a port it cannot read: refused either way",
    ),
    "pullsecret.registry.handshake.x_token_of__mutmut_24": ('decoded = ""', _NO_TOKEN),
    "pullsecret.registry.handshake.x_token_of__mutmut_25": ("token = None", _NO_TOKEN),
    "pullsecret.model.lineage.x__epoch__mutmut_2": (
        "match = None",
        "the fast path reads what strptime reads (ASCII digits, the same fields) without its CPU: a performance "
        "path, not a decision",
    ),
    "pullsecret.model.lineage.x__epoch__mutmut_13": ("second, tzinfo=None)", _VALIDATES),
    "pullsecret.model.lineage.x__epoch__mutmut_20": ("minute, second, )", _VALIDATES),
    "pullsecret.model.lineage.x__epoch__mutmut_22": ("second, 1, 0, 0)", _TIMEGM),
    "pullsecret.model.lineage.x__epoch__mutmut_23": ("second, 0, 1, 0)", _TIMEGM),
    "pullsecret.model.lineage.x__epoch__mutmut_24": ("second, 0, 0, 1)", _TIMEGM),
    "pullsecret.model.names.x_version_id__mutmut_6": ('rsplit("/", )', _LAST_SEGMENT),
    "pullsecret.model.names.x_version_id__mutmut_9": ('rsplit("/", 2)', _LAST_SEGMENT),
    "pullsecret.model.status.x\u01c1Report\u01c1body__mutmut_4": (
        "datetime.now(None)",
        "a naive now() is the same instant: astimezone(UTC) reads a naive time as local time",
    ),
}


def equivalent(mutant: str) -> str | None:
    """Why `mutant` is listed as equivalent, when its entry still names the mutated text `mutmut show` prints."""
    entry = EQUIVALENT.get(mutant)
    if entry is None:
        return None
    text, why = entry
    shown = [line[1:] for line in mutmut("show", mutant).stdout.splitlines() if line.startswith("+")]
    return why if any(text in line for line in shown) else None


def mutmut(*args: str) -> subprocess.CompletedProcess[str]:
    """The mutmut next to this interpreter (the .venv-mutation one), run from the repository root."""
    command = [str(Path(sys.executable).with_name("mutmut")), *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def results() -> dict[str, str]:
    """mutant name -> status, from `mutmut results --all true` ("    name: status" lines)."""
    out = mutmut("results", "--all", "true").stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            found[name] = status
    return found


def killed_by_whole_suite(mutant: str) -> bool:
    """Run every unit test with `mutant` active, in a fresh process; True when one fails or it times out."""
    env = {**os.environ, "MUTANT_UNDER_TEST": mutant}
    command = [sys.executable, "-m", "pytest", "tests/unit", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    try:
        done = subprocess.run(command, cwd=MUTANTS, env=env, capture_output=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return True
    return done.returncode != 0


def run_module(name: str, patterns: tuple[str, ...], jobs: int) -> Counter[str]:
    """Mutate one module's selected functions; the count of mutants per final status."""
    run = mutmut("run", "--max-children", str(jobs), *patterns)
    MUTANTS.mkdir(exist_ok=True)
    (MUTANTS / f"{name}.log").write_text(run.stdout + run.stderr)
    if run.returncode != 0:
        sys.exit(f"mutmut run failed for {name} (exit {run.returncode}); see mutants/{name}.log")
    chosen = {m: s for m, s in results().items() if any(fnmatch.fnmatchcase(m, p) for p in patterns)}
    # A pattern that matches nothing names a function that was renamed or moved: its mutants would silently drop
    # out of the count (a function without any mutant also lands here; then take it off the list).
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(m, p) for m in chosen)]
    if unmatched:
        sys.exit(f"no mutant matched these patterns of {name}: {unmatched}")
    # "no tests": no unit test calls the function at all, so the whole suite cannot kill it either.
    if all(s == "no tests" for s in chosen.values()):
        sys.exit(
            f"no unit test reaches any mutant of {name}: mutmut's map of tests (mutants/mutmut-stats.json) predates "
            "its functions being mutated (a module added to only_mutate); remove that file and run again"
        )
    survivors = sorted(m for m, s in chosen.items() if s == "survived")
    # Without any mutant the copied suite must pass, or every survivor would count as killed (say, a test reading a
    # file also_copy lacks).
    if survivors and killed_by_whole_suite(""):
        sys.exit(f"the unit suite fails in {MUTANTS} without any mutant; see pyproject's [tool.mutmut] also_copy")
    # A listed equivalent counts as a survivor whatever the whole suite does: it is not run again.
    notes = {m: equivalent(m) for m in survivors}
    for mutant in survivors:
        if not notes[mutant] and killed_by_whole_suite(mutant):
            chosen[mutant] = "killed"
    left = sorted(m for m, s in chosen.items() if s not in KILLED)
    (MUTANTS / f"{name}.survivors").write_text(
        "".join(f"{m}: {chosen[m]}{f' (equivalent: {notes.get(m)})' if notes.get(m) else ''}\n" for m in left)
    )
    return Counter("killed" if s in KILLED else s for s in chosen.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help=f"modules to run (default: all of {', '.join(MODULES)})")
    parser.add_argument("--jobs", type=int, default=1, help="mutants tested at once (default 1: the CPU is shared)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.modules if name not in MODULES]
    if unknown:
        parser.error(f"unknown modules {unknown}; choose from {list(MODULES)}")
    counts: dict[str, Counter[str]] = {}
    for name in args.modules or list(MODULES):
        counts[name] = run_module(name, MODULES[name], args.jobs)
        print(f"{name}: done ({sum(counts[name].values())} mutants; survivors in mutants/{name}.survivors)", flush=True)
    print()
    below = []
    for name, count in counts.items():
        total = sum(count.values())
        rate = count["killed"] / total
        others = ", ".join(f"{n} {s}" for s, n in sorted(count.items()) if s != "killed")
        print(f"{name:<22} {rate:6.1%} killed ({count['killed']}/{total}{'; ' + others if others else ''})")
        if rate < MIN_KILLED:
            below.append(name)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
