#!/usr/bin/env bash
# Prints the bootstrap of one root (terraform/bootstrap/commands.tf says what it does), rendered from that root's own
# values: its variables.tf and terraform.tfvars (and any *.auto.tfvars beside them). Offline: no provider, no state.
# Review the output, then run it as an Owner of the projects it names:
#   terraform/scripts/bootstrap.sh terraform/environments/staging > bootstrap-staging.sh
#   DATA_DIR=./first-values bash bootstrap-staging.sh
# Usage: bootstrap.sh ROOT_DIR      (TERRAFORM= names the binary; default: terraform on PATH)
set -euo pipefail

root="${1:?usage: bootstrap.sh ROOT_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
terraform="${TERRAFORM:-terraform}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$root/variables.tf" "$here/../bootstrap/commands.tf" "$work/"
for values in "$root"/terraform.tfvars "$root"/*.auto.tfvars "$root"/*.auto.tfvars.json; do
  if [ -f "$values" ]; then cp "$values" "$work/"; fi
done
export TF_DATA_DIR="$work/.terraform" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null
"$terraform" -chdir="$work" init -input=false -backend=false -no-color >/dev/null
"$terraform" -chdir="$work" apply -input=false -auto-approve -no-color -state="$work/bootstrap.tfstate" >/dev/null
"$terraform" -chdir="$work" output -state="$work/bootstrap.tfstate" -raw script
