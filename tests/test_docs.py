"""The README stays true: its piece tables are the generated ones and its examples run."""

from __future__ import annotations

import re
from pathlib import Path

from block_env import Rules
from block_env.observations import history_layout, state_layout, vector_layout

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_piece_tables_are_the_generated_ones():
    rules = Rules()
    for layout in (vector_layout(rules), history_layout(rules), state_layout(rules)):
        assert layout.markdown() in README, f"README's {layout.name!r} table is stale: run block-dominoes encodings"


def test_readme_python_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 3
    for block in blocks:
        block = block.replace(".learn(10_000)", ".learn(128)")  # the same code, a shorter run
        exec(compile(block, "README.md", "exec"), {})
    assert "RoundResult(" in capsys.readouterr().out
