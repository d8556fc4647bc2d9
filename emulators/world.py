"""The emulated world's fixed names: the demo project and its number, the runtime identity, the management cluster.

One place for them, below both the stack (which wires the emulators with them) and the seeding (which writes
clusters and secrets naming them), so neither imports the other for a constant.
"""

PROJECT_ID = "hf-demo-project"
PROJECT_NUMBER = "123456789012"
RUNTIME_SA = f"pullsecret-runtime@{PROJECT_ID}.iam.gserviceaccount.com"
MANAGEMENT_CLUSTER = f"projects/{PROJECT_ID}/locations/us-central1/clusters/mgmt-1"
MANAGEMENT_DNS = "gke-mgmt-1.us-central1.gke.goog"
API_AUDIENCE = "hyperfleet-api"
# The regional cluster that runs HyperFleet (the gateway and the Pull Secret Service review tokens there), where the
# adapter mints its ServiceAccount token (HYPERFLEET_API_AUTH=service-account-token).
TOKEN_CLUSTER = f"projects/{PROJECT_ID}/locations/us-central1/clusters/hyperfleet-regional"
TOKEN_NAMESPACE = "hyperfleet"
TOKEN_ACCOUNT = "pullsecret-adapter"
