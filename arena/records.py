"""The arena's records file: one JSON line per finished deal, after a first line with the
run's config. It is what ``--resume`` continues from: a run that was stopped (Ctrl-C, a
killed process, a lost machine) plays only the deals that are not in it, and a last line
cut short by the stop is detected and its deal played again.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from block_env.arena.config import ArenaConfig
from block_env.files import write_atomically

#: The file in an arena's output folder that holds every finished deal's records.
RECORDS_FILE = "records.jsonl"


def config_key(config: ArenaConfig) -> dict[str, Any]:
    """What must match for records to be resumed: everything but the worker count."""
    return {**asdict(config), "rules": asdict(config.rules), "agents": list(config.agents), "workers": None}


def open_records(path: Path, config: ArenaConfig, resume: bool) -> dict[int, list[dict[str, Any]]]:
    """The deals already recorded in ``path`` (resume), or a fresh file with the config line."""
    if not resume or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps({"config": config_key(config)}) + "\n")
        return {}
    lines = path.read_text().splitlines()
    try:
        header = json.loads(lines[0])["config"] if lines else None
    except (json.JSONDecodeError, KeyError, TypeError):
        header = None
    wanted = json.loads(json.dumps(config_key(config)))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: its first line is not an arena run's settings: cannot resume it")
    if header != wanted:
        differ = sorted(key for key in wanted.keys() | header.keys() if header.get(key) != wanted.get(key))
        verb = "differs" if len(differ) == 1 else "differ"
        raise ValueError(f"{path} was written by another arena run ({', '.join(differ)} {verb}): cannot resume it")
    done: dict[int, list[dict[str, Any]]] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            entry = json.loads(line)
            done[int(entry["deal"])] = entry["records"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if number == len(lines):
                break  # a last line cut short by the interruption: that deal is played again
            raise ValueError(f"{path}: line {number} is not a deal's records") from None
    # Rewrite without a cut-short last line, so appends continue a clean file.
    write_atomically(
        path, "\n".join([lines[0], *(json.dumps({"deal": d, "records": r}) for d, r in sorted(done.items()))]) + "\n"
    )
    return done


def append_deal(path: Path, deal: int, records: list[dict[str, Any]]) -> None:
    """Append one finished deal's records as one line, flushed to disk before returning."""
    with open(path, "a") as f:
        f.write(json.dumps({"deal": deal, "records": records}) + "\n")
        f.flush()
        os.fsync(f.fileno())
