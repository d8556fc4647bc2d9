"""Reading one environment variable: trimmed, typed and checked, a bad value a `ConfigError` naming the variable."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from urllib.parse import SplitResult, urlparse, urlsplit

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from pullsecret.errors import ConfigError


def get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def number(
    env: Mapping[str, str], name: str, default: float, *, minimum: float, maximum: float, unit: str = "seconds"
) -> float:
    """A number in [minimum, maximum]; `unit` is what it counts, said when it is no number (a rate says its own)."""
    raw = get(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of {unit}, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ConfigError(f"{name} must lie in [{minimum:g}, {maximum:g}], got {raw!r}")
    return value


def count(env: Mapping[str, str], name: str, default: int, *, minimum: int, maximum: int) -> int:
    """A whole number (a count, not seconds): `2.7` or `zero` refused, never rounded."""
    raw = get(env, name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()):
        raise ConfigError(f"{name} must be a whole number from {minimum} to {maximum}, got {raw[:40]!r}")
    value = int(raw)
    if not minimum <= value <= maximum:
        raise ConfigError(f"{name} must be a whole number from {minimum} to {maximum}, got {raw!r}")
    return value


def items(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = env.get(name)
    if raw is None:
        return default
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def template(env: Mapping[str, str], name: str, default: str) -> str:
    value = get(env, name) or default
    if "{cluster_id}" not in value:
        raise ConfigError(f"{name} must contain the placeholder {{cluster_id}}, got {value!r}")
    try:
        value.format(cluster_id="x")
    except (KeyError, IndexError, ValueError):
        raise ConfigError(f"{name} may only use the placeholder {{cluster_id}}, got {value!r}") from None
    return value


def choice(
    env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...], *, upper: bool, say: str = ""
) -> str:
    """One of `allowed` (case-folded); `say` lists the choices in the error, else the tuple itself."""
    raw = get(env, name) or default
    value = raw.upper() if upper else raw.lower()
    if value not in allowed:
        raise ConfigError(f"{name} must be {say or f'one of {allowed}'}, got {value!r}")
    return value


def flag(env: Mapping[str, str], name: str) -> bool:
    """true/1/yes or false/0/no (default false)."""
    value = choice(env, name, "false", ("true", "false", "1", "0", "yes", "no"), upper=False, say="true or false")
    return value in ("true", "1", "yes")


def matching(env: Mapping[str, str], name: str, pattern: re.Pattern[str], shape: str) -> str | None:
    """An optional value that must match `pattern` (`shape` says how it looks, for the error)."""
    value = get(env, name)
    if value is not None and not pattern.match(value):
        raise ConfigError(f"{name} must be {shape}, got {value!r}")
    return value


def readable_file(env: Mapping[str, str], name: str) -> str | None:
    """An optional path that must name a readable file."""
    path = get(env, name)
    if path is not None and not os.path.isfile(path):
        raise ConfigError(f"{name} names no readable file: {path!r}")
    return path


def is_loopback(host: str | None) -> bool:
    """`localhost` or a loopback IP literal (127.0.0.0/8, ::1); a name that merely starts with "127." is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def url(name: str, value: str) -> SplitResult:
    """A URL setting checked whole, as every client that will use it parses it: http or https, a host, a port (when
    given) in 1..65535, nothing unprintable or blank inside, and accepted by urllib3's parser (the HTTP clients'
    own). A value any client would refuse when it is built is a ConfigError naming the variable at cold start,
    never a failure on every event."""
    shape = f"{name} must be an http(s) URL with a host and a port in 1..65535, got {value!r}"
    if not value.isprintable() or any(ch.isspace() for ch in value):
        raise ConfigError(shape)
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError past 65535 or when not a number
        parse_url(value)
    except (ValueError, LocationParseError):
        raise ConfigError(shape) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ConfigError(shape)
    return parts


HOSTPORT_RE = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")


def loopback_address(env: Mapping[str, str], name: str) -> str | None:
    """A local emulator's `host:port`: loopback only, since the runtime identity's access token goes with each call
    (over plain HTTP to the Resource Manager emulator, over a local gRPC channel to the others)."""
    value = matching(env, name, HOSTPORT_RE, "host:port")
    if value is not None:
        url(name, f"http://{value}")  # the port in range
    if value is not None and not is_loopback(urlparse(f"//{value}").hostname):
        raise ConfigError(f"{name} must name a loopback address (localhost, 127.0.0.1, [::1]), got {value!r}")
    return value


# An HTTP header name (RFC 9110 token), not one the function sets itself.
_HEADER_NAME = re.compile(
    r"^(?!(?i:authorization|content-type|accept|user-agent|traceparent|host)$)[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$"
)
# A Go duration in hours, minutes and seconds, not zero (ESO's refreshInterval as terraform/variables.tf takes it).
_DURATION = re.compile(r"^(?=.*[1-9])([0-9]+h)?([0-9]+m)?([0-9]+s)?$")


def header_name(env: Mapping[str, str], name: str) -> str | None:
    """An optional HTTP header name, not one the function sets itself (Authorization, traceparent, ...)."""
    return matching(env, name, _HEADER_NAME, "an HTTP header name, e.g. X-HyperFleet-System")


def duration(env: Mapping[str, str], name: str) -> str | None:
    """An optional non-zero duration such as 5m or 1h30m."""
    return matching(env, name, _DURATION, "a non-zero duration such as 5m or 1h30m")
