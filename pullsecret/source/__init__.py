"""Where the platform pull secret comes from, and how its rotation reaches every cluster."""
