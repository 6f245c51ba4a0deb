"""MkDocs hooks (mkdocs.yml): lay out the package as it installs under .cache/api-src before
the build, so that mkdocstrings finds block_env.agents, .arena, .apps and .training."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from package_tree import ROOT, assemble  # noqa: E402

API_SOURCES = ROOT / ".cache" / "api-src"


def on_startup(**kwargs: Any) -> None:
    API_SOURCES.mkdir(parents=True, exist_ok=True)
    assemble(API_SOURCES)
