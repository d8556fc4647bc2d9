"""The pure decisions: events, preconditions, the pull secret, status, lineage. No external calls or any I/O."""
