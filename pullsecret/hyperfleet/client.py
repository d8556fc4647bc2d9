"""The HyperFleet API client: get cluster, list adapter statuses, report status (docs/contract.md §2).

One urllib3 pool per process (it retries connection errors and 429/5xx with jittered backoff,
honouring Retry-After up to a cap). urllib3 directly, not `requests` over it: three calls per event, and `requests`'
per-call preparation (merging settings, hooks, cookies, URL re-parsing) was the largest share of the
function's own CPU (bench/results/profile-inproc.txt). The credential comes from `bearer` (a token file, a Google
ID token, or a ServiceAccount token sent with its own scheme); after a refusal it is re-read or re-minted and the
call made again. A refusal
of our own token (401, or a 403 without an authorization code) is never the cluster's fault: when no new
token comes of it, it is a TransientError (the event is redelivered, never acknowledged), logged at error
level. A 403 carrying an authorization code (`HYPERFLEET-AUZ-*`, the API's
or the gateway's denial of this identity) is terminal: no retry or re-read changes a policy (ADR-0017).

A 404 means "gone" only with the API's resource codes `HYPERFLEET-NTF-001..003`. `HYPERFLEET-NTF-000`
(no route matched: hyperfleet-api pkg/api/error.go SendNotFound) or a 404 without any HyperFleet code (a
proxy, another server) says HYPERFLEET_API_URL is wrong: a configuration error, logged at error level and
redelivered, never acknowledged as a deleted cluster.

Configuration errors (ERROR line, redelivered, never acknowledged): a 403 `HYPERFLEET-AUZ-001` naming a missing
tenant header (hyperfleet-api pkg/tenant/middleware.go; set HYPERFLEET_SYSTEM_HEADER, sent as `true`), a 403
without a HyperFleet code (a gateway's denial), a 405 (HYPERFLEET_STATUS_METHOD does not match the API's router), a
3xx (`EndpointRedirected`: HYPERFLEET_API_URL moved; never followed, so the token goes to the configured host only).
Retry budget (docs/design.md, tests/unit/test_retry_budget.py): `call_budget_s()` a call, with or without a
retrying gateway behind each try; it is also the call's whole-call deadline (pullsecret.outbound.deadline_io), so a
server that trickles its answer cannot hold a call longer.

Each call carries the event's W3C `traceparent` (same trace id, a new span id per call), as the adapter
framework does on its API calls (hyperfleet-adapter internal/hyperfleetapi/client.go).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import certifi
import urllib3

from pullsecret import outbound
from pullsecret.errors import TerminalError, TransientError, looks_like_io
from pullsecret.hyperfleet import answers, budget, jsonsplit
from pullsecret.hyperfleet.answers import Answer, UnparseableCluster, shown_url
from pullsecret.identity.bearer import ApiCredential, hyperfleet_credential
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.logs import answer_text, log, scrub, scrubbed
from pullsecret.outbound import deadline_io
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings

_PAGE_SIZE = 100


class HyperFleetClient:
    """Thread-safe; one instance per process."""

    def __init__(self, settings: Settings, *, pool_size: int = 64, identity: RuntimeIdentity | None = None) -> None:
        self._base = settings.hyperfleet_api_url + "/api/hyperfleet/v1"
        self._base_url = shown_url(settings.hyperfleet_api_url)
        read_timeout = min(settings.hyperfleet_timeout_s, budget.MAX_TRY_TIMEOUT_S)
        self._timeout = (min(budget.CONNECT_TIMEOUT_S, read_timeout), read_timeout)
        self._call_budget_s = budget.call_budget_s(read_timeout)  # one call's whole-call deadline (deadline_io)
        self._status_method = settings.hyperfleet_status_method
        # The page-size parameter is `size` in the current API and `pageSize` in 0.1.0 (the POST era).
        self._size_param = "size" if settings.hyperfleet_status_method == "PUT" else "pageSize"
        self._token = hyperfleet_credential(settings, identity)
        retry = budget.BoundedRetry(
            total=budget.ATTEMPTS - 1,
            connect=budget.ATTEMPTS - 1,
            read=budget.ATTEMPTS - 1,
            status=budget.ATTEMPTS - 1,
            backoff_factor=budget.BACKOFF_FACTOR_S,
            backoff_max=budget.RETRY_AFTER_CAP_S,
            backoff_jitter=budget.BACKOFF_JITTER_S,
            status_forcelist=answers.RETRY_STATUSES,
            # The status write is idempotent on the server (a repeat is stored again or discarded).
            allowed_methods=frozenset({"GET", "PUT", "POST"}),
            respect_retry_after_header=True,
            raise_on_status=False,
            # A redirect is answered, never followed (the token would go where it points): `answers.redirected`.
            redirect=0,
            raise_on_redirect=False,
        )
        # One connection pool to the one API host, used directly (no per-call URL parsing and pool lookup as
        # in a PoolManager); no proxy or .netrc lookups: the API URL is configuration. The CA bundle is
        # certifi's, as requests used, or HYPERFLEET_API_CA_BUNDLE's (a gateway's private root CA).
        ca_bundle = settings.caller.hyperfleet_ca_bundle or certifi.where()
        tls = {"ca_certs": ca_bundle} if self._base.startswith("https:") else {}
        self._pool = deadline_io.connection_from_url(
            self._base,
            maxsize=pool_size,
            retries=retry,
            timeout=outbound.timeout(connect=self._timeout[0], read=self._timeout[1]),
            **tls,
        )
        self._path = urlsplit(self._base).path
        self._system_header: dict[str, str] = {}
        if settings.hyperfleet_system_header:
            # hyperfleet-api pkg/tenant/middleware.go: exactly "true" makes the caller the system identity.
            self._system_header[settings.hyperfleet_system_header] = "true"

    @property
    def credential(self) -> ApiCredential | None:
        """The credential the calls carry (the doctor mints and inspects it)."""
        return self._token

    def _request(self, method: str, path: str, *, what: str, **kwargs: Any) -> Answer:
        """One call; a refused token is re-read from its file and the call made again with a new one."""
        token = self._token.current() if self._token is not None else None
        response = self._send(method, path, what=what, token=token, **kwargs)
        # Two rounds: the file may have been rotated again while a call with the previous token was under way.
        for _ in range(2):
            if not answers.token_refused(response) or self._token is None or token is None:
                break
            if not self._token.refresh(token):
                break
            token = self._token.current()
            response = self._send(method, path, what=what, token=token, **kwargs)
        refusal = self._refusal(response, what, method)
        if refusal is not None:
            raise refusal
        return response

    def _refusal(self, response: Answer, what: str, method: str) -> Exception | None:
        """The error a refusal or a routing answer stands for (docs/contract.md §2's table), else None."""
        code = response.status_code
        base_url = self._base_url
        if code == 405:
            return answers.wrong_method(
                response, what, method=method, base_url=base_url, status_method=self._status_method
            )
        problem = answers.problem_code(response)
        title = answers.problem_title(response)
        if code == 403 and problem == "HYPERFLEET-AUZ-001" and answers.TENANT_DETAIL.search(title):
            return answers.no_tenant(response, what, base_url=base_url)
        if code == 403 and not answers.token_refused(response):
            return TerminalError(
                f"{what}: HyperFleet API denied the adapter's identity (403 {problem}{title}); grant it status access "
                "at the API or its gateway",
                reason="PermissionDenied",
                service="hyperfleet",
            )
        if code in answers.REFUSED:
            remedy = self._token.remedy if self._token else "configure HYPERFLEET_API_AUTH"
            return answers.refused(response, what, base_url=base_url, remedy=remedy)
        if code == 404 and problem not in answers.GONE_CODES:
            return answers.no_route(response, what, base_url=base_url)
        if 300 <= code < 400:
            return answers.redirected(response, what, base_url=base_url)
        return None

    def _send(
        self,
        method: str,
        path: str,
        *,
        what: str,
        token: str | None,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
    ) -> Answer:
        sent = outbound.request(
            token=token, scheme=self._token.scheme if self._token else "Bearer", json_body=json_body
        )
        url = self._path + path + (f"?{urlencode(params)}" if params else "")
        try:
            with deadline_io.within(Deadline(self._call_budget_s)):  # its tries, waits, headers and body
                response = self._pool.request(
                    method, url, body=sent.body, headers={**sent.headers, **self._system_header}
                )
                return Answer(response.status, response.headers, response.data)
        except urllib3.exceptions.HTTPError as exc:
            if looks_like_io(exc) or isinstance(exc, urllib3.exceptions.MaxRetryError):
                raise TransientError(
                    f"{what}: HyperFleet API unreachable ({type(exc).__name__})",
                    reason="DependencyUnavailable",
                    service="hyperfleet",
                ) from None
            raise TransientError(
                f"{what}: HyperFleet API request failed ({type(exc).__name__})",
                reason="DependencyUnavailable",
                service="hyperfleet",
            ) from None

    def get_cluster(self, cluster_id: str) -> dict[str, Any] | None:
        """The cluster, or None when it does not exist (404). Raises TransientError / TerminalError."""
        what = f"get cluster {cluster_id}"
        response = self._request("GET", f"/clusters/{quote(cluster_id, safe='')}", what=what)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise answers.failure(response, what)
        try:
            body = response.json()
        except RecursionError:
            # The cluster is nested deeper than the decoder goes: its content, not the API, is at fault.
            raise _unparseable(what, response.body) from None
        except ValueError:
            body = answers.json_of(response, what)
        if not isinstance(body, dict):
            raise TerminalError(
                f"{what}: the API returned a {type(body).__name__}, not a cluster object",
                reason="InvalidCluster",
                service="hyperfleet",
            )
        return body

    def list_statuses(self, cluster_id: str) -> list[dict[str, Any]]:
        """Every adapter status of the cluster (all pages); [] when the cluster has none or is gone."""
        what = f"list statuses of cluster {cluster_id}"
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            response = self._request(
                "GET",
                f"/clusters/{quote(cluster_id, safe='')}/statuses",
                what=what,
                params={"page": page, self._size_param: _PAGE_SIZE},
            )
            if response.status_code == 404:
                return []
            if response.status_code != 200:
                raise answers.failure(response, what)
            body = answers.json_of(response, what)
            batch = body.get("items") if isinstance(body, dict) else None
            if not isinstance(batch, list):
                raise TransientError(
                    f"{what}: the API answer has no 'items' list",
                    reason="DependencyUnavailable",
                    service="hyperfleet",
                )
            items.extend(item for item in batch if isinstance(item, dict))
            total = body.get("total")
            if not batch or not isinstance(total, int) or len(items) >= total:
                return items
            page += 1

    def report_status(self, cluster_id: str, body: dict[str, Any]) -> int:
        """Send the adapter status; returns 201 (stored) or 204 (discarded as stale) or raises."""
        what = f"report status of cluster {cluster_id}"
        response = self._request(
            self._status_method,
            f"/clusters/{quote(cluster_id, safe='')}/statuses",
            what=what,
            json_body=_scrubbed(body),
        )
        if response.status_code in (200, 201, 204):
            return response.status_code
        if response.status_code == 404:
            raise TerminalError(f"{what}: the cluster no longer exists", reason="ClusterGone", service="hyperfleet")
        raise answers.failure(response, what)

    def list_clusters(
        self, *, page: int, size: int, search: str | None = None, order: str | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """One page of clusters and the total (`order`: e.g. "id asc"; the API's default is created_time desc)."""
        params: dict[str, Any] = {"page": page, self._size_param: size}
        if search:
            params["search"] = search
        if order:
            params["order"] = order
        response = self._request("GET", "/clusters", what="list clusters", params=params)
        if response.status_code != 200:
            raise answers.failure(response, "list clusters")
        try:
            body = response.json()
            items = body.get("items") if isinstance(body, dict) else None
            total = body.get("total") if isinstance(body, dict) else None
        except RecursionError:
            try:
                items, total = self._split_page(response)
            except jsonsplit.OverBudget as over:
                items, total = self._in_parts(page, size, search, order, over.total)
        except ValueError:
            body = answers.json_of(response, "list clusters")
        if not isinstance(items, list):
            raise TransientError("list clusters: the API answer has no 'items' list", service="hyperfleet")
        total = total if isinstance(total, int) else len(items)
        return [i for i in items if isinstance(i, dict)], int(total)

    def _in_parts(
        self, page: int, size: int, search: str | None, order: str | None, total: object
    ) -> tuple[list[object], object]:
        """A page whose too-deep values cost more than the walk's budget (jsonsplit.Budget), served without the
        costly cluster: asked again in smaller pages, down to the one page of that one cluster, which is left out
        (logged; its own events are terminal, InvalidCluster). Its place stays, as an empty item: callers that
        take a short page for the last (the rotation's keyset paging, rekey) page on past it."""
        if size <= 1:
            log.warning(
                f"list clusters: a cluster too costly to read (nested too deep, over the {jsonsplit.WALK_BYTES} bytes "
                f"or {jsonsplit.WALK_SECONDS} s budget) at page {page}; left out of the listing",
                operation="hyperfleet.list_clusters",
            )
            return [{}], total
        items: list[object] = []
        for sub_page, sub_size in jsonsplit.sub_pages(page, size):
            part, part_total = self.list_clusters(page=sub_page, size=sub_size, search=search, order=order)
            items.extend(part)
            total = part_total if isinstance(part_total, int) else total
        return items, total

    def _split_page(self, response: Answer) -> tuple[list[object], object]:
        """A page one cluster of which is nested too deep: every other cluster decoded; the deep one stands as
        {"id": id} (when its id is a string) so its own reconcile reports it; unreadable id: skipped."""
        try:
            items, total = jsonsplit.page_items(response.body)
        except jsonsplit.OverBudget:
            raise
        except (ValueError, RecursionError):
            answers.json_of(response, "list clusters")  # raises: not a page we can split either
            raise
        kept: list[object] = []
        for item in items:
            if isinstance(item, jsonsplit.Unparseable):
                log.warning(
                    f"list clusters: a cluster nested too deep to decode (id {answer_text(repr(item.id), 80)}); "
                    "listed by id only",
                    operation="hyperfleet.list_clusters",
                )
                kept.append({"id": item.id} if item.id is not None else {})
            else:
                kept.append(item)
        return kept, total


def _scrubbed(body: dict[str, Any]) -> dict[str, Any]:
    """A status body with its free text (each condition's message, `data`) scrubbed as a log line's strings are, so
    whoever reads cluster statuses never reads a credential; its vocabulary (types, statuses, reasons) as it is."""
    conditions = body.get("conditions")
    shown = dict(body)
    if isinstance(conditions, list):
        shown["conditions"] = [
            {**c, "message": scrub(c["message"])} if isinstance(c, dict) and isinstance(c.get("message"), str) else c
            for c in conditions
        ]
    if "data" in body:
        shown["data"] = scrubbed(body["data"])
    return shown


def _unparseable(what: str, body: bytes) -> UnparseableCluster:
    """A cluster too deep to decode: its generation read by the walk when its Budget allows, else none (the
    caller reports at the event's); the message names the cause, never the content."""
    too_deep = f"{what}: the cluster is nested too deep to decode (its spec or labels)"
    try:
        return UnparseableCluster(
            too_deep, generation=jsonsplit.int_member(body.decode("utf-8", "replace"), "generation")
        )
    except jsonsplit.OverBudget:
        return UnparseableCluster(
            f"{too_deep}, and reading past that depth takes more than the walk's budget "
            f"({jsonsplit.WALK_BYTES // 1024} KiB of text or {jsonsplit.WALK_SECONDS} s of CPU per event)",
            generation=None,
        )
