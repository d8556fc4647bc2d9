"""The platform pull secret (PULL_SECRET_SOURCE): one Secret Manager secret version shared by every cluster.

Everything of this source lives here: the source itself (source), its reads and their cache (secret), its doctor
check (doctor), how a new version reaches every cluster (rotation, with its progress record, progress), and its
part of the operator's `rekey` (rekey: that fan-out, driven from the operator's process).
"""
