"""What every benchmark does with its figures: a ``--markdown`` option, and the table printed
and, where asked, written to that file."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_markdown_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", help="also write the table to this Markdown file")


def show(table: str, markdown: str | None) -> None:
    """Print ``table``, and write it to ``markdown`` when that names a file."""
    print(table)
    if markdown:
        Path(markdown).write_text(table + "\n")
