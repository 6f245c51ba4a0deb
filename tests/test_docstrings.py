"""Every public name has a docstring with an example, and every example runs (doctest)."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import block_env
import block_env.agents
import block_env.arena

#: The modules whose docstring examples are run.
MODULES = [
    "block_env",
    "block_env.rules",
    "block_env.tiles",
    "block_env.engine",
    "block_env.aec",
    "block_env.gym_env",
    "block_env.vector_env",
    "block_env.episodes",
    "block_env.observations",
    "block_env.hidden_hands",
    "block_env.opponents",
    "block_env.validation",
    "block_env.agents",
    "block_env.agents.base",
    "block_env.agents.scripted",
    "block_env.agents.search",
    "block_env.agents.policy",
    "block_env.agents.human",
    "block_env.arena",
    "block_env.arena.config",
    "block_env.arena.deals",
    "block_env.arena.play",
    "block_env.arena.stats",
    "block_env.apps.web",
    "block_env.apps.store",
    "block_env.apps.budget",
    "block_env.training.config",
    "block_env.training.sb3_vec_env",
    "block_env.openspiel",
    "block_env.openspiel_game",
    "block_env.agents.openspiel",
    "block_env.files",
]

#: The public entry points: what users import.
PUBLIC = [
    *(getattr(block_env, name) for name in block_env.__all__ if name not in ("GYM_ID", "PRESETS")),
    *(getattr(block_env.agents, name) for name in block_env.agents.__all__ if name not in ("AGENTS", "Observation")),
    block_env.arena.ArenaConfig,
    block_env.arena.evaluate,
    block_env.arena.run_arena,
    block_env.arena.mean_ci,
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (see above)"


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_every_public_name_shows_an_example(obj):
    assert ">>>" in (inspect.getdoc(obj) or ""), f"{obj.__module__}.{obj.__name__} has no example in its docstring"


def test_the_training_entry_points_show_examples():
    from block_env.training.config import TrainConfig
    from block_env.training.sb3_vec_env import BlockDominoesVecEnv

    for obj in (TrainConfig, BlockDominoesVecEnv):
        assert ">>>" in (inspect.getdoc(obj) or "")
