#!/usr/bin/env bash
# The root's values, checked by terraform before anything reads or locks the state (issue 51, items 3 and 10):
#   - every key of every tfvars file is a variable the root declares (the root declares all of the module's:
#     environments/*/variables.tf is the module's own), so a setting written in _TFVARS_URI is never dropped
#     with a warning; a key no variable declares is an error here;
#   - every validation of the module's variables passes;
#   - the project the root deploys into, printed on stdout (the build compares it with its own).
# The values are evaluated in a scratch directory holding only the root's variables.tf and tfvars files: no
# backend, no state, no lock, no provider (so a second build never fails on the first one's state lock, and this
# runs offline).
#
# Usage: preflight.sh ROOT_DIR      (TERRAFORM= names the binary; default: terraform on PATH)
set -euo pipefail

root="${1:?usage: preflight.sh ROOT_DIR}"
terraform="${TERRAFORM:-terraform}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$root/variables.tf" "$work/"
for values in "$root"/terraform.tfvars "$root"/*.auto.tfvars "$root"/*.auto.tfvars.json; do
  if [ -f "$values" ]; then cp "$values" "$work/"; fi
done

export TF_DATA_DIR="$work/.terraform" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null
"$terraform" -chdir="$work" init -input=false -backend=false -no-color >/dev/null

plan="$("$terraform" -chdir="$work" plan -input=false -lock=false -no-color -json || true)"
undeclared="$(printf '%s\n' "$plan" | grep -E '"summary":"Values? for undeclared variables?"' || true)"
if [ -n "$undeclared" ]; then
  keys="$(printf '%s\n' "$undeclared" | grep -oE 'variable named [^ ]+' | sed -E 's/variable named //; s/[\\"]//g' | sort -u)"
  echo "preflight: tfvars keys that no variable of $root declares (terraform would ignore them): $(echo $keys)" >&2
  exit 1
fi
errors="$(printf '%s\n' "$plan" | grep '"@level":"error"' || true)"
if [ -n "$errors" ]; then
  printf '%s\n' "$errors" | sed -E 's/.*"@message":"([^"]*)".*"detail":"([^"]*)".*/\1: \2/; s/\\n/ /g; s/\\"/"/g' >&2
  echo "preflight: the values of $root are refused (above)" >&2
  exit 1
fi
echo var.project_id | "$terraform" -chdir="$work" console | tr -d '"'
