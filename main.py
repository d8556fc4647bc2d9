"""Cloud Run function entry point: a HyperFleet cluster reconcile event in, a pull secret applied."""

from __future__ import annotations

import flask
import functions_framework
from cloudevents.http.event import CloudEvent

from pullsecret import handler

# Validate the configuration at cold start: a bad variable fails the instance with its name.
ADAPTER = handler.adapter()


@functions_framework.cloud_event
def handle_cluster_event(event: CloudEvent) -> None:
    """Reconcile the cluster named by `event`; raises to have Pub/Sub redeliver on transient failures."""
    trace_header = flask.request.headers.get("X-Cloud-Trace-Context") if flask.has_request_context() else None
    ADAPTER.handle(event.get_attributes(), event.get_data(), cloud_trace_context=trace_header)
