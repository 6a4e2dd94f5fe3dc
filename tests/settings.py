"""Settings for the test suite: the development defaults, with the tests' own database and Redis db."""

import os
from pathlib import Path

_TEST_ENV = {
    "REDIS_URL": "redis://127.0.0.1:6379/15",
    "DJANGO_DEBUG": "false",
}

for line in (Path(__file__).resolve().parent.parent / "deploy" / "env.local").read_text().splitlines():
    if line.strip() and not line.lstrip().startswith("#"):
        key, _, value = line.partition("=")
        os.environ.setdefault(key.strip(), _TEST_ENV.get(key.strip(), value.strip()))

from dws_project.settings import *
