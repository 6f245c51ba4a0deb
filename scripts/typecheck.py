"""Run pyright (basic mode, the settings in pyproject.toml) on the package as it installs
(scripts/package_tree.py), printing its findings with the repository's paths. Exit status:
pyright's.

    python scripts/typecheck.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from package_tree import ROOT, assemble  # noqa: E402


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
