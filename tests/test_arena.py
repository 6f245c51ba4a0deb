"""The arena: duplicate deals, statistics, ratings, outputs and the console commands."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import pytest

from block_env import RoundResult, Rules
from block_env.arena import ArenaConfig, mean_ci, play_deal, run_arena, summarize, write_outputs
from block_env.arena.config import rotations, tables
from block_env.cli import main


def test_tables_and_rotations_seat_every_agent_everywhere():
    assert tables(4, Rules()) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert tables(4, Rules(num_players=3))[0] == (0, 1, 2) and len(tables(4, Rules(num_players=3))) == 4
    assert tables(3, Rules.preset("partnership")) == [(0, 1, 0, 1), (0, 2, 0, 2), (1, 2, 1, 2)]
    assert tables(2, Rules(num_players=3)) == [(0, 1, 0)]
    assert rotations((0, 1, 2)) == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    assert rotations((0, 1, 0, 1)) == [(0, 1, 0, 1), (1, 0, 1, 0)]


def test_first_deal_plays_the_deals_a_shorter_run_did_not():
    short = ArenaConfig(agents=("random", "greedy"), deals=3, seed=4)
    longer = ArenaConfig(agents=("random", "greedy"), deals=7, seed=4)
    rest = run_arena(longer, progress=False, first_deal=3)
    assert {r["deal"] for r in rest} == {3, 4, 5, 6}
    assert run_arena(short, progress=False) + rest == run_arena(longer, progress=False)
    with pytest.raises(ValueError, match=r"first_deal must be an int in \[0, deals=7\), got 7"):
        run_arena(longer, progress=False, first_deal=7)


@pytest.mark.parametrize("preset, episode", [("standard_3p", "round"), ("partnership", "round"), ("standard", "match")])
def test_duplicate_deals_are_identical_across_rotations(preset, episode):
    rules = Rules.preset(preset)
    config = ArenaConfig(agents=("random", "greedy", "strategic"), rules=rules, episode=episode, deals=2)
    records = play_deal(config, deal=0, seed=12345)
    firsts = {json.dumps(r["first_deal"]) for r in records}
    assert len(firsts) == 1  # same hands and leader at every table and seating
    for table in {r["table"] for r in records}:
        seatings = [tuple(r["seating"]) for r in records if r["table"] == table]
        for seat in range(rules.num_players):  # each agent of the table sits in each seat
            assert {s[seat] for s in seatings} == set(seatings[0])
    other = play_deal(config, deal=1, seed=54321)
    assert json.dumps(other[0]["first_deal"]) not in firsts


def test_mean_ci_arithmetic():
    est = mean_ci([1.0, 2.0, 3.0, 4.0])
    sd = math.sqrt(sum((x - 2.5) ** 2 for x in [1, 2, 3, 4]) / 3)
    assert est.mean == 2.5 and est.n == 4
    assert est.high - est.mean == pytest.approx(1.959964 * sd / 2)
    assert mean_ci([0.9, 1.0, 1.0], clip=(0.0, 1.0)).high == 1.0
    assert math.isnan(mean_ci([]).mean)
    single = mean_ci([3.0])  # one deal: no interval to measure, and the text says so
    assert (single.mean, single.low, single.high) == (3.0, 3.0, 3.0) and single.fmt() == "3.0 (one deal: no interval)"
    assert not mean_ci([0.2, 0.4, 0.6], clip=(0.0, 1.0)).clipped  # nothing cut: mean ± x
    clipped = mean_ci([0.0] + [1.0] * 7, clip=(0.0, 1.0))  # the upper bound cut at 100%
    assert clipped.high == 1.0 and clipped.fmt(percent=True) == f"87.5% ({clipped.low * 100:.1f} .. 100.0)"


def _record(deal, seating, winning_side, award=10):
    result = RoundResult(
        end="domino" if winning_side is not None else "blocked",
        winner=winning_side,
        winning_side=winning_side,
        award=award,
        doubled=False,
        hand_pips=(0, 0),
        side_pips=(0, 0),
    )
    return {
        "deal": deal,
        "table": 0,
        "seating": seating,
        "rounds": [result.as_dict()],
        "first_deal": {},
        "match_winner_side": None,
    }


def test_summary_statistics_head_to_head_and_ratings_on_known_records():
    """Agent 0 wins every round in both seats: its rates, margins and rating show it."""
    config = ArenaConfig(agents=("random", "greedy"), deals=3)
    records = []
    for deal in range(3):
        records.append(_record(deal, [0, 1], winning_side=0, award=10 + deal))
        records.append(_record(deal, [1, 0], winning_side=1, award=10 + deal))
    report = summarize(config, records)
    winner, loser = report.agents
    assert winner.round_win_rate.mean == 1.0 and loser.round_win_rate.mean == 0.0
    assert winner.points_per_round.mean == pytest.approx(11.0)
    assert winner.net_per_round.mean == pytest.approx(11.0) and loser.net_per_round.mean == pytest.approx(-11.0)
    assert report.head_to_head["random"]["greedy"].mean == pytest.approx(11.0)
    assert report.head_to_head["greedy"]["random"].mean == pytest.approx(-11.0)
    assert winner.rating is not None and loser.rating is not None and winner.rating > loser.rating
    assert winner.seat_rounds == 6


def test_an_agent_no_round_rated_has_no_rating_in_any_output(tmp_path):
    """Two agents at three seats: every table seats one agent on two sides, so no round is a
    contest and neither agent is rated. The outputs say so (n/a, empty cells, null), not the prior's 0.0."""
    config = ArenaConfig(agents=("random", "greedy"), deals=1, rules=Rules(num_players=3))
    records = [_record(0, seating, winning_side=0, award=5) for seating in ([0, 1, 1], [1, 0, 0])]
    for record in records:
        record["rounds"][0] |= {"hand_pips": [0, 3, 2], "side_pips": [0, 3, 2]}
    report = summarize(config, records)
    assert [a.rating for a in report.agents] == [None, None]
    paths = write_outputs(report, tmp_path)
    rows = [line for line in paths["markdown"].read_text().splitlines() if line.startswith("| `")][:2]
    assert all(row.split(" | ")[-2] == "n/a" for row in rows), rows
    table = list(csv.DictReader(paths["csv"].open()))
    assert [(r["rating"], r["rating_mu"], r["rating_sigma"]) for r in table] == [("", "", "")] * 2
    assert [a["rating"] for a in json.loads(paths["json"].read_text())["agents"]] == [None, None]


def test_tied_block_counts_as_no_win_and_zero_net():
    config = ArenaConfig(agents=("random", "greedy"), deals=1)
    report = summarize(config, [_record(0, [0, 1], winning_side=None, award=0)])
    for a in report.agents:
        assert a.round_win_rate.mean == 0.0 and a.net_per_round.mean == 0.0


def test_arena_is_seeded_and_parallel_runs_agree(tmp_path):
    config = ArenaConfig(agents=("random", "greedy"), deals=4, seed=3, workers=1)
    serial = run_arena(config, progress=True)
    parallel = run_arena(ArenaConfig(agents=("random", "greedy"), deals=4, seed=3, workers=2), progress=False)
    assert serial == parallel
    report = summarize(config, serial)
    paths = write_outputs(report, tmp_path / "out")
    assert paths["chart"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(paths["csv"].open()))
    assert {r["agent"] for r in rows} == {"random", "greedy"}
    assert json.loads(paths["json"].read_text())["config"]["deals"] == 4
    assert "| `greedy` |" in paths["markdown"].read_text()
    assert all(r["net_low"] and r["net_high"] for r in rows)
    # From one deal there is no interval: its cells stay empty rather than read as no spread.
    one = ArenaConfig(agents=("random", "greedy"), deals=1, seed=3, workers=1)
    rows = list(csv.DictReader(write_outputs(summarize(one, run_arena(one)), tmp_path / "one")["csv"].open()))
    assert all(r["net_per_round"] and not r["net_low"] and not r["net_high"] for r in rows)


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return max((pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"), default=1)


def test_arena_workers_hold_numpy_blas_to_one_thread():
    """Each arena worker holds one core: its BLAS runs one thread (guided searches batch their
    network's moves, and a second thread per process only waits for a core)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from block_env.arena.play import one_blas_thread

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=one_blas_thread) as pool:
        assert pool.submit(_blas_threads).result() == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"agents": ("random",)}, "at least 2 agents"),
        ({"agents": ("random", "random")}, "distinct"),
        ({"agents": ("random", "human")}, "unattended"),
        ({"agents": ("random", "wizard")}, "unknown agent 'wizard'"),
        ({"agents": ("random", "greedy"), "deals": 0}, "deals must be an int >= 1"),
        ({"agents": ("random", "greedy"), "episode": "game"}, "episode must be one of"),
    ],
)
def test_arena_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ArenaConfig(**kwargs)


def test_eval_command_end_to_end(tmp_path, capsys):
    out = tmp_path / "eval"
    code = main(
        [
            "eval",
            "--agents",
            "random",
            "greedy",
            "search:worlds=2",
            "--rules",
            "standard_3p",
            "--deals",
            "3",
            "--workers",
            "2",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "round win rate" in printed and "`search:worlds=2`" in printed
    assert {p.name for p in out.iterdir()} == {"summary.md", "summary.csv", "report.json", "chart.png", "records.jsonl"}
    # points and margins to hundredths (close agents differ by a few), as report.json holds them
    head_to_head = json.loads((out / "report.json").read_text())["head_to_head"]
    margin = head_to_head["greedy"]["search:worlds=2"]
    cell = f"{margin['mean']:.2f} ± {(margin['high'] - margin['low']) / 2:.2f}"
    greedy_rows = [line for line in (out / "summary.md").read_text().splitlines() if line.startswith("| `greedy` |")]
    assert cell in greedy_rows[-1]  # the head-to-head table's row


def test_eval_command_match_mode_reports_match_win_rate(tmp_path, capsys):
    assert (
        main(
            [
                "eval",
                "--agents",
                "random",
                "greedy",
                "--episode",
                "match",
                "--deals",
                "2",
                "--workers",
                "1",
                "--out",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    assert "match win rate" in capsys.readouterr().out


def test_eval_command_refuses_bad_input(tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--agents", "random", "wizard", "--deals", "1", "--out", str(tmp_path)])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        main(["eval", "--agents", "random", "greedy", "--deals", "0"])


def test_play_command_in_a_real_terminal_session():
    """`block-dominoes play` with a person typing "1" at every prompt."""
    proc = subprocess.run(
        [sys.executable, "-m", "block_env.cli", "play", "--episode", "round", "--seed", "4", "--opponents", "greedy"],
        input="x\n" + "1\n" * 40,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "You are player_0" in proc.stdout
    assert "Line:" in proc.stdout and "Your hand:" in proc.stdout
    assert "Round 1 over" in proc.stdout


def test_encodings_and_rules_commands(capsys):
    assert main(["encodings", "--rules", "partnership"]) == 0
    text = capsys.readouterr().out
    assert "#### `vector`" in text and "| `voids` |" in text and "(4, 7)" in text
    assert main(["rules"]) == 0
    assert "house_3p" in capsys.readouterr().out


def test_threads_play_deals_at_once_each_in_an_env_of_its_own():
    """play_deal keeps one env per thread: four threads playing deals at the same time each
    get an env of their own and the records the deals give one after another."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from block_env.arena.deals import arena_env

    config = ArenaConfig(agents=("greedy", "random", "strategic"), rules="standard_3p", deals=1, seed=0)
    start = threading.Barrier(4)  # every thread holds its env before any plays

    def play_three(first: int) -> tuple[int, list]:
        env = arena_env(config.rules, config.episode)
        start.wait(timeout=30)
        return id(env), [play_deal(config, deal, deal) for deal in range(first, first + 3)]

    with ThreadPoolExecutor(4) as pool:
        played = list(pool.map(play_three, [0, 3, 6, 9]))
    assert len({env for env, _ in played}) == 4
    assert [records for _, batch in played for records in batch] == [play_deal(config, d, d) for d in range(12)]
    assert arena_env(config.rules, config.episode) is arena_env(config.rules, config.episode)


def test_redirected_progress_prints_a_line_per_interval_and_at_the_end(capsys):
    from block_env.arena.play import plain_progress

    now = [0.0]
    advance = plain_progress(10, "deals", every=30.0, clock=lambda: now[0])
    for _ in range(4):  # 4 deals in 20 s: no line yet
        now[0] += 5.0
        advance()
    assert capsys.readouterr().out == ""
    now[0] += 10.0  # 30 s since the start
    advance()
    assert capsys.readouterr().out == "deals: 5/10 (50%), 0:00:30 elapsed, about 0:00:30 left\n"
    for _ in range(5):  # the last deal prints however soon it comes
        advance()
    assert capsys.readouterr().out == "deals: 10/10 (100%), 0:00:30 elapsed\n"


def test_a_progress_bar_where_output_is_redirected_prints_plain_lines(capsys):
    from block_env.arena.play import progress_bar

    with progress_bar(True, 3, "teacher decisions") as advance:
        advance(3)
    assert capsys.readouterr().out.startswith("teacher decisions: 3/3 (100%)")


@pytest.mark.parametrize(
    "rules, agents",
    [("standard_3p", ("greedy", "greedy:")), ("standard_4p", ("greedy", "greedy:", "greedy:observation=vector"))],
)
def test_with_fewer_agents_than_seats_every_seat_of_an_agent_counts_head_to_head(rules, agents):
    """Copies of one deterministic agent play every rotation of a table the same way, so any
    margin between them is the seats' luck, which counting all of an agent's seats cancels."""
    from block_env.arena import evaluate

    report = evaluate(list(agents), rules, deals=12, seed=2, workers=1, progress=False)
    for a in agents:
        for b in agents:
            if a != b:
                assert report.head_to_head[a][b].mean == 0.0 and report.head_to_head[a][b].n == 12


def test_resuming_another_arena_run_names_what_differs(tmp_path):
    from block_env.arena import evaluate_into

    config = ArenaConfig(agents=("random", "greedy"), deals=2, seed=1, workers=1)
    evaluate_into(config, tmp_path, progress=False)
    other = ArenaConfig(agents=("random", "greedy"), deals=2, seed=1, workers=1, episode="match")
    with pytest.raises(ValueError, match=r"another arena run \(episode differs\): cannot resume it"):
        evaluate_into(other, tmp_path, resume=True, progress=False)
    other = ArenaConfig(agents=("random", "greedy"), deals=3, seed=2, workers=1)
    with pytest.raises(ValueError, match=r"another arena run \(deals, seed differ\)"):
        evaluate_into(other, tmp_path, resume=True, progress=False)
    records = tmp_path / "records.jsonl"
    records.write_text("[1, 2]\n" + records.read_text().split("\n", 1)[1])
    with pytest.raises(ValueError, match=r"its first line is not an arena run's settings"):
        evaluate_into(config, tmp_path, resume=True, progress=False)


def test_the_chart_gives_agents_whose_names_end_alike_a_row_each(tmp_path, monkeypatch):
    """Long names are cut to fit; two that end alike must still be two bars, not one."""
    import dataclasses

    import matplotlib.axes

    from block_env.arena.report import _chart

    config = ArenaConfig(agents=("random", "greedy"), deals=2, seed=1, workers=1)
    report = summarize(config, run_arena(config))
    tail = "/" + "x" * 40  # two run folders whose last 40 characters agree
    renamed = [dataclasses.replace(a, agent=f"run-{i}{tail}") for i, a in enumerate(report.agents)]
    drawn = []
    barh = matplotlib.axes.Axes.barh
    monkeypatch.setattr(
        matplotlib.axes.Axes, "barh", lambda ax, y, *a, **k: drawn.append(list(y)) or barh(ax, y, *a, **k)
    )
    _chart(dataclasses.replace(report, agents=renamed), tmp_path / "chart.png")
    assert drawn == [[0, 1], [0, 1]] and (tmp_path / "chart.png").is_file()


def test_the_ladder_benchmark_reads_each_margin_from_its_arena_and_times_every_agent(tmp_path, monkeypatch):
    """benchmarks/ladder.py: one row per agent, search first as the reference, each margin the
    arena's head-to-head figure against search, each time measured; the table names them all."""
    import argparse

    from conftest import load_benchmark

    ladder = load_benchmark("ladder", monkeypatch)
    args = argparse.Namespace(
        rules="standard",
        agents=["random", "greedy"],
        deals=4,
        seed=3,
        workers=1,
        decisions=45,
        passes=1,
        out=str(tmp_path),
        quiet=True,
    )
    rows = ladder.ladder_rows(args)
    assert [row["agent"] for row in rows] == ["search", "random", "greedy"]
    assert rows[0]["margin"] is None and all(row["seconds"] > 0 for row in rows)
    report = json.loads((tmp_path / "report.json").read_text())["head_to_head"]
    for row in rows[1:]:
        assert row["margin"].mean == pytest.approx(report[row["agent"]]["search"]["mean"])
    table = ladder.write(rows, args)
    assert all(f"| `{name}` |" in table for name in ("search", "random", "greedy"))
    assert (tmp_path / "ladder.csv").read_text().count("\n") == 4  # a header and three agents
