"""Who the function is to the services it calls: the runtime's Google credentials (`google`), and the bearer
credentials it presents to HyperFleet and the Pull Secret Service (`bearer`: a token file, a Google ID token, or a
Kubernetes ServiceAccount token minted by TokenRequest, `satoken`).
"""
