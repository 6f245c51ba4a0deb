"""Soak: a million random rounds across every preset, checking invariants at every round's end.

Through the batched engine (round and match episodes) and, for a share of the rounds, the AEC
env. At each round's end it checks, independently of the engine's own scoring:

- tiles conserved: every dealt tile is in a hand or in the line, none twice;
- the award per docs/rules.md, recomputed from the hands: a domino scores every opponent's pips
  (doubled only under club rules), a blocked round the unique lightest side's margin, a tie
  nobody; the hand and side pips agree;
- the zero-sum reward values sum to zero over the sides;
- match scores never decrease within a match (and the AEC env's rewards are zero-sum).

    python benchmarks/soak.py [--rounds 1000000] [--aec-rounds 24000] [--games 4096]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from block_env import PRESETS, Rules, raw_env
from block_env.batched import BLOCKED, DOMINO, PLAYED, BatchedGames, BatchResults, random_legal_actions


def check_results(rules: Rules, engine: BatchedGames, results: BatchResults) -> None:
    g = results.games
    owner = engine.owner[g]
    dealt = rules.num_players * rules.resolved_hand_size
    held = (owner >= 0).sum(axis=1) + (owner == PLAYED).sum(axis=1)
    assert (held == dealt).all(), "tiles not conserved"
    pips = engine.tables.pips
    for seat in range(rules.num_players):
        assert ((owner == seat) @ pips == results.hand_pips[:, seat]).all(), "hand pips"
    side_pips = np.zeros_like(results.side_pips)
    for seat in range(rules.num_players):
        side_pips[:, rules.side_of(seat)] += results.hand_pips[:, seat]
    assert (side_pips == results.side_pips).all(), "side pips"
    total = side_pips.sum(axis=1)
    for j in range(len(g)):
        side, award = results.winning_side[j], results.award[j]
        if results.end[j] == DOMINO:
            expected = total[j] - side_pips[j, side]
            assert award == expected * (2 if results.doubled[j] else 1), "domino award"
            assert rules.club_doubling or not results.doubled[j], "doubled without club rules"
        else:
            assert results.end[j] == BLOCKED
            lowest = side_pips[j].min()
            if (side_pips[j] == lowest).sum() > 1:
                assert side == -1 and award == 0, "a tied block scores nobody"
            else:
                others = total[j] - lowest
                expected = others - lowest if rules.blocked_scoring == "subtract_own" else others
                assert side == side_pips[j].argmin() and award == expected, "blocked award"
    values = results.side_values("zero_sum")
    assert np.allclose(values.sum(axis=1), 0.0), "zero-sum values"


def soak_batched(rules: Rules, episode: str, rounds: int, games: int, seed: int) -> int:
    engine = BatchedGames(rules, games, episode=episode, seed=seed)
    rng = np.random.default_rng(seed)
    done = 0
    while done < rounds:
        before = engine.scores.copy()
        results = engine.step(random_legal_actions(engine.legal_mask(), rng), check=False)
        check_results(rules, engine, results)
        assert (engine.scores >= before).all(), "a match score decreased"
        engine.advance(results.games)
        done += len(results.games)
    return done


def soak_aec(rules: Rules, rounds: int, seed: int) -> int:
    env = raw_env(rules, episode="match")
    rng = np.random.default_rng(seed)
    done = 0
    env.reset(seed=seed)
    while done < rounds:
        if all(env.terminations.values()):
            env.reset()
        scores = env.scores
        env.step(int(rng.choice(env.legal_actions())))
        assert all(a >= b for a, b in zip(env.scores, scores)), "a match score decreased"
        if any(env.rewards.values()):
            assert abs(sum(env.rewards.values())) < 1e-9, "rewards not zero-sum"
            done += 1
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1_000_000, help="batched rounds in all, over every preset")
    parser.add_argument("--aec-rounds", type=int, default=24_000, help="AEC rounds in all, over every preset")
    parser.add_argument("--games", type=int, default=4096)
    args = parser.parse_args()
    per_preset = args.rounds // (2 * len(PRESETS)) + 1
    aec_per_preset = args.aec_rounds // len(PRESETS) + 1
    lines = ["| preset | batched rounds (round + match episodes) | AEC rounds | seconds |", "|---|---:|---:|---:|"]
    totals = [0, 0, 0.0]
    for i, (name, rules) in enumerate(PRESETS.items()):
        start = time.perf_counter()
        batched = sum(soak_batched(rules, ep, per_preset, args.games, seed=i) for ep in ("round", "match"))
        aec = soak_aec(rules, aec_per_preset, seed=i)
        seconds = time.perf_counter() - start
        lines.append(f"| `{name}` | {batched:,} | {aec:,} | {seconds:.1f} |")
        totals = [totals[0] + batched, totals[1] + aec, totals[2] + seconds]
        print(lines[-1], flush=True)
    lines.append(f"| all | {totals[0]:,} | {totals[1]:,} | {totals[2]:.1f} |")
    print("\n".join(lines))
    print(f"\nevery invariant held over {totals[0] + totals[1]:,} rounds")


if __name__ == "__main__":
    main()
