"""The doctor's check that the Pull Secret Service's token is not one the HyperFleet API admits: one identity per
audience (pullsecret.settings.token_source.shared).

The cold start refuses settings that make the two credentials one; this line says the same for the settings, and
when both are ServiceAccount tokens it compares the minted tokens' own claims (`iss`, `sub`, `aud`), which catches
what the names cannot: one token cluster named by its project id for one and by its project number for the other,
an API server that issues other audiences than the ones asked. Lines as pullsecret.doctor.kit's: settings' names,
the claims' issuer, subject and audiences, never a token.
"""

from __future__ import annotations

from collections.abc import Callable

from pullsecret.doctor.identity import audiences, claims
from pullsecret.doctor.kit import Context, Line
from pullsecret.errors import AdapterError
from pullsecret.identity.bearer import ApiCredential
from pullsecret.settings import token_source
from pullsecret.settings.token_source import Presented
from pullsecret.source.service.api import SHOWN
from pullsecret.source.service.settings import ServiceSettings

CHECK = "service-token"


def own_identity(ctx: Context, service_credential: Callable[[], ApiCredential | None]) -> list[Line]:
    """The service's credential is not the HyperFleet API's: by the settings, then, with two ServiceAccount tokens,
    by the minted tokens' claims (the clients' credentials are asked for only then)."""
    settings = ctx.settings
    mine = settings.of(ServiceSettings).credential(settings.caller)
    theirs = settings.hyperfleet_credential()
    refused = token_source.shared(theirs, mine)
    if refused is not None:
        return [Line(CHECK, False, refused, token_source.SHARED_FIX)]
    if settings.caller.service_token is None or settings.caller.hyperfleet_token is None:
        text = f"the {SHOWN}'s credential ({_shown(mine)}) is not the HyperFleet API's ({_shown(theirs)})"
        return [Line(CHECK, True, text)]
    gateway, service = ctx.hyperfleet.credential, service_credential()
    if service is None or gateway is None:
        return [Line(CHECK, None, "the minted tokens were not compared: no credential was built")]
    try:
        api, own = claims(gateway.current()), claims(service.current())
    except AdapterError as exc:
        return [Line(CHECK, None, f"the minted tokens were not compared: no token ({exc.reason})")]
    both = sorted(set(audiences(api)) & set(audiences(own)))
    if api.get("iss") == own.get("iss") and api.get("sub") == own.get("sub") and both:
        text = (
            f"the minted tokens are one identity: issuer {str(api.get('iss'))!r}, {str(own.get('sub'))!r}, audience "
            f"{both} in both ({mine.settings if mine else ''}; {theirs.settings if theirs else ''}), so the service "
            "could replay what it receives at the API"
        )
        return [Line(CHECK, False, text, token_source.SHARED_FIX)]
    return [
        Line(
            CHECK,
            True,
            f"the {SHOWN}'s tokens name audience {audiences(own)}, the HyperFleet API's {audiences(api)}: neither "
            "is admitted where the other is sent",
        )
    ]


def _shown(credential: Presented | None) -> str:
    """Who issues the credential, for whom and for which audience (names only)."""
    if credential is None:
        return "none"
    named = ", ".join(
        part for part in (credential.subject, credential.audience and f"audience {credential.audience!r}") if part
    )
    return credential.issuer + (f" ({named})" if named else "")
