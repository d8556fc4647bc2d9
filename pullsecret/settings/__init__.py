"""Settings every deployment has, read from the environment, typed and checked once at cold start.

`common` holds them (pullsecret.configured.load adds each registered delivery mode's and source's own records,
which live in their packages); `envvars` reads one variable; `hostnames`, `secret_projects` and `token_source`
parse the settings that need more than a type. Pure: reads a mapping, no I/O.
"""
