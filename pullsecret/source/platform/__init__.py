"""The platform pull secret (PULL_SECRET_SOURCE): one Secret Manager secret version shared by every cluster.

Everything of this source lives here: the source itself (source), its preflight check (checks), and how a new
version reaches every cluster (rotation, with its progress record, progress, and its hand-on events, publishing).
"""
