"""The package as it installs, laid out for tools that read sources.

agents/, arena/, apps/ and training/ install as block_env subpackages (pyproject's
package-dir), which a type checker or a docs generator cannot see from the repository's
layout. :func:`assemble` copies the sources into a folder shaped like the installed package.
Used by scripts/typecheck.py (pyright) and scripts/docs_hooks.py (mkdocstrings).
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("agents", "arena", "apps", "training")


def assemble(into: Path) -> dict[str, str]:
    """``into/block_env`` shaped like the installed package (Python sources only); returns
    {copied folder: repository folder}, to map paths in a tool's output back."""
    ignore = shutil.ignore_patterns("__pycache__", "pretrained", "web_static", "*.nbi", "*.nbc")
    target = into / "block_env"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT / "block_env", target, ignore=ignore)
    folders = {str(target): str(ROOT / "block_env")}
    for name in SUBPACKAGES:
        shutil.copytree(ROOT / name, target / name, ignore=ignore)
        folders[str(target / name)] = str(ROOT / name)
    return folders
