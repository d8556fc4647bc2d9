#!/usr/bin/env bash
# Adds (or removes) the source rotation notification topic in the `topics` of the platform pull secret,
# so Secret Manager publishes SECRET_VERSION_ADD there. The platform team owns that secret, so Terraform
# cannot set the field itself. Idempotent; verifies the result with `gcloud secrets describe`.
# Run by terraform (terraform_data.source_rotation_topic) or by hand with the same variables:
#   SECRET_PROJECT  project of the source secret (id)
#   SECRET          the source secret (id, or projects/P/secrets/S)
#   TOPIC           the notification topic, projects/P/topics/T
#   ACTION          add (default) or remove
# Needs gcloud authenticated as a principal with secretmanager.secrets.get/update on that secret; the
# Secret Manager service agent must already be a publisher on TOPIC (Secret Manager checks it on add).
set -euo pipefail

me="configure-source-rotation-topic"
for name in SECRET_PROJECT SECRET TOPIC; do
  if [[ -z "${!name:-}" ]]; then
    echo "$me: $name is not set" >&2
    exit 2
  fi
done
action="${ACTION:-add}"
if [[ "$action" != "add" && "$action" != "remove" ]]; then
  echo "$me: ACTION must be add or remove, got '$action'" >&2
  exit 2
fi
if [[ ! "$TOPIC" =~ ^projects/[^/]+/topics/[^/]+$ ]]; then
  echo "$me: TOPIC must be projects/PROJECT/topics/TOPIC, got '$TOPIC'" >&2
  exit 2
fi
command -v gcloud >/dev/null || { echo "$me: gcloud is required" >&2; exit 2; }

secret="${SECRET##*/}"

current_topics() {
  # One topic name per line (empty when the secret has none).
  gcloud secrets describe "$secret" --project="$SECRET_PROJECT" --format='value(topics[].name)' | tr ';,' '\n\n'
}

has_topic() {
  current_topics | grep -qxF "$TOPIC"
}

if [[ "$action" == "add" ]]; then
  if has_topic; then
    echo "$me: $TOPIC is already a topic of $secret"
    exit 0
  fi
  # Secret Manager refuses the topic until the service agent's publisher grant has propagated
  # (it was usually created seconds earlier in the same apply): retry for about two minutes.
  for attempt in 1 2 3 4 5 6 7 8; do
    if gcloud secrets update "$secret" --project="$SECRET_PROJECT" --add-topics="$TOPIC" --quiet >/dev/null; then
      break
    fi
    if [[ "$attempt" == 8 ]]; then
      echo "$me: could not add $TOPIC to $secret (is the Secret Manager service agent a publisher on it?)" >&2
      exit 1
    fi
    echo "$me: update failed (attempt $attempt), retrying in 15 s" >&2
    sleep 15
  done
  has_topic || { echo "$me: $TOPIC is not in the topics of $secret after the update" >&2; exit 1; }
  echo "$me: $TOPIC is now a topic of $secret"
else
  if ! has_topic; then
    echo "$me: $TOPIC is not a topic of $secret; nothing to remove"
    exit 0
  fi
  gcloud secrets update "$secret" --project="$SECRET_PROJECT" --remove-topics="$TOPIC" --quiet >/dev/null
  if has_topic; then
    echo "$me: $TOPIC is still a topic of $secret after the update" >&2
    exit 1
  fi
  echo "$me: removed $TOPIC from the topics of $secret"
fi
