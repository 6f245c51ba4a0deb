"""Run pyright (basic mode, the settings in pyproject.toml) on the package as it installs.

agents/, arena/, apps/ and training/ install as block_env subpackages (pyproject's
package-dir), which a type checker cannot see from the repository's layout. This copies the
sources into a temporary tree shaped like the installed package, runs pyright there, and
prints its findings with the repository's paths. Exit status: pyright's.

    python scripts/typecheck.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("agents", "arena", "apps", "training")


def assemble(into: Path) -> dict[str, str]:
    """The installed package's shape under ``into``; returns {copied folder: repository folder}."""
    shutil.copytree(ROOT / "block_env", into / "block_env", ignore=shutil.ignore_patterns("__pycache__"))
    folders = {str(into / "block_env"): str(ROOT / "block_env")}
    for name in SUBPACKAGES:
        target = into / "block_env" / name
        shutil.copytree(ROOT / name, target, ignore=shutil.ignore_patterns("__pycache__", "pretrained", "web_static"))
        folders[str(target)] = str(ROOT / name)
    return folders


def main() -> int:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pyright"]
    with tempfile.TemporaryDirectory() as tmp:
        folders = assemble(Path(tmp))
        config = {**settings, "include": ["block_env"], "pythonPlatform": "Linux"}
        (Path(tmp) / "pyrightconfig.json").write_text(json.dumps(config))
        # The interpreter running this script is the one whose packages pyright resolves.
        run = subprocess.run(
            [sys.executable, "-m", "pyright", "--pythonpath", sys.executable],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
    output = run.stdout + run.stderr
    for copied, original in sorted(folders.items(), key=lambda item: -len(item[0])):
        output = output.replace(copied, original)
    print(output.strip())
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
