"""Where registry verification may connect, decided before any byte is sent, and which token realm it trusts.

A pull secret's `auths` keys are chosen by the cluster owner, and a token realm by whoever answers at the
registry host, so neither may steer the function to an address of the platform's own network:

- A host is resolved once; the connection goes to that vetted address (TLS SNI and the certificate are
  checked for the name), so DNS cannot answer differently between the check and the connect.
- Unless REGISTRY_ALLOWED_HOSTS names its `host[:port]`, only a DNS name on port 443 is contacted, and only
  when every address it resolves to is public: IP literals, other ports, single-label and private names
  (`localhost`, `*.internal`, `*.local`, `*.localhost`) and names resolving to loopback, link-local (the
  metadata server 169.254.169.254), RFC 1918, CGNAT (100.64.0.0/10), ULA (fc00::/7), 6to4 (2002::/16),
  site-local (fec0::/10), multicast or reserved addresses are refused. An allowlisted host is contacted at
  whatever it resolves to (an on-premises registry).
- A token realm must be the registry's own host name, or share its registrable domain by the Public Suffix
  List (`publicsuffixlist` and the list it bundles; nothing is fetched at run time), so `evil.appspot.com`
  is no realm for `victim.appspot.com`, or be paired with that registry by REGISTRY_TRUSTED_REALMS
  (`registry=realm` host names, e.g. `registry.redhat.io=sso.redhat.com`: a registry whose token service lives
  on another domain). Either way it is then vetted like a registry host.

A refusal judged from the name (an IP literal, a port, a private name) is a `Refused` with a fixed reason,
reported as `skipped`. A name that resolves only partly or wholly to private addresses is `NoPublicAddress`, a
kind of `Unresolvable`: reported exactly like a name that does not resolve (`unreachable`, no reason), so
the status cannot tell a cluster owner which internal names exist. Nothing of the resolution is reported.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from publicsuffixlist import PublicSuffixList

from pullsecret.settings.hostnames import DEFAULT_PORT, allowed_entry, split_host

_PRIVATE_SUFFIXES = (".internal", ".local", ".localhost", ".localdomain", ".home.arpa", ".intranet", ".corp", ".lan")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


class Refused(Exception):
    """The verifier may not connect there; `reason` is a fixed text for the status."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Unresolvable(Exception):
    """The name does not resolve (an outage or a typo: `unreachable`, never a verdict)."""


class NoPublicAddress(Unresolvable):
    """The name resolves to an address of a private network: not contacted, and reported as not resolving."""


@dataclass(frozen=True)
class Endpoint:
    """A vetted place to connect: the name (for SNI, the certificate and Host) and the address to dial."""

    hostname: str  # lower case, no brackets; an IP literal for allowlisted IP hosts
    port: int
    address: str  # the resolved, vetted IP address


# IPv6 blocks that are not globally reachable registries but that Python 3.11's `is_global` (the deployed runtime's)
# counts as global: 6to4 (RFC 3056: an IPv4 address inside, possibly an internal one), site-local (RFC 3879:
# deprecated, still routed inside some networks) and the documentation block 3fff::/20 (RFC 9637). Python 3.12.4+
# and 3.13 know some of these; the list is kept whatever the runtime knows (IANA IPv6 Special-Purpose Address
# Registry, https://www.iana.org/assignments/iana-ipv6-special-registry).
_NOT_GLOBAL_V6 = (
    (ipaddress.IPv6Network("2002::/16"), "6to4 (an IPv4 address inside IPv6)"),
    (ipaddress.IPv6Network("fec0::/10"), "site-local"),
    (ipaddress.IPv6Network("3fff::/20"), "documentation"),
)


def address_refusal(address: Address) -> str | None:
    """Why the verifier may not connect to this address on its own judgement; None for a public address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if isinstance(address, ipaddress.IPv6Address):
        for network, why in _NOT_GLOBAL_V6:
            if address in network:
                return why
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local (metadata server)"
    if address.is_multicast or address.is_unspecified or address.is_reserved:
        return "not a unicast address"
    if isinstance(address, ipaddress.IPv4Address) and address in ipaddress.IPv4Network("100.64.0.0/10"):
        return "shared address space (CGNAT)"
    if not address.is_global:  # is_global is `not is_private`, but for the CGNAT block handled above
        return "private"
    return None


def _ip(hostname: str) -> Address | None:
    try:
        return ipaddress.ip_address(hostname)
    except ValueError:
        return None


def name_refusal(hostname: str, port: int) -> str | None:
    """Why a registry host is not contacted without REGISTRY_ALLOWED_HOSTS, judged from the name alone."""
    if _ip(hostname) is not None:
        return "an IP address, not a registry name; not contacted unless REGISTRY_ALLOWED_HOSTS names it"
    if port != DEFAULT_PORT:
        return f"a port other than {DEFAULT_PORT}; not contacted unless REGISTRY_ALLOWED_HOSTS names it"
    if "." not in hostname or hostname.endswith(_PRIVATE_SUFFIXES):  # no dot: `localhost`, `metadata`
        return "a private host name; not contacted unless REGISTRY_ALLOWED_HOSTS names it"
    return None


def realm_trusted(registry_hostname: str, realm_hostname: str, trusted: Collection[tuple[str, str]] = ()) -> bool:
    """A token realm may receive the registry's credential: its own host, one registrable domain (PSL), or a
    (registry, realm) pair of `trusted` (REGISTRY_TRUSTED_REALMS).

    IP addresses and names with no registrable domain (`localhost`, a bare public suffix) match only
    themselves or a pair naming them. Names are compared in lower case without a trailing dot.
    """
    registry = registry_hostname.rstrip(".").lower()
    realm = realm_hostname.rstrip(".").lower()
    if registry == realm or (registry, realm) in trusted:
        return True
    if _ip(registry) is not None or _ip(realm) is not None:
        return False
    psl = _public_suffixes()
    domain = psl.privatesuffix(registry)
    return domain is not None and domain == psl.privatesuffix(realm)


@functools.cache
def _public_suffixes() -> PublicSuffixList:
    """The bundled list, parsed on first use (a token realm to judge), not at every instance's cold start
    (about 0.1 s of CPU). only_icann=False: private suffixes such as appspot.com count."""
    return PublicSuffixList()


def system_resolver(hostname: str, port: int) -> list[str]:
    """Every address the system resolver gives for a TCP connection to hostname:port."""
    try:
        infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolvable(hostname) from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class Egress:
    """The connection policy of registry verification (REGISTRY_ALLOWED_HOSTS, REGISTRY_TRUSTED_REALMS);
    thread-safe, no state."""

    def __init__(
        self,
        allowed: Iterable[str] = (),
        *,
        trusted_realms: Iterable[tuple[str, str]] = (),
        resolver: Resolver = system_resolver,
    ) -> None:
        self.allowed = frozenset(allowed_entry(entry) for entry in allowed)
        self.trusted_realms = frozenset(trusted_realms)
        self._resolve = resolver

    def realm_trusted(self, registry_hostname: str, realm_hostname: str) -> bool:
        """`realm_trusted` with this policy's REGISTRY_TRUSTED_REALMS pairs."""
        return realm_trusted(registry_hostname, realm_hostname, self.trusted_realms)

    def vet(self, host: str) -> Endpoint:
        """The one address to connect to for `host[:port]`; raises Refused, or Unresolvable (NoPublicAddress
        when every address is not public)."""
        try:
            hostname, port = split_host(host)
        except ValueError:
            raise Refused("not a host name") from None
        listed = f"{hostname}:{port}" in self.allowed
        if not listed:
            refusal = name_refusal(hostname, port)
            if refusal is not None:
                raise Refused(refusal)
        addresses = [a for a in (_ip(text.partition("%")[0]) for text in self._resolve(hostname, port)) if a]
        if not addresses:
            raise Unresolvable(hostname)
        if not listed and any(address_refusal(a) is not None for a in addresses):
            # Every answer is judged, not just the first: a name mixing public and private addresses is refused.
            raise NoPublicAddress(hostname)
        return Endpoint(hostname, port, str(addresses[0]))
