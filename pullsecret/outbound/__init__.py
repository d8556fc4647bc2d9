"""Outgoing HTTP calls, the part every client shares: what one call sends (message.py) and the whole-call deadline
it runs within (deadline_io.py). Each client (hyperfleet, source.service, identity.satoken, gke, registry,
delivery.direct, the doctor) owns its pool, its tries and what its answers mean."""

from pullsecret.outbound.message import USER_AGENT, Request, request, timeout, traceparent

__all__ = ["USER_AGENT", "Request", "request", "timeout", "traceparent"]
