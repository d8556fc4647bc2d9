"""One cluster's reconcile, its pieces in call order: `entry` (read, judge the preconditions, then wait, finalize
or provision), `provisioning` (read, decide, store, apply, report), `finalize` (deletion), `merge` (the source's
pull secret with the cluster's own), `target` (where it goes), `outcome` (what the event did, and its one report).
"""
