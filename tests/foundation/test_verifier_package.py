"""The public verifier does not come from the sale alone: the README publishes its version and SHA-256 (kept
equal to the file here: after changing it, `make verifier-hash`), the file names its version, and it installs
from the repository as the `dws-verify` command (deploy/verifier/pyproject.toml), still one file of the
standard library only."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "deploy" / "verify_proof.py"


def file_version() -> str:
    named = re.search(r'^__version__ = "([0-9]+\.[0-9]+\.[0-9]+)"$', VERIFIER.read_text(), re.MULTILINE)
    assert named, "deploy/verify_proof.py names no __version__"
    return named.group(1)


def test_the_readme_publishes_the_files_version_and_sha256() -> None:
    readme = (ROOT / "README.md").read_text()
    published = re.search(r"^\| SHA-256 \| `([0-9a-f]{64})` \|$", readme, re.MULTILINE)
    version = re.search(r"^\| version \| `([^`]+)` \|$", readme, re.MULTILINE)

    assert published, "README.md lost its verifier fingerprint table"
    assert version, "README.md lost its verifier fingerprint table"
    assert published.group(1) == hashlib.sha256(VERIFIER.read_bytes()).hexdigest(), (
        "deploy/verify_proof.py changed: run `make verifier-hash` to publish its new SHA-256"
    )
    assert version.group(1) == file_version()


def test_it_installs_from_its_own_pyproject_as_the_dws_verify_command(tmp_path: Path) -> None:
    """Built from a copy (the build writes beside its sources), installed into an environment with nothing
    else in it; about 3 s."""
    source = tmp_path / "src" / "deploy"
    (source / "verifier").mkdir(parents=True)
    shutil.copy(VERIFIER, source / "verify_proof.py")
    shutil.copy(ROOT / "deploy" / "verifier" / "pyproject.toml", source / "verifier" / "pyproject.toml")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "dist"), str(source / "verifier")],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("dws_verify-*.whl")
    target = tmp_path / "env"
    venv.create(target, with_pip=False)
    subprocess.run(
        [*pip, "--python", str(target / "bin" / "python"), "install", "--no-index", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )

    shown = subprocess.run([str(target / "bin" / "dws-verify"), "--version"], capture_output=True, text=True)
    installed = subprocess.run(
        [str(target / "bin" / "python"), "-I", "-c", "import verify_proof, sys; print(verify_proof.__file__)"],
        capture_output=True,
        text=True,
    )

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == f"dws-verify {file_version()}"
    assert wheel.name == f"dws_verify-{file_version()}-py3-none-any.whl"
    module = Path(installed.stdout.strip())
    assert module.read_bytes() == VERIFIER.read_bytes()  # the one file, as it is in the repository
    metadata = next((target / "lib").glob("python3*/site-packages/dws_verify-*.dist-info/METADATA")).read_text()
    assert "Requires-Dist" not in metadata  # the standard library only
