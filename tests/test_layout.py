"""The layout holds: imports go one way, shapes have one source, and the
wheel built from the repository carries agents/ and training/ as block_env subpackages."""

from __future__ import annotations

import ast
import dataclasses
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import round_of

from block_env import PRESETS, raw_env
from block_env.observations import NUMBER, Encoder, Piece, decode_observation, history_layout, vector_layout

ROOT = Path(__file__).resolve().parents[1]
#: Source folder -> the package name it installs as (pyproject's package-dir).
PACKAGES = {
    "block_env": "block_env",
    "agents": "block_env.agents",
    "arena": "block_env.arena",
    "apps": "block_env.apps",
    "training": "block_env.training",
}
#: The console command: the top of the stack, the one module nothing else imports.
CLI = "block_env.cli"
#: Modules of block_env/ that sit above the core: the console command on top, and the OpenSpiel
#: bridge beside the arena and the apps (its game is the core's block_env.openspiel_game).
ABOVE_THE_CORE = {
    "cli.py": (),
    "openspiel.py": ("block_env.arena", "block_env.apps", "block_env.training", CLI),
}
#: layer -> the packages it must never import: core <- agents <- arena, apps <- training <- cli
#: (docs/architecture.md).
FORBIDDEN = {
    "block_env": (
        "block_env.agents",
        "block_env.arena",
        "block_env.apps",
        "block_env.training",
        CLI,
        "block_env.openspiel",
    ),
    "agents": ("block_env.arena", "block_env.apps", "block_env.training", CLI, "block_env.openspiel"),
    "arena": ("block_env.apps", "block_env.training", CLI),
    "apps": ("block_env.arena", "block_env.training", CLI),
    "training": ("block_env.apps", CLI),
}


def imported_modules(source: str) -> set[str]:
    """Every module an import statement names, at any depth (function-level imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def wrong_way_imports(layer: str, source: str) -> list[str]:
    bad = FORBIDDEN.get(layer, ())
    return sorted(m for m in imported_modules(source) if any(m == b or m.startswith(b + ".") for b in bad))


def modules_by_layer() -> dict[str, list[Path]]:
    """Every Python module of each layer's folder (the console command apart)."""
    above = {ROOT / "block_env" / name for name in ABOVE_THE_CORE}
    return {folder: sorted(p for p in (ROOT / folder).glob("*.py") if p not in above) for folder in PACKAGES}


@pytest.mark.parametrize("name", list(ABOVE_THE_CORE))
def test_the_modules_above_the_core_import_one_way_too(name):
    bad = ABOVE_THE_CORE[name]
    imported = imported_modules((ROOT / "block_env" / name).read_text())
    assert not [m for m in imported if any(m == b or m.startswith(b + ".") for b in bad)]


def test_every_folder_of_the_package_is_a_layer():
    folders = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks", "examples"}
    assert folders == set(PACKAGES) == set(FORBIDDEN)


@pytest.mark.parametrize("layer", list(PACKAGES))
def test_imports_go_one_way(layer):
    for path in modules_by_layer()[layer]:
        assert not wrong_way_imports(layer, path.read_text()), f"{path.relative_to(ROOT)} imports upward"


def test_the_import_check_catches_a_wrong_way_import():
    assert wrong_way_imports("block_env", "def f():\n    from block_env.agents import make_agent\n") == [
        "block_env.agents",
        "block_env.agents.make_agent",
    ]
    assert wrong_way_imports("agents", "import block_env.training.train\n") == ["block_env.training.train"]
    assert wrong_way_imports("arena", "from block_env.apps import web\n") == ["block_env.apps", "block_env.apps.web"]
    assert wrong_way_imports("agents", "from block_env.engine import Round\n") == []


def project_modules() -> dict[str, Path]:
    """Every module of the project by the name it installs as (a package by its __init__.py)."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def import_graph(sources: dict[str, str], packages: set[str]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` its import statements name, at any depth (function-level
    imports too). ``from P import x`` names the module P.x when there is one, else P itself; a
    relative import is read from the importing module's package (``packages``: the modules that
    are packages). One import is left out: a module's own package imported inside a function
    (the agents' spec parser, which the package holds, reached when an agent builds another from
    its spec), since the package is always initialised before any module of it."""
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        here = module if module in packages else module.rpartition(".")[0]
        tree = ast.parse(source)
        in_functions = {
            id(node)
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            for node in ast.walk(function)
        }
        named: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parent, base] if base else parent)
                found = {f"{base}.{a.name}" if f"{base}.{a.name}" in sources else base for a in node.names}
            else:
                continue
            if id(node) in in_functions:
                found.discard(here)
            named |= found
        graph[module] = {name for name in named if name in sources and name != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules that import each other, directly or round a loop: the strongly
    connected components of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[set[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            group = set()
            while not group or module not in group:
                group.add(stack.pop())
            if len(group) > 1:
                cycles.append(group)

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return cycles


def test_no_module_imports_a_module_that_imports_it_back():
    """No import loop between the project's modules, not even through an import inside a
    function (training's loop and the expert iteration it runs imported each other so)."""
    modules = project_modules()
    packages = {name for name, path in modules.items() if path.stem == "__init__"}
    graph = import_graph({name: path.read_text() for name, path in modules.items()}, packages)
    cycles = [sorted(group) for group in import_cycles(graph)]
    assert not cycles, f"modules that import each other: {cycles}"


def test_the_cycle_check_catches_a_loop_through_a_function_level_import():
    sources = {
        "p": "",
        "p.low": "def teach():\n    from p.high import train\n",
        "p.high": "from p import low\n\ndef train():\n    low.teach()\n",
        "p.side": "from .low import teach\n",
        "p.top": "import p.high\nfrom p.side import teach\n",
        "p.spec": "from p import side\n\ndef build():\n    from p import make_agent\n",
    }
    graph = import_graph(sources, {"p"})
    assert graph == {
        "p": set(),
        "p.low": {"p.high"},
        "p.high": {"p.low"},
        "p.side": {"p.low"},
        "p.top": {"p.high", "p.side"},
        "p.spec": {"p.side"},
    }
    assert import_cycles(graph) == [{"p.low", "p.high"}]
    # a module's own package, imported inside a function, is left out; at the top it counts
    package_loop = {"p": "import p.spec\n", "p.spec": "from p import make_agent\n"}
    assert import_cycles(import_graph(package_loop, {"p"})) == [{"p", "p.spec"}]
    assert import_cycles({**graph, "p.low": set()}) == []


@pytest.mark.parametrize(
    "name", ["tiles", "rules", "engine", "batched", "observations", "options", "seeding", "validation"]
)
def test_the_engine_is_the_standard_library_and_numpy(name):
    """The engine knows nothing of PettingZoo, Gymnasium or torch: only the env adapters do."""
    imported = imported_modules((ROOT / "block_env" / f"{name}.py").read_text())
    top_level = {m.split(".")[0] for m in imported}
    # The batched engine and its encoders compile their loops with numba (measured:
    # benchmarks/bench_batched.py).
    allowed = {"numpy", "block_env", "__future__"} | ({"numba"} if name in ("batched", "observations") else set())
    assert top_level <= set(sys.stdlib_module_names) | allowed
    assert not {m for m in imported if m.startswith("block_env.")} & {"block_env.aec", "block_env.gym_env"}


@pytest.mark.parametrize("preset", ["standard", "partnership", "double_nine_4p"])
@pytest.mark.parametrize("observation", ["vector", "history"])
def test_adding_a_piece_is_one_layout_entry_and_one_writer(preset, observation):
    """A copy of a layout with two more pieces (bits in the middle, shifting every later
    offset, and a number at the end): the encoder fills them from their writers, and the
    decoder reads every original piece exactly as from the built-in encoding."""
    rules = PRESETS[preset]
    base = vector_layout(rules) if observation == "vector" else history_layout(rules)
    t = rules.tile_set.num_tiles
    extra_bits = Piece("unseen", (t,), 1, "tiles the observer cannot see")
    extra_number = Piece("unseen_count", (1,), t, "how many", NUMBER)
    pieces = list(base.pieces)
    pieces.insert(1, extra_bits)
    layout = dataclasses.replace(base, pieces=(*pieces, extra_number))
    writers = {
        "unseen": lambda enc, rnd, seat, piece: rnd.tiles.full_mask & ~rnd.hands[seat] & ~rnd.played,
        "unseen_count": lambda enc, rnd, seat, scores: [
            (rnd.tiles.full_mask & ~rnd.hands[seat] & ~rnd.played).bit_count()
        ],
    }
    extended = Encoder(rules, layout, writers)
    env = raw_env(rules, observation=observation)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    while not all(env.terminations.values()):
        rnd, scores = round_of(env), env.scores  # the encoder reads the engine's round
        for seat, agent in enumerate(env.possible_agents):
            obs = extended(rnd, seat, scores)
            views = layout.views(obs)
            unseen = writers["unseen"](None, rnd, seat, None)
            assert views["unseen"].tolist() == [float(unseen >> i & 1) for i in range(t)]
            assert views["unseen_count"][0] == unseen.bit_count()
            assert decode_observation(obs, rules, observation, layout=layout) == decode_observation(
                env.observe(agent), rules, observation
            )
        env.step(int(rng.choice(env.legal_actions())))


def test_a_layout_refuses_a_bits_piece_after_the_numbers():
    base = vector_layout(PRESETS["standard"])
    layout = dataclasses.replace(base, pieces=(*base.pieces, Piece("late", (3,), 1, "bits after numbers")))
    with pytest.raises(ValueError, match="before the number pieces"):
        _ = layout.num_bits


def test_the_wheel_holds_agents_and_training_and_its_console_command_runs(tmp_path):
    # Built from a copy: setuptools writes build/ beside the sources.
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in PACKAGES:
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("block_env-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    for folder, package in PACKAGES.items():
        for source in (ROOT / folder).glob("*.py"):
            assert f"{package.replace('.', '/')}/{source.name}" in names
    assert not any(n.startswith(tuple(f"{f}/" for f in PACKAGES if f != "block_env")) for n in names), (
        "no top-level module but block_env"
    )
    for asset in (ROOT / "apps" / "web_static").iterdir():  # the web app's page ships too
        assert f"block_env/apps/web_static/{asset.name}" in names
    for agent in (ROOT / "agents" / "pretrained").iterdir():  # and the pretrained agents
        assert {f"block_env/agents/pretrained/{agent.name}/{f}" for f in ("agent.json", "policy.pth")} <= names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "block-dominoes = block_env.cli:main" in (tmp_path / "site" / entry_points).read_text()
    # The console command's entry point, imported from the unpacked wheel (not the checkout).
    code = "import sys, block_env.agents, block_env.cli as cli; print(block_env.agents.__file__); cli.main(['rules'])"
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": ""},
    )
    assert run.stdout.splitlines()[0].startswith(str(tmp_path / "site" / "block_env" / "agents"))
    assert "standard_3p" in run.stdout
