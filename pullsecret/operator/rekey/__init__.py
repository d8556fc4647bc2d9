"""`python -m pullsecret rekey`: re-key the fleet (or some clusters) now, within the limits it spends.

`run` does it (its protocol in run.py's docstring), `request` says what was asked and what the limits make of it,
`listing` selects the clusters, `views` is `--dry-run` and `--watch`. The names the CLI and the tests use:
"""

from pullsecret.operator.rekey.listing import selected
from pullsecret.operator.rekey.request import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_NOTHING_DONE,
    EXIT_OK,
    EXIT_TRANSIENT,
    EXIT_USAGE,
    LEASE_S,
    LOOKAHEAD,
    NODES_WARNING,
    REPLACE_NODEPOOLS,
    UNKNOWN,
    Plan,
    Request,
    parse_time,
    plan,
)
from pullsecret.operator.rekey.run import ask, run
from pullsecret.operator.rekey.views import watch
from pullsecret.source.base import DDR_LIMITS

__all__ = [
    "DDR_LIMITS",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_NOTHING_DONE",
    "EXIT_OK",
    "EXIT_TRANSIENT",
    "EXIT_USAGE",
    "LEASE_S",
    "LOOKAHEAD",
    "NODES_WARNING",
    "REPLACE_NODEPOOLS",
    "UNKNOWN",
    "Plan",
    "Request",
    "ask",
    "parse_time",
    "plan",
    "run",
    "selected",
    "watch",
]
