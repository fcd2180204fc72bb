"""External tools the tests drive for real (Prometheus, Alertmanager, Chromium, openssl).

``require_tool`` skips a test whose tool is missing on a developer machine, but in CI
(``CI=true``) a missing tool is a failure: the README's test command installs them all.
Import it as ``from tests.tools import require_tool`` (the repository root is on the test
path, see ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_tool(*names: str) -> str:
    """Path of the first of ``names`` on PATH; skip (locally) or fail (in CI) if none is."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    message = f"required tool not found on PATH: {' or '.join(names)} (scripts/install-system-deps installs it)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)
