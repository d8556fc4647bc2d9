"""A local Kubernetes API server (core/v1 Namespaces and Secrets) spoken to over real HTTPS.

The official ``kubernetes`` client talks to it exactly as it talks to a GKE control plane:
bearer-token authentication, RBAC over Role/ClusterRole objects and their bindings,
ValidatingAdmissionPolicies evaluated with CEL, Status error bodies with the real reasons and
messages, optimistic concurrency on ``resourceVersion``, the three patch flavours and server-side
apply with field ownership in ``metadata.managedFields``.  Where a real kube-apiserver rejects a
request, this one rejects it too, with the same code, reason and message shape.

Recipe::

    emu = KubernetesEmulator(book, authenticate=lambda token: "sa@p.iam.gserviceaccount.com")
    emu.start()                       # HTTPS on 127.0.0.1:<free port>, fresh CA
    emu.add_namespace("clusters-abc")
    emu.grant("sa@p.iam.gserviceaccount.com", namespace="clusters-abc", verbs=("get", "patch"))
    # clients use https://{emu.address} and trust emu.ca_pem

Admin routes (``handle_admin``; the stack mounts them under ``/kubernetes``):

    GET    /state                              namespaces, secrets (full objects), rbac, resourceVersion
    POST   /reset                              drop namespaces, secrets, RBAC rules and static tokens
    PUT    /namespaces/{ns}                    create a namespace (body optional: {"labels": {...}})
    DELETE /namespaces/{ns}                    delete a namespace and everything in it
    PUT    /manifests                          {"documents": [...]}: Roles, ClusterRoles, bindings,
                                                ValidatingAdmissionPolicies and their bindings
    PUT    /rbac                               {"identity", "namespace": "*"|ns, "verbs": [...],
                                                "resources": [...] (optional, default all)}: shorthand
                                                for a (Cluster)Role and its binding to that user
    DELETE /rbac                               {"identity"}: drop every binding naming that user
    PUT    /tokens                             {"token", "identity"}: a static bearer token
    PUT    /namespaces/{ns}/serviceaccounts/{n}  create a ServiceAccount (TokenRequest needs it; tokens.py)
    DELETE /namespaces/{ns}/serviceaccounts/{n}  delete it (its tokens stop passing TokenReview)
    POST   /clock                              {"advance_s": N}: the token clock moves forward (expiry)
    GET    /namespaces/{ns}/secrets/{name}     the stored Secret, bypassing auth
    PUT    /namespaces/{ns}/secrets/{name}     seed a raw Secret (managedFields kept as given; with
                                                body {"object": {...}, "manager": "m"} ownership of
                                                every field is recorded for manager m, operation Update)
    DELETE /namespaces/{ns}/secrets/{name}     someone else deletes the Secret

Fault injection: every request first calls ``control.enter("<verb>.<resource>")`` (``get.secrets``,
``list.secrets``, ``create.secrets``, ``update.secrets``, ``patch.secrets``, ``delete.secrets``,
``deletecollection.secrets``, ``get.namespaces``, ``list.namespaces``, ``get.discovery``,
``get.version``, ``get.validatingadmissionpolicies``; a dry run adds ``.dryrun``).  Codes: an HTTP
status (``"429"``, ``"500"``, ``"503"``, ``"504"``, any other 4xx/5xx) answers with a Status body;
``"429-text"`` answers like API Priority and Fairness does (plain text plus Retry-After); ``"reset"``
drops the connection; ``"timeout"`` hangs for 30 s or until the client goes away.

ServiceAccounts, TokenRequest (``serviceaccounts/{name}/token``) and TokenReview are served as tokens.py says;
``reviewer(ns, name)`` gives a delegating server (the HyperFleet gateway, the Pull Secret Service) its TokenReview
endpoint and credentials, which ``delegated.TokenReviewer`` uses over HTTPS.

``kubectl`` works against it too: discovery (``/api``, ``/apis``), SelfSubjectAccessReview (``kubectl auth
can-i``), SelfSubjectReview (``kubectl auth whoami``) and server-side apply (``kubectl apply --server-side``).

The parts: ``http`` (HTTPS serving), ``store`` (storage and resourceVersions), ``fields`` (patch and
apply semantics, field ownership), ``validation``, ``access`` (authentication and authorization),
``admission`` (ValidatingAdmissionPolicy), ``manifests`` (the project's terraform/kubernetes templates,
rendered as Terraform renders them), ``reads`` and ``verbs`` (the API verbs) and ``emulator`` (routing and
the admin API).
"""

from emulators.kubernetes.emulator import KubernetesEmulator

__all__ = ["KubernetesEmulator"]
