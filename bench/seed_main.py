"""functions-framework target for the seed flow: `--source bench/seed_main.py --target handle_cluster_event`."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from bench import seedflow

FLOW = seedflow.flow()


@functions_framework.cloud_event
def handle_cluster_event(event: CloudEvent) -> None:
    FLOW.handle(event.get_attributes(), event.get_data())
