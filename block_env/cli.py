"""The ``block-dominoes`` console command."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from block_env.rules import PRESETS, Rules


def _rules_arg(value: str) -> Rules:
    try:
        return Rules.preset(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_encodings(args: argparse.Namespace) -> int:
    from block_env.observations import markdown_tables

    print(markdown_tables(args.rules))
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    for name, rules in PRESETS.items():
        print(f"{name:16s} {rules}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="block-dominoes", description="Block dominoes for reinforcement learning.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("encodings", help="print every observation encoding's piece table (Markdown)")
    p.add_argument("--rules", type=_rules_arg, default=Rules(), help="rules preset (default: standard)")
    p.set_defaults(func=cmd_encodings)
    p = sub.add_parser("rules", help="list the rules presets")
    p.set_defaults(func=cmd_rules)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
