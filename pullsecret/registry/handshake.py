"""One registry's Docker Registry v2 handshake with one credential (the protocol: verification.py's docstring)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import SplitResult, urlencode, urlsplit

from pullsecret.logs import protect
from pullsecret.registry.credentials import Credential, hostname_of
from pullsecret.registry.egress import Egress, Endpoint, NoPublicAddress, Refused, Unresolvable
from pullsecret.registry.http import MAX_BODY, Answer, ExchangeFailed, PinnedHTTPS
from pullsecret.registry.verdicts import Check, not_contacted, unexpected
from pullsecret.registry.www_authenticate import Challenge, parse_challenges, pick_challenge
from pullsecret.retrying import Deadline

_CLIENT_ID = "hyperfleet-pullsecret"

_FAILED = {
    "timeout": "timed out",
    "tls": "TLS handshake or certificate verification failed",
    "connection": "connection failed",
    "protocol": "the exchange failed",
}


class Handshake:
    """One registry's handshake with one credential; every outcome is a Check, nothing raises.

    The credential is presented at most once: once refused (or once sent without a usable answer) it is
    not sent again in this handshake, since registries lock accounts after repeated failed logins.
    """

    def __init__(
        self,
        http: PinnedHTTPS,
        egress: Egress,
        host: str,
        credential: Credential,
        *,
        scope: str | None,
        timeout_s: float,
        deadline: Deadline,
        known: Challenge | None = None,
    ) -> None:
        self.http = http
        self.egress = egress
        self.host = host
        self.credential = credential
        self.scope = scope
        self.timeout_s = timeout_s
        self.deadline = deadline
        self.known = known
        self.seen: Challenge | None = None  # the challenge this handshake used, for the next one to reuse
        self.presented = False  # the credential has been sent (to the registry or its token service)
        self._endpoints: dict[str, Endpoint] = {}

    def _endpoint(self, host: str) -> Endpoint:
        """The vetted address of `host`, resolved once per handshake; raises Refused or Unresolvable."""
        if host not in self._endpoints:
            self._endpoints[host] = self.egress.vet(host)
        return self._endpoints[host]

    def _exchange(self, host: str, method: str, target: str, **kwargs: Any) -> Answer:
        limit = min(self.timeout_s, self.deadline.remaining())
        return self.http.exchange(self._endpoint(host), method, target, limit_s=limit, **kwargs)

    def run(self) -> Check:
        try:
            return self._run()
        except Refused as exc:
            return not_contacted(exc.reason)
        except NoPublicAddress:
            # The same status as a name that does not resolve (the log line says which, for the operator).
            return Check("unreachable", "a name resolves to a private network's address; not contacted")
        except Unresolvable:
            return Check("unreachable", "the host name does not resolve")
        except ExchangeFailed as exc:
            return Check("unreachable", _FAILED.get(exc.kind, "the exchange failed"))

    def _run(self) -> Check:
        self._endpoint(self.host)  # vetted before anything is sent
        if self.known is not None:
            # The host's challenge from an earlier ping (distribution's challenge manager keeps them per
            # endpoint too). It only shortens the success path; an answer other than `valid` stands as it
            # is once the credential went out (never presented twice), else a fresh ping decides.
            self.seen = self.known
            check = self._answer(self.known)
            if check.result == "valid" or self.presented:
                if check.result != "valid":
                    self.seen = None  # the next handshake pings afresh
                return check
            self.seen = None
        ping = self._exchange(self.host, "GET", "/v2/")
        if ping.status == 200:
            return Check("anonymous", "the registry answers /v2/ without a credential; nothing to verify")
        if ping.status != 401:
            return unexpected("the registry", ping.status)
        challenge = pick_challenge(parse_challenges(ping.challenges))
        if challenge is None:
            return Check("skipped", "the registry asks for an authentication scheme other than Basic or Bearer")
        self.seen = challenge
        return self._answer(challenge)

    def _answer(self, challenge: Challenge) -> Check:
        """Answer a Basic or Bearer challenge with the credential, then ask /v2/ again."""
        if challenge.scheme == "basic":
            if self.credential.kind != "basic":
                return Check("skipped", "the registry asks for Basic authentication; the entry holds a token")
            self.presented = True
            return self._with_authorization(f"Basic {self.credential.secret}", "the registry")
        token = self.credential.secret if self.credential.kind == "registry" else None
        if token is None:
            outcome = self._token(challenge)
            if isinstance(outcome, Check):
                return outcome
            token = outcome
        protect([token])
        self.presented = True
        return self._with_authorization(f"Bearer {token}", "the registry")

    def _with_authorization(self, authorization: str, who: str) -> Check:
        answer = self._exchange(self.host, "GET", "/v2/", headers={"Authorization": authorization})
        if answer.status == 200:
            return Check("valid", "the registry accepted the credential")
        if answer.status == 401:
            return Check("rejected", f"{who} refused the credential (401)")
        return unexpected(who, answer.status)

    def _realm(self, challenge: Challenge) -> tuple[SplitResult, str] | Check:
        """The realm URL and its host[:port], when the credential may go there; else why not (a Check)."""
        realm = challenge.params.get("realm", "")
        try:
            parts = urlsplit(realm)
            realm_host, realm_name = parts.netloc, parts.hostname
        except ValueError:
            return Check("skipped", "the registry's token realm is not a URL")
        if parts.scheme != "https" or not realm_host or not realm_name or parts.username is not None:
            return Check("skipped", "the registry's token realm is not an HTTPS URL; no credential sent")
        if not self.egress.realm_trusted(hostname_of(self.host), realm_name):
            return Check("skipped", "the registry's token realm lies outside its domain; no credential sent")
        try:
            self._endpoint(realm_host)
        except Refused:
            return Check("skipped", "the registry's token realm is a private address; no credential sent")
        return parts, realm_host

    def _token(self, challenge: Challenge) -> str | Check:
        realm = self._realm(challenge)
        if isinstance(realm, Check):
            return realm
        parts, realm_host = realm
        params: dict[str, str] = {}
        if challenge.params.get("service"):
            params["service"] = challenge.params["service"]
        if self.scope:
            params["scope"] = self.scope
        path = parts.path or "/"
        self.presented = True
        if self.credential.kind == "identity":
            # An identity token is an OAuth2 refresh token (docker's oauth flow; go-containerregistry refreshOauth).
            form = {**params, "grant_type": "refresh_token", "refresh_token": self.credential.secret}
            form["client_id"] = _CLIENT_ID
            target = path + (f"?{parts.query}" if parts.query else "")
            answer = self._exchange(
                realm_host,
                "POST",
                target,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                body=urlencode(form).encode("ascii"),
            )
        else:
            query = "&".join(q for q in (parts.query, urlencode(params)) if q)
            answer = self._exchange(
                realm_host,
                "GET",
                path + (f"?{query}" if query else ""),
                headers={"Authorization": f"Basic {self.credential.secret}"},
            )
        return token_of(answer)


def token_of(answer: Answer) -> str | Check:
    """The token of a token service's answer, or the Check its answer amounts to."""
    if answer.status == 401:
        return Check("rejected", "the registry's token service refused the credential (401)")
    if answer.status != 200:
        return unexpected("the registry's token service", answer.status)
    try:
        decoded = json.loads(answer.body) if len(answer.body) <= MAX_BODY else None
    except (ValueError, RecursionError):
        decoded = None
    token = ""  # what stands for "no token" here (or for a body not read above) cannot matter: only a text counts
    if isinstance(decoded, dict):
        # Some token services set access_token instead of token (go-containerregistry bearer.go).
        token = decoded.get("token") or decoded.get("access_token") or ""
    if not isinstance(token, str) or not token:
        return Check("unreachable", "the registry's token service answered without a token")
    return token
