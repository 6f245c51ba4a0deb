"""Mutation testing of the core: how many small deliberate bugs the tests catch, per module.

    python benchmarks/mutation.py                       # every module, 40 mutants each
    python benchmarks/mutation.py --modules scoring --sample 0   # every mutant of one module
    python benchmarks/mutation.py --modules engine --list        # the mutants, not run

A mutant changes one operator or constant in the module's source (``+`` to ``-``, ``<`` to
``<=``, ``==`` to ``!=``, ``and`` to ``or``, a ``not`` dropped, an integer ``n`` to ``n + 1``,
``True`` to ``False``, ``+=`` to ``-=``, ``&`` to ``|``, ``<<`` to ``>>``...). Each one is
written into a copy of the ``block_env`` package in a temporary folder (the working tree is never
touched, so other work on it goes on), and the module's tests run against the copy with ``-x``;
the mutant is *killed* when they fail (or pass the time limit), and *survives* when they pass.
The score is the share killed. Strings (error messages, docstrings) are not mutated.

Slow (a test run per mutant, and the batched module's numba kernels are compiled again for
each), so not part of the suite: ``--sample`` draws that many mutants per module (seeded), and
``--offset`` takes the next ones, to run it in bounded chunks. Survivors are printed with
their line, to be killed by a new test or explained as equivalent (docs/testing.md).
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    """A module under test: a file of the package, optionally only some of its functions (by
    qualified name prefix), and the tests that must catch its mutants."""

    file: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


ENGINE_TESTS = (
    "tests/test_rules_and_engine.py",
    "tests/test_worked_examples.py",
    "tests/test_properties.py",
    "tests/test_env.py",
    "tests/test_edges.py",
)
SCORING = ("RoundResult.", "Round._finish", "Match._award", "Match.is_over", "heaviest_holding", "next_lead")
DECODER = (
    "decode_observation",
    "read_moves",
    "_checked_views",
    "_decode_table",
    "_decode_moves",
    "_tiles_where",
    "_one_hot_index",
    "read_public_view",
    "_bits_mask",
    "_read_vector_view",
    "replay_public",
)
TARGETS = {
    "rules": Target(
        "block_env/rules.py",
        (
            "tests/test_rules_and_engine.py",
            "tests/test_worked_examples.py",
            "tests/test_edges.py",
            "tests/test_api_edges.py",
        ),
    ),
    "engine": Target("block_env/engine.py", ENGINE_TESTS, exclude=SCORING),
    "scoring": Target("block_env/engine.py", ENGINE_TESTS, functions=SCORING),
    "batched": Target("block_env/batched.py", ("tests/test_batched.py", "tests/test_vector_env.py")),
    "decoder": Target(
        "block_env/observations.py",
        ("tests/test_decoders.py", "tests/test_env.py", "tests/test_edges.py", "tests/test_properties.py")
        + ("tests/test_api_edges.py",),
        functions=DECODER,
    ),
}

SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


@dataclass(frozen=True)
class Mutant:
    index: int  # the site's order in an ast.walk of the module (with kind, it finds the node again)
    kind: str  # "op", "const", "not"
    line: int
    function: str
    description: str


def _qualified_names(tree: ast.Module) -> dict[int, str]:
    """id(node) -> the qualified name of the function or class body it is in ("" at module level)."""
    names: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
            names[id(child)] = name  # the innermost function or class wins
            visit(child, name)

    visit(tree, "")
    return names


def _docstring_nodes(tree: ast.Module) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.add(id(body[0].value))
        # annotations are strings under `from __future__ import annotations`: never run
        if isinstance(node, (ast.arg, ast.AnnAssign)) and node.annotation is not None:
            skip.update(id(n) for n in ast.walk(node.annotation))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            skip.update(id(n) for n in ast.walk(node.returns))
    return skip


def _sites(tree: ast.Module) -> list[tuple[int, str, ast.AST, str]]:
    """(walk index, kind, node, description) of every place a mutant can be made."""
    skip = _docstring_nodes(tree)
    found = []
    for i, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign, ast.BoolOp)) and type(node.op) in SWAPS:
            found.append((i, "op", node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAPS:
            found.append((i, "op", node, f"{type(node.ops[0]).__name__} -> {SWAPS[type(node.ops[0])].__name__}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append((i, "not", node, "not dropped"))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            new = (not node.value) if isinstance(node.value, bool) else node.value + 1
            found.append((i, "const", node, f"{node.value!r} -> {new!r}"))
    return found


def mutants(target: Target) -> list[Mutant]:
    tree = ast.parse((ROOT / target.file).read_text())
    names = _qualified_names(tree)
    out = []
    for index, kind, node, description in _sites(tree):
        function = names.get(id(node), "")
        if target.functions and not any(function == f.rstrip(".") or function.startswith(f) for f in target.functions):
            continue
        if any(function == f.rstrip(".") or function.startswith(f) for f in target.exclude):
            continue
        out.append(Mutant(index, kind, getattr(node, "lineno", 0), function, description))
    return out


def mutated_source(target: Target, mutant: Mutant) -> str:
    tree = ast.parse((ROOT / target.file).read_text())
    node = list(ast.walk(tree))[mutant.index]
    if mutant.kind == "op":
        if isinstance(node, ast.Compare):
            node.ops = [SWAPS[type(node.ops[0])]()]
        else:
            node.op = SWAPS[type(node.op)]()  # type: ignore[attr-defined]
    elif mutant.kind == "const":
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1  # type: ignore[attr-defined]
    else:  # drop the `not`: replace the UnaryOp by its operand in its parent
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, node.operand)  # type: ignore[attr-defined]
                elif isinstance(value, list) and any(v is node for v in value):
                    setattr(parent, field, [node.operand if v is node else v for v in value])  # type: ignore[attr-defined]
    return ast.unparse(copy.deepcopy(tree))


def run_tests(copy_root: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, float, str]:
    """(the tests passed, seconds, the first failure) with the package copied to ``copy_root``
    first on the path."""
    started = time.perf_counter()
    command = [
        sys.executable, "-P", "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider",
        "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-o", f"timeout={int(timeout)}",
        *(str(ROOT / t) for t in tests),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(copy_root), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout + 60)
        passed = done.returncode == 0
        failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        first = failed[0].split(" - ")[0] if failed else (errors[-1] if errors else done.stdout.strip()[-200:])
        first = first[first.find("tests/") :] if "tests/" in first else first
    except subprocess.TimeoutExpired:
        passed, first = False, "timed out"  # a mutant that loops forever is caught by the time limit
    return passed, time.perf_counter() - started, first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="+", choices=sorted(TARGETS), default=list(TARGETS))
    parser.add_argument("--sample", type=int, default=40, help="mutants per module (0: all)")
    parser.add_argument("--offset", type=int, default=0, help="skip this many of the drawn order first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds per test run before a mutant counts as killed"
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        copy_root = Path(folder)
        shutil.copytree(ROOT / "block_env", copy_root / "block_env", ignore=shutil.ignore_patterns("__pycache__"))
        check = subprocess.run(
            [sys.executable, "-P", "-c", "import block_env.engine as m; print(m.__file__)"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(copy_root)}, capture_output=True, text=True,
        )  # fmt: skip
        if not check.stdout.startswith(str(copy_root)):
            raise SystemExit(f"the tests would not import the copy: block_env is {check.stdout.strip()}")
        scores = {}
        for name in args.modules:
            target = TARGETS[name]
            every = mutants(target)
            order = list(every)
            random.Random(f"{args.seed}:{name}").shuffle(order)
            chosen = order[args.offset :][: args.sample or None]
            print(f"## {name}: {target.file}, {len(every)} mutants, running {len(chosen)}", flush=True)
            if args.list:
                for m in chosen:
                    print(f"  {target.file}:{m.line} {m.function or '<module>'}: {m.description}")
                continue
            original = (ROOT / target.file).read_text()
            # A canary: a module that fails on import must fail the tests, or they are not
            # reading the copy.
            (copy_root / target.file).write_text('raise ImportError("mutation canary")\n' + original)
            if run_tests(copy_root, target.tests, args.timeout)[0]:
                raise SystemExit(f"{name}: the tests passed with the module broken: they do not import the copy")
            # The unmutated module as the mutants are written (ast.unparse: no comments, its own
            # layout) must pass, or a kill could be the rewriting's doing.
            (copy_root / target.file).write_text(ast.unparse(ast.parse(original)))
            passed, seconds, first = run_tests(copy_root, target.tests, args.timeout)
            if not passed:
                raise SystemExit(f"{name}: the tests fail on the unmutated code ({first}), so no mutant can be judged")
            print(f"  unmutated: tests pass in {seconds:.0f} s", flush=True)
            killed, survivors = 0, []
            try:
                for m in chosen:
                    (copy_root / target.file).write_text(mutated_source(target, m))
                    survived, seconds, first = run_tests(copy_root, target.tests, args.timeout)
                    verdict = "SURVIVED" if survived else f"killed by {first.removeprefix('FAILED ')}"
                    where = f"{target.file}:{m.line} {m.function or '<module>'}: {m.description}"
                    print(f"  {where} ({seconds:.0f} s): {verdict}", flush=True)
                    if survived:
                        survivors.append(m)
                    else:
                        killed += 1
            finally:
                (copy_root / target.file).write_text(original)
            scores[name] = (killed, len(chosen))
        if not args.list:
            print("\n| module | killed | mutants run | score |\n|---|---:|---:|---:|")
            for name, (killed, run) in scores.items():
                print(f"| {name} | {killed} | {run} | {100 * killed / max(run, 1):.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
