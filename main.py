"""Cloud Run function entry point: a HyperFleet cluster reconcile event in, a pull secret applied."""

from __future__ import annotations

import flask
import functions_framework
import werkzeug.exceptions
from cloudevents.http.event import CloudEvent

from pullsecret import web
from pullsecret.doctor import run as doctor
from pullsecret.errors import TransientError

# Validate the configuration at cold start: a bad variable is one ERROR line naming it, and the instance exits.
ADAPTER = web.start()


@functions_framework.cloud_event
def handle_cluster_event(event: CloudEvent) -> None:
    """Reconcile the cluster named by `event`; a transient failure answers 503 so that Pub/Sub redelivers."""
    if event.get("type") == doctor.EVENT_TYPE:  # an operator's `gcloud functions call` (pullsecret.doctor.run)
        raise doctor.answer(ADAPTER)
    headers = flask.request.headers if flask.has_request_context() else None
    try:
        ADAPTER.handle(
            event.get_attributes(),
            event.get_data(),
            cloud_trace_context=headers.get("X-Cloud-Trace-Context") if headers else None,
            traceparent=headers.get("traceparent") if headers else None,
        )
    except TransientError as exc:
        raise web.Redeliver(exc) from None


@functions_framework.errorhandler(werkzeug.exceptions.BadRequest)  # type: ignore[untyped-decorator]
def malformed_delivery(_error: werkzeug.exceptions.BadRequest) -> tuple[str, int, dict[str, str]]:
    """A body functions-framework could not turn into a CloudEvent: one log line, a short plain answer."""
    request = flask.request
    text = web.log_malformed_delivery(request.content_type, request.get_data(cache=True))
    return text, 400, {"Content-Type": "text/plain; charset=utf-8"}
