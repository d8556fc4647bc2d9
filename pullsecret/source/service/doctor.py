"""The doctor's check that the Pull Secret Service's token is not one the HyperFleet API admits: one identity per
audience (pullsecret.settings.token_source.shared).

The cold start refuses settings that make the two credentials one; this line says the same for the settings, and
looks at the tokens themselves where names cannot tell: two ServiceAccount tokens are compared by their own claims
(`iss`, `sub`, `aud`: one token cluster named by its project id for one and by its project number for the other, an
API server that issues other audiences than the ones asked), two token files by their content (one token stored in
two secrets). Lines as pullsecret.doctor.kit's: settings' names, the claims' issuer, subject and audiences, never a
token.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from pullsecret.doctor.identity import audiences, claims
from pullsecret.doctor.kit import Context, Line
from pullsecret.errors import AdapterError
from pullsecret.identity.bearer import ApiCredential
from pullsecret.settings import token_source
from pullsecret.settings.token_source import Presented
from pullsecret.source.service.answers import SHOWN
from pullsecret.source.service.settings import ServiceSettings

CHECK = "service-token"


def own_identity(ctx: Context, service_credential: Callable[[], ApiCredential | None]) -> list[Line]:
    """The service's credential is not the HyperFleet API's: by the settings, then by the tokens themselves when both
    are ServiceAccount tokens (their claims) or both token files (their content). The clients' credentials are asked
    for only then."""
    settings = ctx.settings
    mine = settings.of(ServiceSettings).credential(settings.caller)
    theirs = settings.hyperfleet_credential()
    refused = token_source.shared(theirs, mine)
    if refused is not None:
        return [Line(CHECK, False, refused, token_source.SHARED_FIX)]
    named = f"the {SHOWN}'s credential ({_shown(mine)}) is not the HyperFleet API's ({_shown(theirs)})"
    minted = settings.caller.service_token is not None and settings.caller.hyperfleet_token is not None
    files = settings.of(ServiceSettings).token_file is not None and settings.hyperfleet_api_token_file is not None
    if not (minted or files):
        return [Line(CHECK, True, named)]
    gateway, service = ctx.hyperfleet.credential, service_credential()
    if service is None or gateway is None:
        return [Line(CHECK, None, "the tokens were not compared: no credential was built")]
    try:
        tokens = gateway.current(), service.current()
    except AdapterError as exc:
        return [Line(CHECK, None, f"the tokens were not compared: no token ({exc.reason})")]
    if files:
        if hmac.compare_digest(tokens[0].encode(), tokens[1].encode()):
            text = (
                "PULL_SECRET_SERVICE_TOKEN_FILE and HYPERFLEET_API_TOKEN_FILE hold one token, so the service could "
                "replay it at the API"
            )
            return [Line(CHECK, False, text, token_source.SHARED_FIX)]
        return [Line(CHECK, True, f"{named}, and the two files hold different tokens")]
    return [_compared(claims(tokens[0]), claims(tokens[1]), mine, theirs)]


def _compared(api: dict[str, Any], own: dict[str, Any], mine: Presented | None, theirs: Presented | None) -> Line:
    """Two minted ServiceAccount tokens: one identity when one issuer, one subject and an audience in common."""
    both = sorted(set(audiences(api)) & set(audiences(own)))
    if api.get("iss") == own.get("iss") and api.get("sub") == own.get("sub") and both:
        text = (
            f"the minted tokens are one identity: issuer {str(api.get('iss'))!r}, {str(own.get('sub'))!r}, audience "
            f"{both} in both ({mine.settings if mine else ''}; {theirs.settings if theirs else ''}), so the service "
            "could replay what it receives at the API"
        )
        return Line(CHECK, False, text, token_source.SHARED_FIX)
    text = (
        f"the {SHOWN}'s tokens name audience {audiences(own)}, the HyperFleet API's {audiences(api)}: neither is "
        "admitted where the other is sent"
    )
    return Line(CHECK, True, text)


def _shown(credential: Presented | None) -> str:
    """Who issues the credential, for whom and for which audience (names only)."""
    if credential is None:
        return "none"
    named = ", ".join(
        part for part in (credential.subject, credential.audience and f"audience {credential.audience!r}") if part
    )
    return credential.issuer + (f" ({named})" if named else "")
