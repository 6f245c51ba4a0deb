"""The browser app under load: many players at once, each creating games and playing whole
rounds through the JSON API against random, greedy, policy and search opponents.

Starts ``block-dominoes serve`` (``--workers`` processes sharing a fresh SQLite store) on a
free loopback port, runs ``--players`` client threads for ``--seconds`` (each plays round after
round: create a game, then move until it is over, reading the view after every move; each
player is its own address, forwarded as a reverse proxy would), then prints one table:
requests/s, p50/p99 latency of every request and of the cheap ones (views) alone, rounds/s,
the status codes seen and the server's peak memory (the sum over its processes of each one's
peak). With several ``--workers`` values it runs each in turn and prints them side by side.
Traffic goes to 127.0.0.1 only, and the run stops by itself.

    python benchmarks/load_web.py [--players 200] [--seconds 30] [--workers 1 2] [--new-games-per-minute 600]
        [--markdown out.md]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from report_table import add_markdown_argument, show

OPPONENTS = ["random", "greedy", "pretrained:standard_vector", "search"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Player(threading.Thread):
    """One person at the table: plays round after round until ``stop`` is set."""

    def __init__(self, port: int, index: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.index, self.stop = port, index, stop
        # Each player its own address, as a reverse proxy in front would forward it (uvicorn
        # trusts X-Forwarded-For from 127.0.0.1): the per-address limit sees one person each.
        self.address = f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"
        self.latencies: list[tuple[str, float]] = []  # (kind, seconds)
        self.statuses: Counter[int] = Counter()
        self.rounds = 0

    def call(self, conn: http.client.HTTPConnection, kind: str, method: str, path: str, body: object = None) -> dict:
        payload = None if body is None else json.dumps(body)
        headers = {"X-Forwarded-For": self.address, **({"Content-Type": "application/json"} if payload else {})}
        started = time.perf_counter()
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        self.latencies.append((kind, time.perf_counter() - started))
        self.statuses[response.status] += 1
        return json.loads(data)

    def play_round(self, conn: http.client.HTTPConnection, seed: int) -> None:
        """Create a game and play it to the end, reading the view after every move."""
        opponent = OPPONENTS[self.index % len(OPPONENTS)]
        view = self.call(conn, "create", "POST", "/api/games", {"seed": seed, "opponents": [opponent]})
        if "id" not in view:  # refused (429, 503): wait a little, as a person would
            self.stop.wait(1.0)
            return
        while not view["over"] and not self.stop.is_set():
            moves = [m["action"] for tile in view["hand"] for m in tile["moves"]]
            action = moves[0] if moves else view["pass_action"]
            view = self.call(conn, "move", "POST", f"/api/games/{view['id']}/move", {"action": action})
            if "id" not in view:
                return
            view = self.call(conn, "view", "GET", f"/api/games/{view['id']}")
        if view.get("over"):
            self.rounds += 1

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        seed = self.index * 1000
        while not self.stop.is_set():
            self.play_round(conn, seed)
            seed += 1
        conn.close()


def peak_memory_mib(pid: int) -> float:
    """The peak resident memory (VmHWM) of the process and its children, summed, in MiB."""
    total = 0.0
    pids = [pid, *children(pid)]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


def children(pid: int) -> list[int]:
    """Every descendant of the process (uvicorn's workers and their helpers)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            found += [int(child), *children(int(child))]
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(players_count: int, seconds: float, workers: int, per_minute: int) -> list[tuple[str, str]]:
    """One run against a server of ``workers`` processes: the table's rows."""
    port = free_port()
    data = tempfile.mkdtemp(prefix="load_web_")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "block_env.cli",
            "serve",
            "--port",
            str(port),
            "--data",
            data,
            "--workers",
            str(workers),
            "--new-games-per-minute",
            str(per_minute),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(300):  # wait until it answers
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/api/options")
                break
            except OSError:
                time.sleep(0.1)
        # A few rounds against each opponent first: compiling the kernels and loading the policy
        # happen once per worker process, not in the measured time.
        for i in range(len(OPPONENTS) * 2 * workers):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            Player(port, i, threading.Event()).play_round(conn, seed=i)
            conn.close()
        stop = threading.Event()
        players = [Player(port, i, stop) for i in range(players_count)]
        started = time.perf_counter()
        for p in players:
            p.start()
        time.sleep(seconds)
        stop.set()
        for p in players:
            p.join(timeout=120)
        elapsed = time.perf_counter() - started
        memory = peak_memory_mib(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)

    every = [s for p in players for _, s in p.latencies]
    views = [s for p in players for kind, s in p.latencies if kind == "view"]
    statuses = sum((p.statuses for p in players), Counter())
    rounds = sum(p.rounds for p in players)
    return [
        ("players (threads), opponents", f"{players_count}, {' / '.join(OPPONENTS)} in turn"),
        ("worker processes, new games a minute per address", f"{workers}, {per_minute}"),
        ("seconds", f"{elapsed:.1f}"),
        ("requests", f"{len(every):,}"),
        ("requests/s", f"{len(every) / elapsed:,.1f}"),
        (
            "latency p50 / p99, every request (ms)",
            f"{1000 * percentile(every, 0.5):.1f} / {1000 * percentile(every, 0.99):.1f}",
        ),
        (
            "latency p50 / p99, views only (ms)",
            f"{1000 * percentile(views, 0.5):.1f} / {1000 * percentile(views, 0.99):.1f}",
        ),
        ("rounds played", f"{rounds:,}"),
        ("rounds/s", f"{rounds / elapsed:,.2f}"),
        ("status codes", ", ".join(f"{code}: {n:,}" for code, n in sorted(statuses.items()))),
        ("5xx answers", f"{sum(n for code, n in statuses.items() if code >= 500)}"),
        ("server peak memory, all processes (MiB)", f"{memory:,.0f}"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="server worker processes, one run each")
    parser.add_argument(
        "--new-games-per-minute",
        type=int,
        default=600,
        help="the server's per-address limit (default 600: these players finish a round in seconds, a person in minutes)",
    )
    add_markdown_argument(parser)
    args = parser.parse_args()

    runs = [measure(args.players, args.seconds, w, args.new_games_per_minute) for w in args.workers]
    header = "| measured | " + " | ".join(f"{w} worker(s)" for w in args.workers) + " |"
    lines = [header, "|---|" + "---:|" * len(runs)]
    for i, (name, _) in enumerate(runs[0]):
        lines.append(f"| {name} | " + " | ".join(run[i][1] for run in runs) + " |")
    table = "\n".join(lines)
    show(table, args.markdown)
    return 1 if any(run[10][1] != "0" for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
