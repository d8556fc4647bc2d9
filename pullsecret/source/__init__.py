"""Where the platform's part of the pull secret comes from (the `Source` seam: base, platform, sources, merge), and
how the platform secret's rotation reaches every cluster (rotation)."""
