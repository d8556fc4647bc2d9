"""Test doubles shipped beside the tests, as httpx ships `MockTransport`: the in-memory services the function calls
(`secretmanager`, `hyperfleet`, `pullsecretservice`, `kubernetes`, `runtime`: each call a scheduling point of the
explorer's `scheduler.Run`, or of `runtime.Calm`), and the conformance kits and stories every registered mode x
source runs through (`conformance`). No tests here: suites reach these through tests/conftest.py's fixtures or import
them; no suite imports another (tests/infra/test_test_imports.py)."""
