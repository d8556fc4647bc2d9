"""The operator's tools: the CLI (`python -m pullsecret`) and the preflight doctor, on the function's own code."""
