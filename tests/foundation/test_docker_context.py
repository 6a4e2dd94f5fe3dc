"""The Docker build context: no env file (deploy/.env holds the production secrets) reaches the image.

The context is listed the way Docker lists it: .dockerignore patterns relative to the context root,
`*` and `?` within one path segment, `**` across any number of segments, `!` re-including, the last
matching pattern deciding, and a pattern that matches a directory excluding everything under it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.processes import ROOT

# Env files an operator may well leave in a checkout; the test puts them into a copy of the tree.
PLANTED_ENV_FILES = (
    ".env",
    "deploy/.env",
    "deploy/.env.production",
    "deploy/prod.env",
    "deploy/env.prod",
    "web/.env.local",
    "deeply/nested/dir/.env",
    "deploy/secrets.env.bak",
)


def _segment_regex(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(ch, re.escape(ch)))
        i += 1
    return "^" + "".join(out) + "$"


def read_dockerignore(path: Path) -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        pattern = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        rules.append((exception, re.compile(_segment_regex(pattern))))
    return rules


def excluded(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent directories wins."""
    parts = relative.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for exception, regex in rules:
        if any(regex.match(c) for c in candidates):
            verdict = not exception
    return verdict


def context_files(root: Path) -> set[str]:
    rules = read_dockerignore(root / ".dockerignore")
    reincluded = any(exception for exception, _ in rules)
    found: set[str] = set()
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        if not reincluded:
            dirs[:] = [d for d in dirs if not excluded(rel_dir + d, rules)]
        else:
            # An excluded directory is still walked when an exception might re-include something in it;
            # the big dependency trees cannot hold deploy/env.example, so skip those for speed.
            dirs[:] = [d for d in dirs if not (excluded(rel_dir + d, rules) and d in (".git", ".venv", "node_modules"))]
        for name in files:
            if not excluded(rel_dir + name, rules):
                found.add(rel_dir + name)
    return found


@pytest.fixture
def checkout_with_env_files(tmp_path: Path) -> Path:
    """This checkout's tracked files (the context's shape) plus the env files an operator leaves."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in [*tracked.split(), *PLANTED_ENV_FILES]:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")
    (tmp_path / ".dockerignore").write_bytes((ROOT / ".dockerignore").read_bytes())
    return tmp_path


def is_env_file(relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return name.startswith((".env", "env.")) or name.endswith(".env") or ".env." in name


def test_no_env_file_is_in_the_docker_build_context(checkout_with_env_files: Path) -> None:
    context = context_files(checkout_with_env_files)

    assert [f for f in context if is_env_file(f)] == ["deploy/env.example"]
    # The build still has what it needs.
    for needed in ("manage.py", "requirements.txt", "deploy/start-web", "web/templates/web/index.html"):
        assert needed in context


def test_the_real_checkout_sends_no_env_file_either() -> None:
    context = context_files(ROOT)

    assert [f for f in context if is_env_file(f)] == ["deploy/env.example"]
    assert not any(f.startswith((".git/", ".venv/", "node_modules/", "var/")) for f in context)


def test_the_pattern_rules_match_dockers() -> None:
    rules = read_dockerignore_text("**/.env\nvar\n!var/keep\n/build/*.log\n")

    assert excluded("deploy/.env", rules)
    assert excluded(".env", rules)
    assert excluded("var/log/x", rules)
    assert not excluded("var/keep", rules)
    assert excluded("build/a.log", rules)
    assert not excluded("build/sub/a.log", rules)
    assert not excluded("deploy/.envrc", rules)


def read_dockerignore_text(text: str) -> list[tuple[bool, re.Pattern[str]]]:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".dockerignore", delete=False) as handle:
        handle.write(text)
    try:
        return read_dockerignore(Path(handle.name))
    finally:
        os.unlink(handle.name)
