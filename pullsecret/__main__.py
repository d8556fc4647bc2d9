"""`python -m pullsecret ...`: the operator CLI (see pullsecret.operator.cli)."""

import sys

from pullsecret.operator.cli import main

sys.exit(main())
