"""The HyperFleet API: its client (clusters, adapter statuses, status reports) and the credential it presents."""
