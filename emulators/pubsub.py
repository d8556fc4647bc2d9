"""The Cloud SDK's own Pub/Sub emulator, run as a subprocess and driven over its REST API.

Not an imitation: the Java emulator shipped with gcloud (``platform/pubsub-emulator``) does the push
delivery, ack deadlines and redelivery itself.  It serves gRPC and REST (``/v1/projects/...``) on the same
port.  This wrapper starts it on a free port in its own process group, waits until it answers and offers the
few admin calls the tests need, plus `publish_sentinel_event`, which publishes exactly as HyperFleet's
broker (watermill) does: the whole CloudEvent JSON-encoded as the message data, and the single attribute
``_watermill_message_uuid`` = the event id.

Not modelled by the SDK emulator (so not by this wrapper): push authentication (OIDC tokens), exactly-once
delivery, message ordering guarantees, retry policy backoff timings of the real service (the emulator
redelivers a nacked push quickly), and quotas.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

import requests

from emulators.faults import FaultBook, ServiceControl
from emulators.routes import AdminCall, AdminRouter, Answer, Handler
from emulators.signals import signals_deferred

_SCRIPT = Path("platform/pubsub-emulator/bin/cloud-pubsub-emulator")
_FALLBACK_SDK_ROOT = Path("/usr/lib/google-cloud-sdk")
_START_TIMEOUT_S = 30.0


def _sdk_root() -> Path | None:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    try:
        out = subprocess.run(
            [gcloud, "info", "--format=value(installation.sdk_root)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return Path(out) if out else _FALLBACK_SDK_ROOT


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class PubSubError(RuntimeError):
    """The emulator answered an admin call with an error."""


def push_envelope(
    event: dict[str, Any],
    *,
    message_id: str | None = None,
    publish_time: str | None = None,
    subscription: str = "projects/hf-demo-project/subscriptions/pullsecret-push",
) -> dict[str, Any]:
    """The body Pub/Sub pushes for a message HyperFleet's broker published (see `publish_sentinel_event`)."""
    mid = message_id or str(uuid.uuid4().int)[:16]
    return {
        "message": {
            "data": base64.b64encode(json.dumps(event, separators=(",", ":")).encode("utf-8")).decode("ascii"),
            "attributes": {"_watermill_message_uuid": str(event["id"])},
            "messageId": mid,
            "publishTime": publish_time or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "subscription": subscription,
    }


class PubSubEmulator:
    """A running ``cloud-pubsub-emulator`` for one project."""

    service: ClassVar[str] = "pubsub"
    _script_cache: ClassVar[tuple[bool, str, Path | None] | None] = None

    def __init__(self, book: FaultBook, *, project: str = "hf-demo-project") -> None:
        self.control = ServiceControl(book, self.service)
        self.project = project
        self._proc: subprocess.Popen[bytes] | None = None
        self._host = "127.0.0.1"
        self._port = 0
        self._log_path: Path | None = None
        self.startup_seconds: float | None = None
        self._session = requests.Session()
        self._admin = AdminRouter(self._admin_table())

    # -- availability ------------------------------------------------------------------------
    @classmethod
    def _locate(cls) -> tuple[bool, str, Path | None]:
        if cls._script_cache is None:
            root = _sdk_root()
            if root is None:
                cls._script_cache = (False, "gcloud is not installed (no Cloud SDK)", None)
            elif not (root / _SCRIPT).is_file():
                cls._script_cache = (
                    False,
                    f"no Pub/Sub emulator in the Cloud SDK at {root} "
                    "(install the component: gcloud components install pubsub-emulator, "
                    "or apt-get install google-cloud-cli-pubsub-emulator)",
                    None,
                )
            elif shutil.which("java") is None:
                cls._script_cache = (False, "java is not installed (the Pub/Sub emulator needs a JRE)", None)
            else:
                cls._script_cache = (True, f"Pub/Sub emulator at {root / _SCRIPT}", root / _SCRIPT)
        return cls._script_cache

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the SDK's emulator can run here, and why not when it cannot."""
        ok, reason, _ = cls._locate()
        return ok, reason

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Launch the emulator (its own process group) and wait until its REST API answers."""
        ok, reason, script = self._locate()
        if not ok or script is None:
            raise RuntimeError(reason)
        if self._proc is not None:
            raise RuntimeError("pubsub emulator already started")
        self._host = host
        self._port = port or _free_port(host)
        # The name is ours before the file exists: an interrupt at any moment after this line leaves stop() a
        # path to remove (with mkstemp, one landing between its open and its return orphaned the file).
        self._log_path = Path(tempfile.gettempdir()) / f"pubsub-emulator-{uuid.uuid4().hex}.log"
        started = time.monotonic()
        try:  # a Ctrl-C while the JVM boots must not orphan it (its own session gets no SIGINT)
            with signals_deferred(), open(self._log_path, "xb") as log:  # none lands before _proc is recorded
                self._proc = subprocess.Popen(
                    [str(script), f"--host={self._host}", f"--port={self._port}"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,  # own process group: stop() kills the JVM with its wrapper script
                )
            self._wait_until_serving(self._proc, self._log_path, started)
        except BaseException:
            self.stop()
            raise

    def _wait_until_serving(self, proc: subprocess.Popen[bytes], log_path: Path, started: float) -> None:
        deadline = started + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log_tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"pubsub emulator exited during startup:\n{log_tail}")
            try:
                if self._session.get(f"{self.url}/", timeout=1).status_code == 200:
                    self.startup_seconds = time.monotonic() - started
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"pubsub emulator did not answer within {_START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        """Kill the emulator's process group (SIGTERM, then SIGKILL after 5 s)."""
        proc, self._proc = self._proc, None
        if proc is None:
            self._drop_log()
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        _wait_group_gone(proc.pid)
        self._drop_log()

    def _drop_log(self) -> None:
        """A stopped emulator leaves nothing behind (a failed start quotes the log's tail in its error)."""
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    @property
    def address(self) -> str:
        """host:port, the value of PUBSUB_EMULATOR_HOST."""
        if self._proc is None:
            raise RuntimeError("pubsub emulator not started")
        return f"{self._host}:{self._port}"

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    # -- REST helpers ------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None, *, allow: tuple[int, ...] = ()) -> Any:
        response = self._session.request(method, f"{self.url}/v1/{path}", json=body, timeout=10)
        if response.status_code >= 400 and response.status_code not in allow:
            raise PubSubError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content else {}

    def topic_path(self, topic: str) -> str:
        return topic if topic.startswith("projects/") else f"projects/{self.project}/topics/{topic}"

    def subscription_path(self, sub: str) -> str:
        return sub if sub.startswith("projects/") else f"projects/{self.project}/subscriptions/{sub}"

    def create_topic(self, name: str) -> dict[str, Any]:
        """Create a topic (names need 3-255 chars, starting with a letter)."""
        result: dict[str, Any] = self._call("PUT", self.topic_path(name), {})
        return result

    def _create_subscription(
        self,
        topic: str,
        sub: str,
        *,
        push_endpoint: str | None,
        ack_deadline: int,
        dead_letter_topic: str | None,
        max_delivery_attempts: int | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"topic": self.topic_path(topic), "ackDeadlineSeconds": ack_deadline}
        if push_endpoint is not None:
            body["pushConfig"] = {"pushEndpoint": push_endpoint}
        if dead_letter_topic is not None:
            body["deadLetterPolicy"] = {
                "deadLetterTopic": self.topic_path(dead_letter_topic),
                "maxDeliveryAttempts": max_delivery_attempts or 5,
            }
        result: dict[str, Any] = self._call("PUT", self.subscription_path(sub), body)
        return result

    def create_push_subscription(
        self,
        topic: str,
        sub: str,
        push_endpoint: str,
        *,
        ack_deadline: int = 10,
        dead_letter_topic: str | None = None,
        max_delivery_attempts: int | None = None,
    ) -> dict[str, Any]:
        """A push subscription (plain Pub/Sub push envelope, no auth) to ``push_endpoint``."""
        return self._create_subscription(
            topic,
            sub,
            push_endpoint=push_endpoint,
            ack_deadline=ack_deadline,
            dead_letter_topic=dead_letter_topic,
            max_delivery_attempts=max_delivery_attempts,
        )

    def create_pull_subscription(
        self,
        topic: str,
        sub: str,
        *,
        ack_deadline: int = 10,
        dead_letter_topic: str | None = None,
        max_delivery_attempts: int | None = None,
    ) -> dict[str, Any]:
        return self._create_subscription(
            topic,
            sub,
            push_endpoint=None,
            ack_deadline=ack_deadline,
            dead_letter_topic=dead_letter_topic,
            max_delivery_attempts=max_delivery_attempts,
        )

    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = None) -> str:
        """Publish one message; returns its message id."""
        message: dict[str, Any] = {"data": base64.b64encode(data).decode("ascii")}
        if attributes:
            message["attributes"] = dict(attributes)
        result = self._call("POST", f"{self.topic_path(topic)}:publish", {"messages": [message]})
        return str(result["messageIds"][0])

    def publish_sentinel_event(self, topic: str, event: dict[str, Any]) -> str:
        """Publish a CloudEvent as HyperFleet's broker does (structured JSON data, watermill uuid attr)."""
        data = json.dumps(event, separators=(",", ":")).encode("utf-8")
        return self.publish(topic, data, {"_watermill_message_uuid": str(event["id"])})

    def pull(self, sub: str, max_messages: int = 10, *, ack: bool = True) -> list[dict[str, Any]]:
        """Pull (and by default acknowledge) up to ``max_messages``; returns receivedMessages."""
        result = self._call(
            "POST",
            f"{self.subscription_path(sub)}:pull",
            {"maxMessages": max_messages, "returnImmediately": True},
        )
        received: list[dict[str, Any]] = result.get("receivedMessages", [])
        if ack and received:
            self._call(
                "POST",
                f"{self.subscription_path(sub)}:acknowledge",
                {"ackIds": [m["ackId"] for m in received]},
            )
        return received

    # -- stack interface ---------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "running": self._proc is not None,
            "project": self.project,
            "address": self.address if self._proc is not None else None,
            "startup_seconds": self.startup_seconds,
            "log": str(self._log_path) if self._log_path else None,
        }
        if self._proc is not None:
            state["topics"] = [
                t["name"] for t in self._call("GET", f"projects/{self.project}/topics").get("topics", [])
            ]
            subs = self._call("GET", f"projects/{self.project}/subscriptions").get("subscriptions", [])
            state["subscriptions"] = subs
        return state

    def reset(self) -> None:
        """Delete every subscription and topic of the project."""
        if self._proc is None:
            return
        for sub in self._call("GET", f"projects/{self.project}/subscriptions").get("subscriptions", []):
            self._call("DELETE", sub["name"], allow=(404,))
        for topic in self._call("GET", f"projects/{self.project}/topics").get("topics", []):
            self._call("DELETE", topic["name"], allow=(404,))

    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Admin routes relative to /pubsub: state, reset, topics, subscriptions, publish, pull."""
        try:
            answer = self._admin.dispatch(method, path, body if isinstance(body, dict) else {})
        except (KeyError, ValueError, TypeError) as exc:
            return 400, {"error": f"bad admin body: {exc}"}
        except (PubSubError, RuntimeError, requests.RequestException) as exc:
            return 502, {"error": str(exc)}
        if answer is None:
            return 404, {"error": f"no admin route {method} {'/' + path.strip('/')}"}
        return answer

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/state"): lambda _: (200, self.state()),
            ("POST", "/reset"): self._admin_reset,
            ("PUT", "/topics/{topic}"): lambda call: (200, self.create_topic(call.params["topic"])),
            ("PUT", "/subscriptions/{subscription}"): self._admin_subscription,
            ("POST", "/topics/{topic}/sentinel_event"): lambda call: (
                200,
                {"message_id": self.publish_sentinel_event(call.params["topic"], call.body)},
            ),
            ("POST", "/topics/{topic}/publish"): self._admin_publish,
            ("POST", "/subscriptions/{subscription}/pull"): lambda call: (
                200,
                {"received": self.pull(call.params["subscription"], int(call.body.get("max", 10)))},
            ),
        }

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, {"reset": True}

    def _admin_subscription(self, call: AdminCall) -> Answer:
        payload, name = call.body, call.params["subscription"]
        topic = str(payload["topic"])
        if payload.get("push_endpoint"):
            return 200, self.create_push_subscription(
                topic,
                name,
                str(payload["push_endpoint"]),
                ack_deadline=int(payload.get("ack_deadline", 10)),
                dead_letter_topic=payload.get("dead_letter_topic"),
                max_delivery_attempts=payload.get("max_delivery_attempts"),
            )
        return 200, self.create_pull_subscription(topic, name, ack_deadline=int(payload.get("ack_deadline", 10)))

    def _admin_publish(self, call: AdminCall) -> Answer:
        data = base64.b64decode(str(call.body.get("data_base64", "")))
        return 200, {"message_id": self.publish(call.params["topic"], data, call.body.get("attributes"))}


def _wait_group_gone(pgid: int, timeout: float = 5.0) -> None:
    """Return once no process of the group is left (SIGKILL after `timeout`, give up after twice that).

    The group's leader is gcloud's wrapper script; the JVM it starts is another member that may still be exiting
    after the wrapper was reaped, so waiting for the leader alone can return with the emulator still running.
    """
    started = time.monotonic()
    killed = False
    while time.monotonic() - started < 2 * timeout:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        if not killed and time.monotonic() - started > timeout:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            killed = True
        time.sleep(0.05)
