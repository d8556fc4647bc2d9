"""The operator's tools: the CLI (`python -m pullsecret`) the fleet view and the re-key, on the function's own code."""
