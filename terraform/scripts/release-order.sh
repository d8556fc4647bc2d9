#!/usr/bin/env bash
# Refuse to apply a commit older than the one the state was last applied from (issue 51, item 3). Two builds of
# two quick pushes both wait for the state lock; whichever gets it second must not put the older commit back.
# A commit may be applied when nothing is recorded yet, when it is the recorded one (a re-run), or when it descends
# from it; anything else (an older commit, a history that diverged) is refused. A rollback is a new commit on main
# (git revert), which descends from what is deployed.
#
# Usage: release-order.sh DEPLOYED CANDIDATE     (run in the repository's checkout; exit 1 refused, 2 cannot tell)
set -euo pipefail

deployed="${1?usage: release-order.sh DEPLOYED CANDIDATE}"
candidate="${2:?usage: release-order.sh DEPLOYED CANDIDATE}"

if [ -z "$deployed" ] || [ "$deployed" = "$candidate" ]; then
  exit 0
fi
if ! git cat-file -e "$deployed^{commit}" 2>/dev/null || ! git cat-file -e "$candidate^{commit}" 2>/dev/null; then
  echo "release-order: cannot compare $candidate with the deployed $deployed: this checkout lacks one of them" \
    "(a shallow clone? fetch the history of main)" >&2
  exit 2
fi
if git merge-base --is-ancestor "$deployed" "$candidate"; then
  exit 0
fi
echo "release-order: refusing to apply $candidate: it does not descend from $deployed, which the state was last" \
  "applied from (an older commit, or a diverged history); to roll back, revert on main" >&2
exit 1
