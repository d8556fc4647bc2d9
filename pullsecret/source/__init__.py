"""Where the platform's part of the pull secret comes from: the `Source` seam (base, sources) and one package per
source (platform, service)."""
