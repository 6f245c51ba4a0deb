"""Determinized Monte Carlo search over the public information of one seat."""

from __future__ import annotations

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.agents.scripted import StrategicAgent, StrategyWeights
from block_env.engine import PublicView, Round
from block_env.rules import Rules
from block_env.tiles import bit_indices, ends_after

PLAYOUTS = ("greedy", "heuristic", "random")
PRIORS = ("strategic", "none")
#: Tries at a deal that respects every shown void; the last one ignores voids (a last resort).
SAMPLE_ATTEMPTS = 20
PLAYOUT_WEIGHTS = StrategyWeights()


class SearchAgent(Agent):
    """Determinized Monte Carlo: sample hidden deals consistent with everything public
    (hand counts, tiles out of play or unseen, voids shown by passes), play every legal
    move in each sampled world, finish the round with a fast playout policy, and choose the
    move with the best mean round value for its side (zero-sum points). With the strategic
    prior it keeps the strategic agent's move unless the search's best move beats it on the
    same sampled worlds by more than ``confidence`` standard errors.

    Args:
        worlds: deals sampled per decision (the budget; each world plays every legal move).
        playout: "greedy" (heaviest tile first), "heuristic" (heavy tiles, doubles, and
            keeping tiles that follow the new ends), each with ``epsilon`` random moves; or
            "random".
        epsilon: probability of a random move inside greedy and heuristic playouts.
        prior: "strategic" (default) or "none".
        confidence: standard errors the search's best move must win by to override the prior.
    """

    name = "search"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        observation: str = "vector",
        worlds: int = 96,
        playout: str = "heuristic",
        epsilon: float = 0.15,
        prior: str = "strategic",
        confidence: float = 1.0,
    ) -> None:
        super().__init__(rules, seed, observation)
        if not isinstance(worlds, int) or worlds < 1:
            raise ValueError(f"search worlds must be a positive int, got {worlds!r}")
        if playout not in PLAYOUTS:
            raise ValueError(f"search playout must be one of {PLAYOUTS}, got {playout!r}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"search epsilon must be in 0..1, got {epsilon!r}")
        if prior not in PRIORS:
            raise ValueError(f"search prior must be one of {PRIORS}, got {prior!r}")
        if not isinstance(confidence, (int, float)) or confidence < 0:
            raise ValueError(f"search confidence must be a non-negative number, got {confidence!r}")
        self.prior = StrategicAgent(rules, seed, observation) if prior == "strategic" else None
        self.confidence = float(confidence)
        self.worlds = worlds
        self.playout = playout
        self.epsilon = 1.0 if playout == "random" else epsilon
        ts = rules.tile_set
        # Greedy playout key per action: pips, doubles first; the pass sorts last.
        self._key = [
            (2 * ts.pips[a >> 1] + (ts.tiles[a >> 1][0] == ts.tiles[a >> 1][1])) if a < ts.pass_action else -1
            for a in range(ts.num_actions)
        ]
        self._tile_suits = [(1 << a) | (1 << b) for a, b in ts.tiles]

    def act(self, obs: Observation) -> int:
        legal = legal_actions(obs)
        if len(legal) == 1:
            return legal[0]
        k = self.view(obs)
        # values[j][w]: the round value of move j in sampled world w (common worlds, so
        # moves are compared on the same deals).
        values = [[0.0] * self.worlds for _ in legal]
        for w in range(self.worlds):
            world = self.sample_world(k)
            for j, action in enumerate(legal):
                rnd = world.copy()
                rnd.apply(action)
                self._play_out(rnd)
                values[j][w] = self._value(rnd)
        means = [sum(v) / self.worlds for v in values]
        best = means.index(max(means))
        if self.prior is None:
            return legal[best]
        # Keep the strategic move unless search finds a better one with some confidence:
        # the paired mean difference must exceed ``confidence`` standard errors.
        scores = [self.prior.score(k, a) for a in legal]
        default = scores.index(max(scores))
        if best == default or self.worlds < 2:
            return legal[best]
        diffs = [b - d for b, d in zip(values[best], values[default])]
        mean = sum(diffs) / len(diffs)
        var = sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1)
        return legal[best] if mean > self.confidence * (var / len(diffs)) ** 0.5 else legal[default]

    def sample_world(self, k: PublicView) -> Round:
        """One deal of the unseen tiles consistent with the public record, as a Round with
        this seat as seat 0 (seats stay relative)."""
        rules = self.rules
        n = rules.num_players
        rng = self.rng
        unseen = bit_indices(k.unseen)
        # Most constrained seats first, so voids rarely make the deal impossible.
        order = sorted(range(1, n), key=lambda r: -k.voids[r].bit_count())
        for attempt in range(SAMPLE_ATTEMPTS):
            pool = unseen[:]
            rng.shuffle(pool)
            hands = [0] * n
            hands[0] = k.hand
            ok = True
            for r in order:
                void = k.voids[r] if attempt < SAMPLE_ATTEMPTS - 1 else 0  # last resort: ignore voids
                need = k.hand_counts[r]
                chosen = [t for t in pool if not self._tile_suits[t] & void][:need]
                if len(chosen) < need:
                    ok = False
                    break
                taken = set(chosen)
                pool = [t for t in pool if t not in taken]
                hands[r] = sum(1 << t for t in chosen)
            if ok:
                break
        return Round.from_position(
            rules,
            hands,
            ends=k.ends,
            played=k.played,
            current=0,
            leader=k.leader,
            passes=k.passes,
            voids=k.voids,
        )

    def _play_out(self, rnd: Round) -> None:
        rng = self.rng
        key = self._key
        eps = self.epsilon
        heuristic = self.playout == "heuristic"
        while rnd.result is None:
            legal = rnd.legal_actions()
            if len(legal) == 1:
                rnd.apply(legal[0])
            elif rng.random() < eps:
                rnd.apply(legal[rng.randrange(len(legal))])
            elif heuristic:
                rnd.apply(max(legal, key=lambda a: self._heuristic(rnd, a)))
            else:
                rnd.apply(max(legal, key=key.__getitem__))

    def _heuristic(self, rnd: Round, action: int) -> float:
        """Heavy tiles first, doubles early, and keep tiles of my own for the new ends: the
        strategic agent's first three weights, without its reading of the table."""
        w = PLAYOUT_WEIGHTS
        ts = rnd.tiles
        i = action >> 1
        x, y = ts.tiles[i]
        hand = rnd.hands[rnd.current] & ~(1 << i)
        ends = ends_after(ts, rnd.ends, action)
        mine = (hand & (ts.suit_masks[ends[0]] | ts.suit_masks[ends[1]])).bit_count()
        return w.pips * (x + y) + w.double * (x == y) + w.control * mine

    def _value(self, rnd: Round) -> float:
        """Zero-sum round value for my side (side 0: relative seats keep sides)."""
        assert rnd.result is not None
        return rnd.result.side_values("zero_sum")[0]
