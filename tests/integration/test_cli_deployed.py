"""`reconcile --deployed FUNCTION` with the real gcloud: it reads the deployed function's environment with `gcloud
functions describe` (served offline by a local stand-in of the Cloud Functions v2 API, reached through gcloud's own
endpoint override) and refuses to write when the configuration differs in what changes the result."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pullsecret.operator.settings import RESULT_VARIABLES
from tests.integration.cli_process import cli
from tests.support import Admin, seed_ready_cluster

CID = "cls-deploy01"
FUNCTION = "projects/hf-demo-project/locations/us-central1/functions/pullsecret"
DESCRIBED = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/gcloud/functions-describe-gen2.json").read_text()
)

pytestmark = pytest.mark.skipif(shutil.which("gcloud") is None, reason="the Cloud SDK is not installed")


class FunctionsApi:
    """GET /v2/projects/P/locations/L/functions/F answers `described` (what gcloud asks, checked with SDK 528)."""

    def __init__(self) -> None:
        self.described: dict[str, Any] = {}
        self.paths: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                api.paths.append(self.path)
                body = json.dumps(api.described).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"


@pytest.fixture
def functions_api() -> Iterator[FunctionsApi]:
    api = FunctionsApi()
    yield api
    api.server.shutdown()


def test_a_configuration_that_differs_from_the_deployed_functions_is_refused_naming_the_difference(
    function_env: dict[str, str], admin: Admin, world: Any, functions_api: FunctionsApi
) -> None:
    seed_ready_cluster(admin, CID)
    env = {
        **function_env,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDFUNCTIONS": functions_api.url,
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
    }
    # The recorded production function: another API, another source; and this shell enforces verification.
    functions_api.described = DESCRIBED
    refused = cli("reconcile", CID, "--deployed", FUNCTION, env={**env, "REGISTRY_VERIFICATION": "enforce"})
    assert refused.returncode == 5, refused.stdout + refused.stderr
    assert refused.stderr.startswith(
        f"refusing to write: this shell's configuration differs from the deployed function {FUNCTION}"
    )
    assert "REGISTRY_VERIFICATION: here 'enforce', deployed 'report'" in refused.stderr
    assert "HYPERFLEET_API_URL: here 'http://127.0.0.1:" in refused.stderr
    assert "LOG_LEVEL" not in refused.stderr and "RETRY_DEADLINE" not in refused.stderr  # how, not what
    assert functions_api.paths == ["/v2/projects/hf-demo-project/locations/us-central1/functions/pullsecret?alt=json"]
    assert world.secretmanager.secret("hf-demo-project", f"hyperfleet-{CID}-pull-secret") is None
    assert [r for r in admin.reports() if r.get("cluster_id") == CID] == []
    # A dry run compares nothing: it writes nothing.
    assert cli("reconcile", CID, "--dry-run", "--deployed", FUNCTION, env=env).returncode == 0

    # The deployed function as this shell is configured (its how may differ): the write goes ahead.
    same = json.loads(json.dumps(DESCRIBED))
    same["serviceConfig"]["environmentVariables"] = {
        **{k: v for k, v in function_env.items() if k in RESULT_VARIABLES},
        "LOG_LEVEL": "WARNING",
        "HYPERFLEET_API_TOKEN_FILE": "/secrets/hyperfleet/token",
    }
    functions_api.described = same
    applied = cli("reconcile", CID, "--deployed", FUNCTION, env=env)
    assert applied.returncode == 0 and applied.stdout.startswith(f"cluster {CID}: applied"), applied.stderr
