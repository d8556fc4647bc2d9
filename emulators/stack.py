"""The whole emulator stack: every service the function calls, wired together, plus one admin API.

    stack = Stack(); stack.start(); stack.env()  # the environment a function process needs
    ...; stack.stop()

Wiring: the metadata server issues the runtime identity's access tokens; Secret Manager, GKE and the
Kubernetes API accept exactly those (expired tokens are refused). Secret Manager and GKE grant that
identity exactly what terraform/ grants its runtime service account (`apply_terraform_iam`), so a call
the Terraform configuration does not allow is PERMISSION_DENIED here as on GCP. GKE's default management cluster
points at the Kubernetes emulator's endpoint and CA. The HyperFleet API requires the bearer token it
writes into `token_file`, or an ID token the metadata server signed for the runtime identity (audience
`hyperfleet-api`).

Start and stop are exception-safe: an exception (a KeyboardInterrupt from Ctrl-C included) anywhere in
`start()` stops what had started and removes `workdir` (it holds the HyperFleet token and the registry CA)
before it propagates; `stop()` may be called on a stack that started partly or not at all.
`emulators.signals.interruptible()` turns SIGTERM into that same KeyboardInterrupt, for the commands people
stop (`make up`, `make demo`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
from typing import Any

from emulators.admin import AdminServer
from emulators.faults import FaultBook
from emulators.gke import GkeEmulator
from emulators.hyperfleet import HyperFleetEmulator
from emulators.hyperfleet.gateway import GatewayConfig
from emulators.iam_terraform import Grant, service_account_grants
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.delegated import TokenReviewer
from emulators.kubernetes.manifests import render as render_manifests
from emulators.kubernetes.manifests import render_token_cluster
from emulators.metadata import MetadataEmulator
from emulators.pubsub import PubSubEmulator
from emulators.pullsecretservice import PullSecretServiceEmulator
from emulators.registry import RegistryEmulator
from emulators.resourcemanager import ResourceManagerEmulator
from emulators.secretmanager import SecretManagerEmulator
from emulators.signals import signals_ignored
from emulators.world import (
    API_AUDIENCE,
    MANAGEMENT_CLUSTER,
    MANAGEMENT_DNS,
    PROJECT_ID,
    PROJECT_NUMBER,
    RUNTIME_SA,
    TOKEN_ACCOUNT,
    TOKEN_CLUSTER,
    TOKEN_NAMESPACE,
)

# What terraform/ would be applied with for the function environment the tests use (tests/conftest.py
# function_env): this project holds the per-cluster secrets and the platform pull secret, and the
# management cluster; every other variable keeps its default (DELETION_POLICY=DELETE included).
TERRAFORM_VARIABLES: dict[str, Any] = {
    "project_id": PROJECT_ID,
    "region": "us-central1",
    "secret_project_ids": [PROJECT_ID],
    "pull_secret_source_secret": f"projects/{PROJECT_ID}/secrets/platform-pull-secret",
    "hyperfleet_api_token_secret": f"projects/{PROJECT_ID}/secrets/hyperfleet-api-token",
    "hyperfleet_api_url": "http://127.0.0.1:8000",
    "management_cluster": MANAGEMENT_CLUSTER,
}


class Stack:
    """All emulators on free loopback ports, sharing one FaultBook (faults and call counters)."""

    def __init__(
        self,
        *,
        pubsub: bool = False,
        status_method: str = "PUT",
        token_lifetime_s: int = 3600,
        grant_all_namespaces: bool = True,
        validate_contract: bool = True,
        terraform_iam: bool = True,
        gateway: bool = False,
    ) -> None:
        self.book = FaultBook()
        self.workdir = tempfile.mkdtemp(prefix="hf-emulators-")
        try:
            self._build(status_method, token_lifetime_s, validate_contract)
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        self._want_pubsub = pubsub
        self._grant_all = grant_all_namespaces
        self._terraform_iam = terraform_iam
        self._gateway = gateway  # hyperfleet-gateway in front of the API after every reset (the playground's mode)
        self._terraform_variables: dict[str, Any] = dict(TERRAFORM_VARIABLES)
        self.grants: list[Grant] = []
        self._grant_cache: dict[str, list[Grant]] = {}
        self.admin = AdminServer(self)

    def _build(self, status_method: str, token_lifetime_s: int, validate_contract: bool) -> None:
        self.token_file = os.path.join(self.workdir, "hyperfleet-token")
        self.metadata = MetadataEmulator(
            self.book,
            project_id=PROJECT_ID,
            project_number=PROJECT_NUMBER,
            service_account=RUNTIME_SA,
            token_lifetime_s=token_lifetime_s,
        )
        authenticate = self.metadata.identity_for_token
        self.secretmanager = SecretManagerEmulator(self.book, authenticate=authenticate)
        self.gke = GkeEmulator(self.book, authenticate=authenticate)
        self.kubernetes = KubernetesEmulator(self.book, authenticate=authenticate)
        # The regional cluster that runs HyperFleet: its TokenRequest mints the adapter's ServiceAccount tokens, its
        # TokenReview is how the gateway and the Pull Secret Service check them.
        self.regional = KubernetesEmulator(self.book, authenticate=authenticate)
        # Contract validation (openapi-core) costs the emulator tens of CPU ms per call: the tests keep it on,
        # the benchmark turns it off so that it measures the function, not the emulator.
        self.hyperfleet = HyperFleetEmulator(
            self.book, status_method=status_method, token_file=self.token_file, validate=validate_contract
        )
        # Beside the token file, the API admits the runtime identity's Google ID tokens (HYPERFLEET_API_AUTH=
        # google-id-token), as docs/contract.md "Authentication" configures it: audience hyperfleet-api, email.
        self.hyperfleet.trust_id_tokens(
            self.metadata.id_tokens.jwks, audience=API_AUDIENCE, identity_pattern=re.escape(RUNTIME_SA)
        )
        self.registry = RegistryEmulator(self.book)
        # The Pull Secret Service (PULL_SECRET_SERVICE_URL): its credentials are accounts of the registry emulator
        # (quay at the `basic` host, rhit at the `token` host, whose sso checks them), so a credential it revokes
        # is refused there. It admits the token in `service_token_file` (token-file) and the runtime identity's ID
        # tokens for its own URL (google-id-token, the function's default audience), and any cluster id the tests
        # use (the DDR's cls-[a-z0-9]{12,16} is narrower than this project's ids).
        self.service_token_file = os.path.join(self.workdir, "pull-secret-service-token")
        service_token = "pss-" + secrets.token_urlsafe(24)
        with open(self.service_token_file, "w", encoding="utf-8") as fh:
            fh.write(service_token)
        self.pullsecretservice = PullSecretServiceEmulator(
            self.book,
            registry_hosts=lambda: {"quay": self.registry.hosts()["basic"], "rhit": self.registry.hosts()["token"]},
            registry=self.registry,
            bearer_tokens={service_token: "system:serviceaccount:hyperfleet:pullsecret-adapter"},
            cluster_id_pattern=r"^[a-z0-9][a-z0-9-]{0,62}$",
        )
        services = {"secretmanager": self.secretmanager, "container": self.gke}
        self.resourcemanager = ResourceManagerEmulator(self.book, services, authenticate=authenticate)
        self.registry_ca_file = os.path.join(self.workdir, "registry-ca.pem")
        self.pubsub: PubSubEmulator | None = None

    @property
    def emulators(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "metadata": self.metadata,
            "secretmanager": self.secretmanager,
            "gke": self.gke,
            "kubernetes": self.kubernetes,
            "regional": self.regional,
            "hyperfleet": self.hyperfleet,
            "registry": self.registry,
            "pullsecretservice": self.pullsecretservice,
        }
        if self.pubsub is not None:
            found["pubsub"] = self.pubsub
        return found

    def start(self) -> Stack:
        """Start every emulator; on any exception (KeyboardInterrupt included) stop them all, then re-raise."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.metadata.start()
        self.secretmanager.add_project(PROJECT_ID, PROJECT_NUMBER)
        self.gke.add_project(PROJECT_ID, PROJECT_NUMBER)  # one project, one number, whichever service asks
        self.secretmanager.start()
        self.gke.start()
        self.kubernetes.start()
        self.regional.start()
        self.hyperfleet.start()
        self.registry.start()
        self.pullsecretservice.start()
        self.pullsecretservice.trust_id_tokens(
            self.metadata.id_tokens.jwks, audience=self.pullsecretservice.url, emails=[RUNTIME_SA]
        )
        self.resourcemanager.start()
        with open(self.registry_ca_file, "wb") as fh:
            fh.write(self.registry.ca_pem)
        if self._want_pubsub:
            available, _reason = PubSubEmulator.available()
            if available:
                self.pubsub = PubSubEmulator(self.book, project=PROJECT_ID)
                self.pubsub.start()
        self.seed_defaults()
        self.admin.start()

    def seed_defaults(self) -> None:
        """The default management cluster, and on it the runtime identity's RBAC and admission policy."""
        self.gke.add_cluster(
            MANAGEMENT_CLUSTER,
            endpoint=self.kubernetes.address,
            ca_pem=self.kubernetes.ca_pem,
            dns_endpoint=MANAGEMENT_DNS,
        )
        if self._grant_all:
            # The project's RBAC and admission policy, rendered as Terraform renders them for this identity.
            self.kubernetes.apply_manifests(render_manifests(RUNTIME_SA))
        if self._terraform_iam:
            self.apply_terraform_iam()
        self._seed_token_cluster()

    def _seed_token_cluster(self) -> None:
        """The regional cluster in GKE, the adapter's ServiceAccount and its Role as Terraform renders them, the
        reviewers' accounts; the Pull Secret Service reviews ServiceAccount tokens for its own URL (harmless to the
        other modes: an opaque or Google token is never sent to TokenReview); the gateway when the stack has it."""
        self.gke.add_cluster(TOKEN_CLUSTER, endpoint=self.regional.address, ca_pem=self.regional.ca_pem)
        self.regional.add_namespace(TOKEN_NAMESPACE)
        self.regional.apply_manifests(render_token_cluster(RUNTIME_SA, TOKEN_NAMESPACE, TOKEN_ACCOUNT))
        self.pullsecretservice.review_service_account_tokens(
            TokenReviewer(self.regional.reviewer(TOKEN_NAMESPACE, "pull-secret-service")),
            audience=self.pullsecretservice.url,
            accounts=[f"system:serviceaccount:{TOKEN_NAMESPACE}:{TOKEN_ACCOUNT}"],
        )
        if self._gateway:
            self.hyperfleet.set_gateway(self.gateway_config())

    def gateway_config(self, **changes: Any) -> GatewayConfig:
        """hyperfleet-gateway as the HyperFleet deployment configures it for this adapter (EDGE; `changes` apply):
        TokenReview at the regional cluster, audience hyperfleet-api, the adapter's account on the allow-list."""
        values: dict[str, Any] = {
            "namespace": TOKEN_NAMESPACE,
            "allowed_service_accounts": (TOKEN_ACCOUNT,),
            "audience": API_AUDIENCE,
            "mode": "EDGE",
            **changes,
        }
        return GatewayConfig(TokenReviewer(self.regional.reviewer(TOKEN_NAMESPACE, "hyperfleet-gateway")), **values)

    def apply_terraform_iam(self, **variables: Any) -> list[Grant]:
        """Grant the runtime identity what terraform/ grants google_service_account.runtime, evaluated for
        TERRAFORM_VARIABLES updated with `variables` (kept until the next call); returns the grants.

        Terraform's runtime account has its own e-mail; its grants are bound to this stack's RUNTIME_SA,
        the identity the metadata server issues tokens for.
        """
        self._terraform_variables = {**TERRAFORM_VARIABLES, **variables}
        key = json.dumps([self._terraform_variables, self.secretmanager.projects.to_json()], sort_keys=True)
        grants = self._grant_cache.get(key)
        if grants is None:  # evaluated once per configuration: the stack resets before every test
            _email, grants = service_account_grants(
                self._terraform_variables, project_number=self.secretmanager.projects.number
            )
            self._grant_cache[key] = grants
        for emulator in (self.secretmanager, self.gke):
            emulator.iam.revoke(RUNTIME_SA)
            for grant in grants:
                emulator.bind(
                    RUNTIME_SA,
                    grant.role,
                    grant.resource,
                    permissions=grant.permissions,
                    condition=grant.condition,
                    title=grant.condition_title,
                )
        self.grants = grants
        return grants

    def reset(self) -> None:
        """Drop all state, faults and counters; re-seed the defaults."""
        self.book.clear()
        self.book.reset_counters()
        for emulator in self.emulators.values():
            if emulator is not self.pubsub:
                emulator.reset()
        self.secretmanager.quota.configure(None)
        self.seed_defaults()

    def stop(self) -> None:
        """Stop whatever runs (each emulator's stop is a no-op when it never started) and remove `workdir`.

        SIGINT and SIGTERM are ignored meanwhile (in the main thread): a second Ctrl-C must not cut the
        cleanup short and leave the Java Pub/Sub emulator or the token behind. It takes a few seconds at most.
        """
        with signals_ignored():
            try:
                self.admin.stop()
                for emulator in reversed(list(self.emulators.values())):
                    emulator.stop()
                self.resourcemanager.stop()
            finally:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def env(self) -> dict[str, str]:
        """Exactly the environment a function process needs to use this stack."""
        env = {
            "SECRET_MANAGER_EMULATOR_HOST": self.secretmanager.address,
            "GKE_EMULATOR_HOST": self.gke.rest_address,  # GetCluster's REST form (the gRPC one: endpoints "gke")
            "RESOURCE_MANAGER_EMULATOR_HOST": self.resourcemanager.address,
            "GCE_METADATA_HOST": self.metadata.address,
            "GCE_METADATA_IP": self.metadata.address,
            "HYPERFLEET_API_URL": self.hyperfleet.url,
            # The registry emulator's CA: pull-secret keys naming its hosts (`registry` below) verify over HTTPS.
            "REGISTRY_CA_BUNDLE": self.registry_ca_file,
            # The emulator's hosts are loopback addresses, which the function contacts only when listed here
            # (production leaves it empty); the emulator's `internal` host stays off the list.
            "REGISTRY_ALLOWED_HOSTS": ",".join(self.registry.allowed_hosts()),
        }
        if not self._gateway:  # behind the gateway the token file is refused: the function mints its own token
            env["HYPERFLEET_API_TOKEN_FILE"] = self.token_file
        if self.pubsub is not None:
            env["PUBSUB_EMULATOR_HOST"] = self.pubsub.address
        return env

    def endpoints(self) -> dict[str, Any]:
        return {
            "metadata": self.metadata.url,
            "secretmanager": self.secretmanager.address,
            "gke": self.gke.address,
            "gke_rest": self.gke.rest_address,
            "kubernetes": f"https://{self.kubernetes.address}",
            "hyperfleet": self.hyperfleet.url,
            "registry": self.registry.hosts(),
            "pullsecretservice": self.pullsecretservice.url,
            "pullsecretservice_token_file": self.service_token_file,
            "pubsub": self.pubsub.address if self.pubsub is not None else None,
            "admin": self.admin.url,
            "management_cluster": MANAGEMENT_CLUSTER,
            "token_cluster": TOKEN_CLUSTER,
            "regional_kubernetes": f"https://{self.regional.address}",
            "project_id": PROJECT_ID,
            "runtime_service_account": RUNTIME_SA,
            "iam": "terraform" if self._terraform_iam else "open",
            "env": self.env(),
        }
