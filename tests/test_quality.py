"""The habits the suite enforces: ruff's lint and format, and pyright (basic) on the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing():
    result = run("-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_is_ruff_formatted():
    result = run("-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyright_finds_no_error_in_the_package():
    result = run("scripts/typecheck.py")
    assert result.returncode == 0 and "0 errors" in result.stdout, result.stdout + result.stderr
