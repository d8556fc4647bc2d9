#!/usr/bin/env bash
# Puts a dead-letter policy on the Pub/Sub subscription Eventarc created for the function's trigger.
# Idempotent; run by terraform (terraform_data.trigger_dead_letter) or by hand with the same variables:
#   PROJECT_ID REGION TRIGGER (name or projects/P/locations/L/triggers/T) DEAD_LETTER_TOPIC (projects/P/topics/T)
#   MAX_DELIVERY_ATTEMPTS PUBSUB_SERVICE_AGENT (serviceAccount:service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com)
set -euo pipefail

for name in PROJECT_ID REGION TRIGGER DEAD_LETTER_TOPIC MAX_DELIVERY_ATTEMPTS PUBSUB_SERVICE_AGENT; do
  if [[ -z "${!name:-}" ]]; then
    echo "configure-trigger-dead-letter: $name is not set" >&2
    exit 2
  fi
done
command -v gcloud >/dev/null || { echo "configure-trigger-dead-letter: gcloud is required" >&2; exit 2; }

trigger="${TRIGGER##*/}"
subscription="$(gcloud eventarc triggers describe "$trigger" \
  --project="$PROJECT_ID" --location="$REGION" \
  --format='value(transport.pubsub.subscription)')"
if [[ -z "$subscription" ]]; then
  echo "configure-trigger-dead-letter: trigger $trigger has no Pub/Sub subscription" >&2
  exit 1
fi
echo "configure-trigger-dead-letter: subscription $subscription"

gcloud pubsub subscriptions add-iam-policy-binding "$subscription" \
  --project="$PROJECT_ID" \
  --member="$PUBSUB_SERVICE_AGENT" \
  --role="roles/pubsub.subscriber" \
  --condition=None \
  --quiet >/dev/null

gcloud pubsub subscriptions update "$subscription" \
  --project="$PROJECT_ID" \
  --dead-letter-topic="$DEAD_LETTER_TOPIC" \
  --max-delivery-attempts="$MAX_DELIVERY_ATTEMPTS" \
  --quiet

actual="$(gcloud pubsub subscriptions describe "$subscription" --project="$PROJECT_ID" \
  --format='value(deadLetterPolicy.deadLetterTopic,deadLetterPolicy.maxDeliveryAttempts)')"
echo "configure-trigger-dead-letter: dead-letter policy now: $actual"
[[ "$actual" == *"${DEAD_LETTER_TOPIC##*/}"* ]] || { echo "configure-trigger-dead-letter: policy not applied" >&2; exit 1; }
