"""External-secrets mode against the emulator stack: the Workload Identity principal template Terraform sets for the
namespaces' External Secrets Operator readers."""

from __future__ import annotations

from emulators.world import PROJECT_ID, PROJECT_NUMBER

TEMPLATE = (
    f"principal://iam.googleapis.com/projects/{PROJECT_NUMBER}/locations/global/workloadIdentityPools/"
    f"{PROJECT_ID}.svc.id.goog/subject/ns/{{namespace}}/sa/hyperfleet-pull-secret-reader"
)
