"""Every variable the function reads is named in pullsecret.operator.settings, once, as result or as how."""

from __future__ import annotations

import re
from pathlib import Path

from pullsecret.operator import settings

ROOT = Path(__file__).resolve().parents[2]
READ = re.compile(r'env(?:vars\.\w+)?\(?\s*env,\s*"([A-Z][A-Z0-9_]+)"|envvars\.\w+\(env, "([A-Z][A-Z0-9_]+)"')


def test_every_variable_read_by_the_configuration_is_listed() -> None:
    text = (ROOT / "pullsecret" / "config.py").read_text()
    read = {a or b for a, b in READ.findall(text)}
    assert len(read) > 50, read
    assert read <= set(settings.FUNCTION_VARIABLES), sorted(read - set(settings.FUNCTION_VARIABLES))


def test_result_and_how_do_not_overlap() -> None:
    assert not settings.RESULT_VARIABLES & settings.HOW_VARIABLES
    assert set(settings.FUNCTION_VARIABLES) >= settings.SOURCE_VARIABLES
