"""Emulator of the HyperFleet API (clusters and adapter statuses), validated against the real OpenAPI specs.

Two modes, switchable at runtime: ``status_method="PUT"`` serves API core 1.0.25 (``PUT .../statuses``,
aggregated conditions ``Reconciled`` / ``LastKnownReconciled``), ``"POST"`` serves API 0.1.0
(``POST .../statuses``, aggregated ``Ready`` / ``Available``).  Every request received and every response
sent is checked with openapi-core against the mode's spec; violations are recorded, never enforced beyond
what the real server enforces (a client bug must show up in ``violations``, not as a friendlier answer).

Responses the emulator sends *on purpose* outside the spec (seeded broken clusters, raw overrides, injected
faults, the undocumented 204 of a discarded status write, 401 where 0.1.0 documents none) are recorded as
``expected_violations`` so that ``violations`` stays the list of real contract drift.

Not modelled: cluster/nodepool creation and deletion through the public API (seed through ``/_emulator``),
nodepools, resources, TSL search beyond ``field='value'`` terms joined by ``and``, ``order``, the security
requirement of the spec (auth is enforced by the emulator itself when a token is configured, so a missing
header is a 401, not a violation). Authentication: the shared opaque bearer token, and, after
``trust_id_tokens``, RS256 ID tokens verified as the API's JWT handler does (emulators/idtoken.py).
``set_tenancy(Tenancy())`` turns on the API's tenant middleware (``tenancy``); ``deny_at_gateway()`` answers
every call as the gateway's ext_authz denial does (403, no body, no HyperFleet code).
``set_gateway(GatewayConfig(...))`` (or ``gateway=`` at construction, kept across reset; admin ``PUT|GET|DELETE
/_emulator/gateway``) puts the gateway's machine identity in front (``gateway``: ServiceAccount tokens by TokenReview,
allow-list, bare 401/403, header stripping, EDGE or EDGE+API); ``lose_database()`` (admin ``PUT /_emulator/database
{"lost": true}``, fault code ``503-database``) answers 503 HYPERFLEET-SVC-001 as the API does without its database. In
PUT mode a known path with the wrong method gets net/http's plain-text 405 with ``Allow``, before authentication, as
the current server's stdlib router answers it.

The parts: ``spec`` (the vendored OpenAPI specs, operations, request/response checks), ``answers``
(timestamps and problem+json), ``auth`` (opaque and ID tokens), ``store`` (clusters, statuses, reports),
``tenancy`` (the tenant middleware), ``conditions`` (the aggregated cluster conditions), ``rules`` (the
status-write rules and the adapter conventions), ``api`` (the API's routes) and ``emulator`` (serving,
validation, fault injection, admin API).
"""

from emulators.hyperfleet.answers import rfc3339
from emulators.hyperfleet.emulator import HyperFleetEmulator
from emulators.hyperfleet.tenancy import Tenancy

__all__ = ["HyperFleetEmulator", "Tenancy", "rfc3339"]
