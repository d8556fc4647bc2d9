"""Settings: every variable the function reads, typed and checked once at cold start (`configured.load`).

`common` holds what every deployment has; `configured` adds each registered delivery mode's and source's own
(their settings modules live in their packages); `envvars` reads one variable; `hostnames`, `secret_projects`
and `token_source` parse the settings that need more than a type. Pure: reads a mapping, no I/O.
"""
