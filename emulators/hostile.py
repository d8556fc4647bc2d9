"""Hostile answers an HTTP emulator gives as a fault (a FaultBook `code`), for the adversarial suites.

- `"echo-authorization"`: a 400 problem+json whose `detail` quotes the request's `Authorization` header, as a
  server, a proxy or a debugging middleware that reflects what it received. `"echo-authorization:N"`: the detail is
  N dots and then the credential alone (the header's value after its scheme, no scheme before it), so that it
  straddles a client's cut (N = 187 leaves 13 of its characters before a 200-character cut). RFC 9457 §5 ("Security
  Considerations"): a problem's details can leak what the server saw; a client must not pass them on unscrubbed.
- `"301"`, `"302"`, `"303"`, `"307"`, `"308"`: a redirect to the same path and query on another host (`MOVED_TO`),
  with `Location` (RFC 9110 §15.4, the 3xx class; §10.2.2, Location) and a short problem+json body, as a server
  that moved (or a proxy in front of it) answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeGuard

from emulators.httpbase import Reply, Request

ECHO = "echo-authorization"
REDIRECTS = frozenset({"301", "302", "303", "307", "308"})
MOVED_TO = "https://moved.emulator.invalid"  # RFC 6761 §6.4: .invalid never resolves

Problem = Callable[[int, str], Reply]  # the emulator's own problem+json for (status, detail)


def handles(code: str | None) -> TypeGuard[str]:
    """Whether `code` is one of this module's faults."""
    return code is not None and (code in REDIRECTS or code == ECHO or code.startswith(ECHO + ":"))


def reply(code: str, request: Request, problem: Problem) -> Reply:
    """The hostile answer `code` names (see the module's docstring)."""
    if code in REDIRECTS:
        answer = problem(int(code), f"moved to {MOVED_TO}")
        answer.headers["Location"] = MOVED_TO + request.target
        return answer
    header = request.header("Authorization") or ""
    offset = code.partition(":")[2]
    if offset:
        detail = "." * int(offset) + header.partition(" ")[2]
    else:
        detail = f"request refused; it carried Authorization: {header}"
    return problem(400, detail + " (not accepted here)")
