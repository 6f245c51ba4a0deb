"""Determinized Monte Carlo search over the public information of one seat."""

from __future__ import annotations

from block_env.agents.base import Agent, Knowledge, Observation, legal_actions
from block_env.engine import Round
from block_env.rules import Rules
from block_env.tiles import bit_indices


class SearchAgent(Agent):
    """Determinized Monte Carlo: sample hidden deals consistent with everything public
    (hand counts, tiles out of play or unseen, voids shown by passes), play every legal
    move in each sampled world, finish the round with a fast playout policy, and choose the
    move with the best mean round value for its side (zero-sum points).

    Args:
        worlds: deals sampled per decision (the budget; each world plays every legal move).
        playout: "greedy" (heaviest tile first, with ``epsilon`` random moves) or "random".
        epsilon: probability of a random move inside greedy playouts.
    """

    name = "search"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        observation: str = "vector",
        worlds: int = 48,
        playout: str = "greedy",
        epsilon: float = 0.15,
    ) -> None:
        super().__init__(rules, seed, observation)
        if not isinstance(worlds, int) or worlds < 1:
            raise ValueError(f"search worlds must be a positive int, got {worlds!r}")
        if playout not in ("greedy", "random"):
            raise ValueError(f"search playout must be 'greedy' or 'random', got {playout!r}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"search epsilon must be in 0..1, got {epsilon!r}")
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
        k = self.knowledge(obs)
        totals = [0.0] * len(legal)
        for _ in range(self.worlds):
            world = self.sample_world(k)
            for j, action in enumerate(legal):
                rnd = world.copy()
                rnd.apply(action)
                self._play_out(rnd)
                totals[j] += self._value(rnd)
        return legal[totals.index(max(totals))]

    def sample_world(self, k: Knowledge) -> Round:
        """One deal of the unseen tiles consistent with the public record, as a Round with
        this seat as seat 0 (seats stay relative)."""
        rules = self.rules
        n = rules.num_players
        rng = self.rng
        unseen = bit_indices(k.unseen)
        # Most constrained seats first, so voids rarely make the deal impossible.
        order = sorted(range(1, n), key=lambda r: -k.voids[r].bit_count())
        for attempt in range(20):
            pool = unseen[:]
            rng.shuffle(pool)
            hands = [0] * n
            hands[0] = k.hand
            ok = True
            for r in order:
                void = k.voids[r] if attempt < 19 else 0  # last resort: ignore voids
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
        while rnd.result is None:
            legal = rnd.legal_actions()
            if len(legal) == 1:
                rnd.apply(legal[0])
            elif rng.random() < eps:
                rnd.apply(legal[rng.randrange(len(legal))])
            else:
                rnd.apply(max(legal, key=key.__getitem__))

    def _value(self, rnd: Round) -> float:
        """Zero-sum round value for my side (side 0: relative seats keep sides)."""
        result = rnd.result
        assert result is not None
        if result.winning_side is None:
            return 0.0
        if result.winning_side == 0:
            return float(result.award)
        return -result.award / (self.rules.num_sides - 1)
