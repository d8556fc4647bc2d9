"""Registry verification: where the function may connect, the Docker Registry v2 handshake, and its verdicts."""
