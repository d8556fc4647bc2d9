"""`python -m pullsecret ...`: the operator CLI (see pullsecret.cli)."""

import sys

from pullsecret.cli import main

sys.exit(main())
