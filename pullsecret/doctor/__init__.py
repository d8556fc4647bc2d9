"""The doctor: checks that prove a deployment's permissions and dependencies before its first event, writing
nothing. `kit` is what every check uses (its verdict `Line`, `DoctorCheck`, the `Context` they share; each delivery
mode and source declares its own checks in its package's `doctor` module); `checks`, `identity` and `adapters` are
the checks every deployment has; `run` runs them all (`python -m pullsecret doctor`, or a `gcloud functions call`).
"""
