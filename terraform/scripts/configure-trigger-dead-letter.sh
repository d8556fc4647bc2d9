#!/usr/bin/env bash
# Sets the ack deadline and (optionally) a dead-letter policy on the Pub/Sub subscription Eventarc created
# for a trigger. Idempotent; run by terraform (terraform_data.trigger_dead_letter,
# terraform_data.rotation_trigger_ack_deadline) or by hand with the same variables:
#   PROJECT_ID REGION TRIGGER (name or projects/P/locations/L/triggers/T)
#   ACK_DEADLINE_SECONDS  Pub/Sub push waits this long for the function's answer (10-600; Terraform passes
#                         timeout_seconds + 60, see main.tf)
#   and, for dead-lettering, all three of:
#   DEAD_LETTER_TOPIC (projects/P/topics/T) MAX_DELIVERY_ATTEMPTS
#   PUBSUB_SERVICE_AGENT (serviceAccount:service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com)
set -euo pipefail

me="configure-trigger-dead-letter"
for name in PROJECT_ID REGION TRIGGER ACK_DEADLINE_SECONDS; do
  if [[ -z "${!name:-}" ]]; then
    echo "$me: $name is not set" >&2
    exit 2
  fi
done
if [[ ! "$ACK_DEADLINE_SECONDS" =~ ^[0-9]+$ ]] || ((ACK_DEADLINE_SECONDS < 10 || ACK_DEADLINE_SECONDS > 600)); then
  echo "$me: ACK_DEADLINE_SECONDS must be 10-600 (Pub/Sub's limits), got '$ACK_DEADLINE_SECONDS'" >&2
  exit 2
fi
dead_letter=0
if [[ -n "${DEAD_LETTER_TOPIC:-}${MAX_DELIVERY_ATTEMPTS:-}${PUBSUB_SERVICE_AGENT:-}" ]]; then
  for name in DEAD_LETTER_TOPIC MAX_DELIVERY_ATTEMPTS PUBSUB_SERVICE_AGENT; do
    if [[ -z "${!name:-}" ]]; then
      echo "$me: $name is not set (dead-lettering needs DEAD_LETTER_TOPIC, MAX_DELIVERY_ATTEMPTS and PUBSUB_SERVICE_AGENT)" >&2
      exit 2
    fi
  done
  dead_letter=1
fi
command -v gcloud >/dev/null || { echo "$me: gcloud is required" >&2; exit 2; }

trigger="${TRIGGER##*/}"
subscription="$(gcloud eventarc triggers describe "$trigger" \
  --project="$PROJECT_ID" --location="$REGION" \
  --format='value(transport.pubsub.subscription)')"
if [[ -z "$subscription" ]]; then
  echo "$me: trigger $trigger has no Pub/Sub subscription" >&2
  exit 1
fi
echo "$me: subscription $subscription"

if ((dead_letter)); then
  # The GA track has no --condition flag here; subscriptions carry no conditional bindings.
  gcloud pubsub subscriptions add-iam-policy-binding "$subscription" \
    --project="$PROJECT_ID" \
    --member="$PUBSUB_SERVICE_AGENT" \
    --role="roles/pubsub.subscriber" \
    --quiet >/dev/null

  gcloud pubsub subscriptions update "$subscription" \
    --project="$PROJECT_ID" \
    --ack-deadline="$ACK_DEADLINE_SECONDS" \
    --dead-letter-topic="$DEAD_LETTER_TOPIC" \
    --max-delivery-attempts="$MAX_DELIVERY_ATTEMPTS" \
    --quiet
else
  gcloud pubsub subscriptions update "$subscription" \
    --project="$PROJECT_ID" \
    --ack-deadline="$ACK_DEADLINE_SECONDS" \
    --quiet
fi

actual="$(gcloud pubsub subscriptions describe "$subscription" --project="$PROJECT_ID" \
  --format='value(ackDeadlineSeconds,deadLetterPolicy.deadLetterTopic,deadLetterPolicy.maxDeliveryAttempts)')"
echo "$me: ack deadline and dead-letter policy now: $actual"
read -r ack _ <<<"$actual"
[[ "$ack" == "$ACK_DEADLINE_SECONDS" ]] || { echo "$me: ack deadline not applied" >&2; exit 1; }
if ((dead_letter)); then
  [[ "$actual" == *"${DEAD_LETTER_TOPIC##*/}"* ]] || { echo "$me: dead-letter policy not applied" >&2; exit 1; }
fi
