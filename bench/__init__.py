"""Benchmarks of the pull-secret adapter against the local emulators (`make bench`)."""
