"""Where registry verification may connect (pure rules and the vetting with a resolver given as configuration)."""

from __future__ import annotations

import ipaddress

import pytest

from pullsecret import configured
from pullsecret.errors import ConfigError
from pullsecret.registry.egress import (
    _PRIVATE_SUFFIXES,
    Egress,
    Endpoint,
    NoPublicAddress,
    Refused,
    Unresolvable,
    address_refusal,
    name_refusal,
    realm_trusted,
)
from pullsecret.settings.hostnames import allowed_entry, split_host, trusted_realm_entry


@pytest.mark.parametrize(
    ("registry", "realm", "trusted"),
    [
        ("registry-1.docker.io", "auth.docker.io", True),
        ("quay.io", "quay.io", True),
        ("us-docker.pkg.dev", "us-docker.pkg.dev", True),
        ("gcr.io", "gcr.io", True),
        ("registry.example.com", "sso.example.com", True),
        ("Registry.Example.COM.", "sso.example.com", True),
        # A public suffix (ICANN or private section) is no registrable domain: the last two labels are not one.
        ("victim.appspot.com", "evil.appspot.com", False),
        ("bank.co.uk", "evil.co.uk", False),
        ("victim.github.io", "evil.github.io", False),
        ("registry.redhat.io", "sso.redhat.com", False),
        ("quay.io", "evil.example", False),
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "localhost", False),
        ("localhost", "evil.localhost", False),
        ("10.0.0.5", "10.0.0.6", False),
    ],
)
def test_a_realm_shares_the_registrable_domain_by_the_public_suffix_list(
    registry: str, realm: str, trusted: bool
) -> None:
    assert realm_trusted(registry, realm) is trusted


REDHAT = (("registry.redhat.io", "sso.redhat.com"),)


@pytest.mark.parametrize(
    ("registry", "realm", "trusted"),
    [
        ("registry.redhat.io", "sso.redhat.com", True),
        ("Registry.RedHat.io.", "SSO.redhat.com.", True),
        # A pair is one direction, for those two names only: no domain, no reverse, no neighbour.
        ("sso.redhat.com", "registry.redhat.io", False),
        ("registry.redhat.io", "evil.redhat.com", False),
        ("registry.redhat.io", "sso.redhat.com.evil.example", False),
        ("registry.access.redhat.com", "sso.redhat.com", True),  # one registrable domain (PSL), no pair needed
        ("quay.io", "sso.redhat.com", False),
        ("evil.io", "sso.redhat.com", False),
    ],
)
def test_realm_trusted_by_a_configured_pair(registry: str, realm: str, trusted: bool) -> None:
    assert realm_trusted(registry, realm, REDHAT) is trusted


@pytest.mark.parametrize(
    ("entry", "pair"),
    [
        ("registry.redhat.io=sso.redhat.com", ("registry.redhat.io", "sso.redhat.com")),
        (" Registry.RedHat.io = SSO.redhat.com. ", ("registry.redhat.io", "sso.redhat.com")),
        ("127.0.0.1=localhost", ("127.0.0.1", "localhost")),
    ],
)
def test_trusted_realm_entries(entry: str, pair: tuple[str, str]) -> None:
    assert trusted_realm_entry(entry) == pair


@pytest.mark.parametrize(
    "entry",
    [
        "registry.redhat.io",
        "registry.redhat.io=",
        "=sso.redhat.com",
        "registry.redhat.io=https://sso.redhat.com",
        "registry.redhat.io=sso.redhat.com:8443",
        "registry.redhat.io=sso.redhat.com/auth",
        "a=b=c",
        "-a=b",
    ],
)
def test_a_trusted_realm_entry_is_two_host_names(entry: str) -> None:
    with pytest.raises(ValueError):
        trusted_realm_entry(entry)


def test_trusted_realms_setting() -> None:
    base = {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    assert configured.load(base).registry_trusted_realms == REDHAT  # the documented default
    assert configured.load({**base, "REGISTRY_TRUSTED_REALMS": ""}).registry_trusted_realms == ()
    both = configured.load({**base, "REGISTRY_TRUSTED_REALMS": "registry.redhat.io=sso.redhat.com, r.example=a.other"})
    assert both.registry_trusted_realms == (*REDHAT, ("r.example", "a.other"))
    with pytest.raises(ConfigError, match="REGISTRY_TRUSTED_REALMS"):
        configured.load({**base, "REGISTRY_TRUSTED_REALMS": "registry.redhat.io"})
    assert Egress(trusted_realms=REDHAT).realm_trusted("registry.redhat.io", "sso.redhat.com")
    assert not Egress().realm_trusted("registry.redhat.io", "sso.redhat.com")


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.0.0.5", "private"),
        ("172.16.3.4", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "CGNAT"),
        ("fd00::1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.1.2.3", "private"),
        ("0.0.0.0", "not a unicast"),
        ("224.0.0.1", "not a unicast"),
        ("240.0.0.1", "not a unicast"),
        ("192.0.2.1", "private"),
    ],
)
def test_addresses_of_private_networks_are_refused(address: str, why: str) -> None:
    refusal = address_refusal(ipaddress.ip_address(address))
    assert refusal is not None and why in refusal


@pytest.mark.parametrize("address", ["8.8.8.8", "142.250.1.1", "2607:f8b0:4004:c1b::64"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("hostname", "port", "fragment"),
    [
        ("10.0.0.5", 6443, "an IP address"),
        ("169.254.169.254", 443, "an IP address"),
        ("fd00::1", 443, "an IP address"),
        ("quay.io", 8080, "a port other than 443"),
        ("localhost", 443, "private host name"),
        ("metadata.google.internal", 443, "private host name"),
        ("metadata", 443, "private host name"),
        ("printer.local", 443, "private host name"),
    ],
)
def test_names_refused_from_the_key_alone(hostname: str, port: int, fragment: str) -> None:
    refusal = name_refusal(hostname, port)
    assert refusal is not None and fragment in refusal


def _resolver(answers: dict[str, list[str]], calls: list[str]) -> object:
    def resolve(hostname: str, port: int) -> list[str]:
        calls.append(hostname)
        if hostname not in answers:
            raise Unresolvable(hostname)
        return answers[hostname]

    return resolve


def test_vet_resolves_once_and_pins_the_address() -> None:
    calls: list[str] = []
    egress = Egress(resolver=_resolver({"quay.io": ["34.1.2.3", "34.1.2.4"]}, calls))  # type: ignore[arg-type]
    assert egress.vet("quay.io") == Endpoint("quay.io", 443, "34.1.2.3")
    assert calls == ["quay.io"]


@pytest.mark.parametrize(
    "answers",
    [["127.0.0.1"], ["169.254.169.254"], ["34.1.2.3", "10.0.0.1"], ["::ffff:192.168.0.1"], ["fd12::1"]],
)
def test_a_public_name_resolving_to_a_private_network_is_refused_as_not_resolving(answers: list[str]) -> None:
    egress = Egress(resolver=_resolver({"evil.example.com": answers}, []))  # type: ignore[arg-type]
    with pytest.raises(NoPublicAddress):
        egress.vet("evil.example.com")
    assert issubclass(NoPublicAddress, Unresolvable)  # reported as a name that does not resolve


def test_the_allowlist_admits_exactly_its_host_and_port() -> None:
    answers = {"127.0.0.1": ["127.0.0.1"], "registry.corp.internal": ["10.1.1.1"], "localhost": ["127.0.0.1"]}
    egress = Egress(
        ["127.0.0.1:5000", "Registry.Corp.Internal"],
        resolver=_resolver(answers, []),  # type: ignore[arg-type]
    )
    assert egress.vet("127.0.0.1:5000").address == "127.0.0.1"
    assert egress.vet("registry.corp.internal:443").address == "10.1.1.1"
    for host in ("127.0.0.1:5001", "127.0.0.1", "localhost:5000", "registry.corp.internal:5000"):
        with pytest.raises(Refused):
            egress.vet(host)


def test_an_unresolvable_name_is_unresolvable_not_refused() -> None:
    with pytest.raises(Unresolvable):
        Egress(resolver=_resolver({}, [])).vet("nowhere.example.com")  # type: ignore[arg-type]


def test_allowed_hosts_configuration() -> None:
    base = {"HYPERFLEET_API_URL": "http://hf.example", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    assert configured.load(base).registry_allowed_hosts == ()
    loaded = configured.load({**base, "REGISTRY_ALLOWED_HOSTS": "127.0.0.1:5000, Registry.Corp:8443,[::1]:5000,onprem"})
    assert loaded.registry_allowed_hosts == ("127.0.0.1:5000", "registry.corp:8443", "::1:5000", "onprem:443")
    for bad in ("https://x.example", "user@x.example", "x.example:99999", "::1"):
        with pytest.raises(ConfigError, match="REGISTRY_ALLOWED_HOSTS"):
            configured.load({**base, "REGISTRY_ALLOWED_HOSTS": bad})
    assert allowed_entry("[::1]:5000") == "::1:5000"


# -- exact outcomes of each rule (the texts are what the status reports) -----------------------------------------
@pytest.mark.parametrize(
    ("host", "split"),
    [
        ("QUAY.IO.", ("quay.io", 443)),
        ("quay.io.:5000", ("quay.io", 5000)),
        ("[::1]", ("::1", 443)),
        ("[FD00::1]:8443", ("fd00::1", 8443)),
    ],
)
def test_split_host_gives_the_lower_case_name_without_dot_and_the_port(host: str, split: tuple[str, int]) -> None:
    assert split_host(host) == split


@pytest.mark.parametrize("host", ["", ":5000", "[", "a:b"])
def test_split_host_refuses_what_names_no_host(host: str) -> None:
    with pytest.raises(ValueError):
        split_host(host)


@pytest.mark.parametrize(
    ("entry", "form"),
    [
        (" Registry.Corp ", "registry.corp:443"),
        ("X.Corp", "x.corp:443"),
        ("registry.corp:5000", "registry.corp:5000"),
        ("[::1]:5000", "::1:5000"),
        ("[::1]", "::1:443"),
        ("10.0.0.5", "10.0.0.5:443"),
    ],
)
def test_allowed_entries_take_the_form_vet_compares(entry: str, form: str) -> None:
    assert allowed_entry(entry) == form


@pytest.mark.parametrize("entry", ["", "  ", "a/b", "u@a", "a?x", "a#x", "::1", "a:1:2", "a:b"])
def test_allowed_entries_that_are_not_host_and_port_are_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        allowed_entry(entry)


@pytest.mark.parametrize(
    ("address", "refusal"),
    [
        ("127.0.0.1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local (metadata server)"),
        ("224.0.0.1", "not a unicast address"),
        ("ff02::1", "not a unicast address"),
        ("0.0.0.0", "not a unicast address"),
        ("240.0.0.1", "not a unicast address"),
        ("100.64.0.1", "shared address space (CGNAT)"),
        ("100.127.255.254", "shared address space (CGNAT)"),
        ("10.0.0.5", "private"),
        ("fd00::1", "private"),
        ("::ffff:10.1.2.3", "private"),
        ("100.128.0.1", None),  # just past the CGNAT block
        ("::ffff:8.8.8.8", None),
        ("2002::1", "6to4 (an IPv4 address inside IPv6)"),
        ("2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "6to4 (an IPv4 address inside IPv6)"),
        ("2003::1", None),  # just past 6to4
        ("fec0::1", "site-local"),
        ("feff:ffff::1", "site-local"),
        ("3fff::1", "documentation"),
        ("3fff:fff::1", "documentation"),
        ("3fff:1000::1", None),  # just past 3fff::/20
        ("2607:f8b0:4004:c07::71", None),
    ],
)
def test_each_address_class_has_its_own_refusal(address: str, refusal: str | None) -> None:
    assert address_refusal(ipaddress.ip_address(address)) == refusal


_NOT_LISTED = "not contacted unless REGISTRY_ALLOWED_HOSTS names it"


@pytest.mark.parametrize(
    ("hostname", "port", "refusal"),
    [
        ("10.0.0.5", 443, f"an IP address, not a registry name; {_NOT_LISTED}"),
        ("quay.io", 5000, f"a port other than 443; {_NOT_LISTED}"),
        ("metadata", 443, f"a private host name; {_NOT_LISTED}"),
        ("localhost", 443, f"a private host name; {_NOT_LISTED}"),
        *((f"r{suffix}", 443, f"a private host name; {_NOT_LISTED}") for suffix in _PRIVATE_SUFFIXES),
        ("quay.io", 443, None),
        ("internal.example.com", 443, None),  # a private word as a label, not as the suffix
    ],
)
def test_each_name_rule_has_its_own_refusal(hostname: str, port: int, refusal: str | None) -> None:
    assert name_refusal(hostname, port) == refusal


@pytest.mark.parametrize(
    ("registry", "realm", "trusted"),
    [
        ("registry.example.com", "SSO.Example.com.", True),  # the realm's case and trailing dot do not matter
        ("quay.io", "quay.io.", True),
        ("quay.io", "34.1.2.3", False),  # an IP realm for a named registry
        ("34.1.2.3", "quay.io", False),
        ("com", "net", False),  # neither has a registrable domain: only a name matches itself
        ("appspot.com", "github.io", False),
    ],
)
def test_the_realm_rule_at_its_edges(registry: str, realm: str, trusted: bool) -> None:
    assert realm_trusted(registry, realm) is trusted


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("", "not a host name"),
        ("[bad", "not a host name"),
        ("10.0.0.5", f"an IP address, not a registry name; {_NOT_LISTED}"),
        ("quay.io:5000", f"a port other than 443; {_NOT_LISTED}"),
    ],
)
def test_vet_refuses_with_the_reason_the_status_shows(host: str, reason: str) -> None:
    egress = Egress(resolver=_resolver({"public.example.com": ["34.1.2.3", "10.9.9.9"]}, []))  # type: ignore[arg-type]
    with pytest.raises(Refused) as refused:
        egress.vet(host)
    assert refused.value.reason == reason and str(refused.value) == reason
    with pytest.raises(NoPublicAddress, match=r"^public\.example\.com$"):  # no reason: reported as not resolving
        egress.vet("public.example.com")


def test_vet_skips_what_is_no_address_and_drops_an_ipv6_zone() -> None:
    answers = {"onprem.corp": ["fe80::1%eth0"], "quay.io": ["not-an-address", "34.1.2.3"], "empty.example": ["junk"]}
    egress = Egress(["onprem.corp"], resolver=_resolver(answers, []))  # type: ignore[arg-type]
    assert egress.vet("OnPrem.Corp") == Endpoint("onprem.corp", 443, "fe80::1")
    assert egress.vet("quay.io") == Endpoint("quay.io", 443, "34.1.2.3")
    with pytest.raises(Unresolvable):
        egress.vet("empty.example")


def test_the_allowlist_is_kept_in_the_form_vet_compares() -> None:
    assert Egress([" Registry.Corp ", "[::1]:5000"]).allowed == frozenset({"registry.corp:443", "::1:5000"})
    assert Egress().allowed == frozenset()


@pytest.mark.parametrize(
    ("registry", "realm", "trusted"),
    [
        # Names without a registrable domain match only themselves, so these turn on the normalisation alone.
        ("LOCALHOST", "localhost", True),
        ("localhost", "LocalHost.", True),
        ("localhost.", "localhost", True),
        ("hostX.", "hostx", True),  # only the trailing dot goes, and before the case is folded
        ("hostx", "HOSTX.", True),
        # An IP address matches only itself, even where its last labels look like a name's registrable domain.
        ("1.2.3.4", "x.3.4", False),
        ("x.3.4", "1.2.3.4", False),
    ],
)
def test_the_realm_rule_normalises_both_names_and_keeps_addresses_apart(
    registry: str, realm: str, trusted: bool
) -> None:
    assert realm_trusted(registry, realm) is trusted


def test_the_refusals_of_malformed_hosts_say_which_rule() -> None:
    with pytest.raises(ValueError, match=r"^no host name$"):
        split_host(":5000")
    with pytest.raises(ValueError, match=r"^no host name$"):
        split_host(".:5000")  # nothing left once the trailing dot is dropped
    with pytest.raises(ValueError, match=r"^not a host name in IDNA$"):
        split_host("a..b")  # an empty label: no name the resolver or TLS would take
    with pytest.raises(ValueError, match=r"^not host\[:port\]: 'a/b'$"):
        allowed_entry("a/b")


def test_vet_resolves_the_name_and_port_it_will_dial_and_reads_an_address_up_to_the_first_percent() -> None:
    calls: list[tuple[str, int]] = []

    def resolve(hostname: str, port: int) -> list[str]:
        calls.append((hostname, port))
        return {"onprem.corp": ["fe80::1%eth0%x"], "empty.example": []}[hostname]

    egress = Egress(["OnPrem.Corp:5000", "empty.example"], resolver=resolve)
    assert egress.vet("onprem.corp:5000") == Endpoint("onprem.corp", 5000, "fe80::1")
    with pytest.raises(Unresolvable) as unresolvable:
        egress.vet("empty.example")
    assert unresolvable.value.args == ("empty.example",)
    assert calls == [("onprem.corp", 5000), ("empty.example", 443)]


def test_an_ipv6_literal_is_never_judged_as_an_idna_name_however_long_its_zone() -> None:
    """A key `[fe80::1%<64 characters>]` is an IP address (refused as one, the status says so), not a DNS label
    too long for IDNA: the reason a cluster owner reads names the rule that applies."""
    host = "[fe80::1%" + "z" * 64 + "]"
    with pytest.raises(Refused) as refused:
        Egress(resolver=lambda hostname, port: ["203.0.113.7"]).vet(host)
    assert refused.value.reason.startswith("an IP address, not a registry name")
