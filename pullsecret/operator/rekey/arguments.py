"""The `rekey` command's arguments (and `--service-limits`, which `fleet` shares): read into a Request by
request.py."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def _time(text: str) -> float:
    from pullsecret.operator.rekey import parse_time

    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an RFC 3339 time or a date, got {text[:40]!r}") from None


def add_parser(commands: Any, epilog: str, deployed_help: str, page_size: Callable[[str], int]) -> None:
    """The `rekey` subcommand of `python -m pullsecret`."""
    rekey = commands.add_parser(
        "rekey",
        help="re-key every cluster (or these) now, paced by the Secret Manager write quota; resumable",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rekey.add_argument("cluster_ids", nargs="*", metavar="CLUSTER_ID", help="only these clusters (default: all)")
    rekey.add_argument(
        "--created-before", type=_time, metavar="TIME", help="only clusters whose credentials were created before TIME"
    )
    rekey.add_argument(
        "--compromise", action="store_true", help="a compromise rotation: the old credentials are revoked at once"
    )
    rekey.add_argument("--dry-run", action="store_true", help="say what would happen; rotate and publish nothing")
    rekey.add_argument("--watch", action="store_true", help="then follow the clusters until each holds the new set")
    rekey.add_argument("--watch-timeout", type=float, default=1800.0, metavar="S", help="seconds to watch (1800)")
    rekey.add_argument("--page-size", type=page_size, default=100, metavar="N", help="clusters per saved page (1..500)")
    rekey.add_argument("--yes", action="store_true", help="--compromise: go on after its warning without asking")
    rekey.add_argument(
        "--own-identity", action="store_true", help="this shell calls the service as a ServiceAccount of its own"
    )
    service_limits(rekey, "the service's limits per ServiceAccount")
    rekey.add_argument("--verbose", "-v", action="store_true", help="also the JSON log lines, on stderr")
    rekey.add_argument("--deployed", metavar="FUNCTION", help=deployed_help)


def service_limits(parser: argparse.ArgumentParser, what: str) -> None:
    """`--service-limits N/min,M/h` (rekey, fleet): what the source's service allows one identity."""
    parser.add_argument(
        "--service-limits",
        type=_limits,
        default=None,
        metavar="N/min,M/h",
        help=f"{what} (DDR section 3.5: 100/min,10/h)",
    )


def _limits(text: str) -> Any:
    from pullsecret.operator.rekey.request import parse_limits

    try:
        return parse_limits(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
