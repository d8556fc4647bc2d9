"""Google-signed ID tokens as the emulator stack issues them (metadata server) and verifies them (HyperFleet API).

Issuing, as the metadata server's `instance/service-accounts/default/identity?audience=A&format=full` does
(https://cloud.google.com/run/docs/securing/service-identity#identity_tokens): an RS256 JWT with `iss`
`https://accounts.google.com`, `aud` the requested audience, `azp`/`sub` the account's numeric id, `iat`,
`exp` (one hour), and with `format=full` `email` and `email_verified`. The header names the signing key
(`kid`); the public keys are a JWKS document, as Google publishes at https://www.googleapis.com/oauth2/v3/certs.
Rotating the key makes every earlier token unverifiable, as a key Google retired does.

Verifying, as hyperfleet-api's JWT handler does (CHANGELOG "JWT authentication handler using golang-jwt/jwt/v5
and MicahParks/keyfunc/v3 with RS256 validation, configurable issuer and audience"; the configuration keys
`issuer_url`, `jwk_cert_url`, `audience`, `identity_claim`, `identity_claim_pattern` of hyperfleet-infra
helmfile/values/base-api.yaml.gotmpl): the signature against the issuer's key named by `kid`, `iss`, `aud`
(a string or a list containing it), `exp` in the future and `nbf`/`iat` not in the future (golang-jwt's
default: no leeway), then the identity claim, which must match the pattern when one is configured.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

GOOGLE_ISSUER = "https://accounts.google.com"
Jwks = dict[str, list[dict[str, str]]]


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _uint(value: int) -> str:
    return _b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class IdTokenIssuer:
    """An RSA signing key (2048 bits, as Google's) with a key id; thread-safe; `rotate` retires the key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key, self._kid = self._new_key()

    def __repr__(self) -> str:  # the private key must never land in logs
        return f"IdTokenIssuer(kid={self._kid!r})"

    @staticmethod
    def _new_key() -> tuple[rsa.RSAPrivateKey, str]:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048), secrets.token_hex(20)

    def rotate(self) -> None:
        """A new key: tokens signed before no longer verify (their `kid` is not in the JWKS any more)."""
        key, kid = self._new_key()
        with self._lock:
            self._key, self._kid = key, kid

    def jwks(self) -> Jwks:
        """The public keys, as the issuer's `jwk_cert_url` serves them."""
        with self._lock:
            numbers, kid = self._key.public_key().public_numbers(), self._kid
        return {
            "keys": [
                {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": _uint(numbers.n), "e": _uint(numbers.e)}
            ]
        }

    def mint(self, claims: dict[str, Any]) -> str:
        """Sign `claims` (RS256) under the current key."""
        with self._lock:
            key, kid = self._key, self._kid
        header = {"alg": "RS256", "kid": kid, "typ": "JWT"}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"


class InvalidIdToken(ValueError):
    """Why a token is refused; `expired` selects the API's code (AUT-003 expired, AUT-002 otherwise)."""

    def __init__(self, why: str, *, expired: bool = False) -> None:
        super().__init__(why)
        self.expired = expired


@dataclass(frozen=True)
class TrustedIssuer:
    """One entry of the API's `server.jwt.configs`."""

    issuer: str
    audience: str | None
    keys: Callable[[], Jwks]
    identity_claim: str = "email"
    identity_pattern: re.Pattern[str] | None = None


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")


def verify(token: str, issuers: list[TrustedIssuer], *, now: float | None = None) -> str:
    """The caller's identity (the issuer's identity claim) of a valid token; raises InvalidIdToken."""
    try:
        header_b64, claims_b64, signature_b64 = token.split(".")
        header = json.loads(_unb64url(header_b64))
        claims = json.loads(_unb64url(claims_b64))
        signature = _unb64url(signature_b64)
    except ValueError:
        raise InvalidIdToken("malformed token") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise InvalidIdToken("malformed token")
    if header.get("alg") != "RS256":
        raise InvalidIdToken(f"signing method {header.get('alg')!r} is not RS256")
    trusted = next((i for i in issuers if i.issuer == claims.get("iss")), None)
    if trusted is None:
        raise InvalidIdToken("untrusted issuer")
    jwk = next((k for k in trusted.keys()["keys"] if k.get("kid") == header.get("kid")), None)
    if jwk is None:
        raise InvalidIdToken("no key of the issuer has the token's kid")
    public = rsa.RSAPublicNumbers(
        int.from_bytes(_unb64url(jwk["e"]), "big"), int.from_bytes(_unb64url(jwk["n"]), "big")
    ).public_key()
    try:
        public.verify(signature, f"{header_b64}.{claims_b64}".encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise InvalidIdToken("signature is invalid") from None
    moment = time.time() if now is None else now
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or exp <= moment:
        raise InvalidIdToken("token is expired", expired=True)
    for claim in ("nbf", "iat"):
        value = claims.get(claim)
        if isinstance(value, (int, float)) and value > moment:
            raise InvalidIdToken(f"token is used before its {claim}")
    if trusted.audience is not None:
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if trusted.audience not in audiences:
            raise InvalidIdToken("token has an invalid audience")
    identity = claims.get(trusted.identity_claim)
    if not isinstance(identity, str) or not identity:
        raise InvalidIdToken(f"token has no {trusted.identity_claim} claim")
    if trusted.identity_pattern is not None and not trusted.identity_pattern.fullmatch(identity):
        raise InvalidIdToken(f"{trusted.identity_claim} claim does not match identity_claim_pattern")
    return identity
