"""Secret Manager emulator: google.cloud.secretmanager.v1.SecretManagerService over real gRPC.

Built on the client library's own message classes, so the official ``SecretManagerServiceClient``
talks to it unchanged.  It models the rules the adapter meets in production: project numbers in
answers, ``latest`` = newest version whatever its state, version states and etags, CRC32C checks,
label/annotation/id/payload validation, immutable replication, delayed destruction, the per-project
write quota (RESOURCE_EXHAUSTED), bearer-token authentication and IAM (`emulators.iam`).

Each RPC needs one permission, checked on one resource before the service says anything about
existence (https://cloud.google.com/secret-manager/docs/access-control, "Secret Manager permissions";
https://cloud.google.com/iam/docs/roles-permissions/secretmanager):

    CreateSecret          secretmanager.secrets.create    the project (projects/NUMBER)
    ListSecrets           secretmanager.secrets.list      the project
    GetSecret             secretmanager.secrets.get       the secret (projects/NUMBER/secrets/ID)
    UpdateSecret          secretmanager.secrets.update    the secret
    DeleteSecret          secretmanager.secrets.delete    the secret
    AddSecretVersion      secretmanager.versions.add      the secret
    ListSecretVersions    secretmanager.versions.list     the secret
    GetSecretVersion      secretmanager.versions.get      the version (.../versions/N|latest)
    AccessSecretVersion   secretmanager.versions.access   the version
    DisableSecretVersion  secretmanager.versions.disable  the version
    EnableSecretVersion   secretmanager.versions.enable   the version
    DestroySecretVersion  secretmanager.versions.destroy  the version
    TestIamPermissions    none                            (answers which of the asked permissions the
                                                           caller holds on the secret; see policies.py)
    GetIamPolicy          secretmanager.secrets.getIamPolicy  the secret (etags and versions: secret_iam_policy.py)
    SetIamPolicy          secretmanager.secrets.setIamPolicy  the secret

Admin routes (paths relative to ``/secretmanager``; bodies and answers are JSON):

    GET  /secrets                          every secret of every project (payloads base64)
    PUT  /projects/{p}/secrets/{id}        seed/replace a secret: {"labels": {}, "annotations": {},
                                           "versions": ["<base64>", ...], "locations": ["us-east1"],
                                           "version_destroy_ttl_s": 86400}
    GET  /projects/{p}/secrets/{id}        one secret with its versions and IAM policy (404 when absent)
    PUT  /projects/{p}/secrets/{id}/iamPolicy  another writer sets the secret's policy: {"bindings": [{"role",
                                           "members": [...]}]} (the etag changes)
    POST /projects/{p}/secrets/{id}/iamPolicyRace  the same body, applied by another writer right after the
                                           next GetIamPolicy of that secret is answered (one shot): the
                                           reader's SetIamPolicy then carries a stale etag
    POST /projects                         {"project_id": "my-proj", "number": "123456789012"}
    POST /iam                              {"project": p, "identity": "sa@p.iam.gserviceaccount.com"} (owner on p),
                                           or {"identity", "resource": "projects/p/secrets/s", "role",
                                           "permissions": [...], "condition": "resource.name..."}
    GET  /quota                            quota settings and rejected-write count
    PUT  /quota                            {"writes_per_minute": N | null, "window_s": 60}
    POST /reset                            drop all secrets, IAM grants and quota usage (projects stay)

The parts: ``emulator`` (the gRPC servicer's method table, the in-process API and the admin routes),
``access`` (names, IAM and the write quota before anything else), ``secrets``, ``versions`` and ``policies``
(the RPCs), ``store`` (state and etags), ``model`` (the stored shapes and version states), ``validation``,
``listing`` (paging and filters), ``messages`` (answers and their JSON form), ``quota``, ``checksums``.
"""

from emulators.secretmanager.checksums import crc32c, crc32c_pure
from emulators.secretmanager.emulator import SecretManagerEmulator

__all__ = ["SecretManagerEmulator", "crc32c", "crc32c_pure"]
