"""The docs stay true: the site builds strictly, its tables are the generated ones, every
example runs, every document a file names exists, and nothing names what is not in the
repository."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from block_env import Rules
from block_env.observations import history_layout, state_layout, tracked_layout, vector_layout

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: Every Markdown file of the project (the docs site, the READMEs, the results).
MARKDOWN = sorted([README, *DOCS.rglob("*.md"), *(ROOT / "results").rglob("*.md")])
#: Where the project's own words live: code, configs, tests, docs, packaging.
SOURCES = sorted(
    p
    for pattern in ("*.py", "*.yaml", "*.md", "*.toml", "*.sh", "*.js", "*.html", "*.cfg")
    for p in ROOT.rglob(pattern)
    if not any(part in {".venv", ".git", ".cache", "site", "runs", "build", ".pytest_cache"} for part in p.parts)
)


def test_readme_is_a_front_door():
    assert len(README.read_text().splitlines()) <= 200


def test_the_piece_tables_in_the_docs_are_the_generated_ones():
    text = (DOCS / "environments.md").read_text()
    rules = Rules()
    for layout in (vector_layout(rules), history_layout(rules), tracked_layout(rules), state_layout(rules)):
        assert layout.markdown() in text, f"docs/environments.md's {layout.name!r} table is stale"


EXAMPLE_PAGES = [README, *(DOCS / name for name in ("index.md", "environments.md", "agents.md", "openspiel.md"))]


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=str)
def test_python_examples_run(page, capsys):
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks, f"{page} has no Python example"
    for block in blocks:
        block = block.replace(".learn(10_000)", ".learn(128)")  # the same code, a shorter run
        exec(compile(block, str(page), "exec"), {})


def test_every_config_key_is_documented():
    from block_env.training.config import (
        EvalConfig,
        ExpertConfig,
        OpponentsConfig,
        PPOConfig,
        PretrainConfig,
        PriorConfig,
        TrainConfig,
    )
    from block_env.training.rllib import RLlibConfig

    text = (DOCS / "training.md").read_text()
    sections = {"": TrainConfig, "ppo.": PPOConfig, "pretrain.": PretrainConfig, "opponents.": OpponentsConfig}
    sections["eval."], sections["expert."], sections["pretrain.prior."] = EvalConfig, ExpertConfig, PriorConfig
    for prefix, cls in sections.items():
        for field in dataclasses.fields(cls):
            if not dataclasses.is_dataclass(field.type) and field.name not in (
                "ppo",
                "pretrain",
                "expert",
                "opponents",
                "eval",
            ):
                assert f"`{prefix}{field.name}`" in text, f"docs/training.md does not document {prefix}{field.name}"
    for field in dataclasses.fields(RLlibConfig):
        assert f"`{field.name}`" in text, f"docs/training.md does not document train-rllib's {field.name}"


def test_every_markdown_link_resolves():
    link = re.compile(r"\]\(([^)#\s]+\.(?:md|png))(#[^)]*)?\)")
    for page in MARKDOWN:
        for target, _ in link.findall(page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).resolve().exists(), f"{page.relative_to(ROOT)} links to missing {target}"


def test_every_document_the_sources_name_exists():
    # A document is named by a path ("docs/rules.md") or an upper-case name ("README.md"); a
    # lower-case bare name is an output file a command writes ("summary.md").
    named = re.compile(r"\b((?:[\w.-]+/)+[\w.-]+\.md|[A-Z][A-Z_]+\.md)\b")
    for path in SOURCES:
        for name in named.findall(path.read_text(errors="ignore")):
            if name.startswith(("http", "www.")):
                continue
            candidates = [ROOT / name, path.parent / name]
            assert any(c.exists() for c in candidates), (
                f"{path.relative_to(ROOT)} names {name}, which is not in the repo"
            )


def test_nothing_names_a_tracker_item():
    """Code, configs, tests and docs explain themselves; they do not point at numbered tracker
    items. (Documents outside the repository are caught by the test above: every document a
    source names must exist here.)"""
    numbered_item = re.compile(r"\b[Ii]ssue \d+")
    for path in SOURCES:
        match = numbered_item.search(path.read_text(errors="ignore"))
        assert match is None, f"{path.relative_to(ROOT)} names {match.group(0)!r}"


def test_the_docs_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "rules" / "index.html").exists()
