"""Determinized Monte Carlo search over the public information of one seat."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.agents.policy import PolicyAgent
from block_env.agents.scripted import GREEDY_WEIGHTS, StrategicAgent, StrategyWeights, greedy_rank, move_score
from block_env.agents.search_belief import move_log_likelihoods
from block_env.agents.search_playouts import MoveChooser, heuristic_moves, play_out, play_out_ranked
from block_env.batched import BatchedGames, CompiledPolicies, mask_bits
from block_env.engine import PublicView, Round
from block_env.hidden_hands import sample_hidden_hands
from block_env.observations import batch_encoder, layout_for, read_moves
from block_env.rules import Rules, resolve_rules
from block_env.tiles import ends_after
from block_env.validation import check_bool, check_int, check_number, is_number

PLAYOUTS = ("greedy", "heuristic", "random", "policy")
#: Built-in priors; a trained agent's spec (pretrained:NAME, policy:PATH) is a prior too.
PRIORS = ("strategic", "none")
#: The encodings a trained prior may read: the search writes them for every world it lays out
#: ("tracked" from the round's moves, which the search then reads from the "history" encoding).
PRIOR_ENCODINGS = ("vector", "tracked")
LEAVES = ("end", "value")
ENGINES = ("batched", "scalar")
#: "prior": weight the sampled deals by how likely the trained prior makes the other seats' moves.
BELIEFS = ("none", "prior")
#: With a belief, deals sampled per world kept (the worlds are drawn from them by weight).
BELIEF_CANDIDATES = 4
#: Tries at a deal that respects every shown void; the last one ignores voids (a last resort).
SAMPLE_ATTEMPTS = 20
PLAYOUT_WEIGHTS = StrategyWeights()
#: Batches kept for reuse, one per size (a single decision needs worlds x legal moves games).
BATCHES_KEPT = 16


@dataclass(frozen=True)
class SearchedMoves:
    """One searched decision: its legal moves, each move's round value for the deciding
    side (zero-sum points) in every sampled world, and the move the search chose."""

    legal: list[int]
    values: np.ndarray
    """(moves, worlds): row j is ``legal[j]``'s value in each world."""
    choice: int

    @property
    def means(self) -> np.ndarray:
        """Each legal move's mean value over the sampled worlds."""
        return self.values.mean(axis=1)


class SearchAgent(Agent):
    """Determinized Monte Carlo: sample hidden deals consistent with everything public
    (hand counts, tiles out of play or unseen, voids shown by passes), play every legal
    move in each sampled world, finish the round with a fast playout policy, and choose the
    move with the best mean round value for its side (zero-sum points). With a prior it keeps
    the prior's move unless the search's best move beats it on the same sampled worlds by
    more than ``confidence`` standard errors.

    Guided by a trained agent (``prior=pretrained:standard_vector``), the search can also play its
    worlds out with that agent's network (``playout=policy``: every seat's moves drawn from
    its distribution) and stop at a value estimate (``leaf=value``: play on until this seat
    is to move again, then read the network's value head), instead of scripted playouts to
    the round's end.

    Args:
        worlds: deals sampled per decision (the budget; each world plays every legal move).
        playout: "greedy" (heaviest tile first), "heuristic" (heavy tiles, doubles, and
            keeping tiles that follow the new ends), each with ``epsilon`` random moves;
            "random"; or "policy" (the prior's network; needs a trained prior).
        playout_temperature: with ``playout="policy"``, the temperature of the softmax the
            playouts draw each move from (the network's logits divided by it): 1 (default)
            the network's own distribution, below 1 sharper, 0 its best move every time.
        epsilon: probability of a random move inside greedy and heuristic playouts.
        prior: "strategic" (default), "none", or a trained agent's spec (``pretrained:NAME``
            or ``policy:PATH``) reading the "vector" or the "tracked" encoding: the search
            writes the prior's encoding in every world it lays out, whatever encoding the
            search itself reads. A "tracked" prior reads who placed which tile, so the search
            reads the round's moves from the "history" encoding (its default encoding then).
        leaf: "end" (default: play each world to the round's end) or "value" (the prior's
            value head once this seat is to move again; needs a trained prior whose
            agent.json has a ``value_scale``).
        confidence: standard errors the search's best move must win by to override the prior.
        belief: "none" (default: every deal that respects the public record is as likely) or
            "prior" (a trained prior): sample ``4 * worlds`` deals and draw the worlds among
            them by the likelihood of the other seats' moves this round under the prior's
            policy (what their choices say about their hands). It reads the round's moves
            from the "history" encoding, its default encoding then.
        engine: "batched" (default: every world and move played out at once on the batched
            engine) or "scalar" (one by one on the scalar engine: the reference it was
            measured against; scripted playouts only).
        hand_at_most: search only the decisions where this seat holds this many tiles or
            fewer (an int of 2 or more), and play the prior's move at the others (None, the default:
            search every decision). It measures where in a round a search's edge over its
            prior lies. It acts on the moves the agent plays (``act``, ``act_batch``; batched
            engine); ``search_moves``, which searches every position (what value-fitted
            teachers, expert iteration and a trained agent's endgame call), refuses it.
        prior_mirror: read the trained prior one way (false) or both ways round (true),
            overriding its agent.json's ``mirror``; None (default) follows agent.json. Every
            use of the prior reads it so: its own move, the playouts and the weighing of the
            sampled deals; read one way, its network does half the work.

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> agent = SearchAgent(env.rules, seed=0, worlds=8)
        >>> action = agent.act(env.observe(env.agent_selection))
        >>> env.observe(env.agent_selection)["action_mask"][action]
        np.int8(1)
        >>> guided = SearchAgent(env.rules, seed=0, worlds=8, prior="pretrained:standard_vector", playout="policy")
        >>> env.observe(env.agent_selection)["action_mask"][guided.act(env.observe(env.agent_selection))]
        np.int8(1)
    """

    name = "search"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        observation: str | None = None,
        worlds: int = 96,
        playout: str = "heuristic",
        epsilon: float = 0.15,
        prior: str = "strategic",
        leaf: str = "end",
        confidence: float = 1.0,
        engine: str = "batched",
        belief: str = "none",
        playout_temperature: float = 1.0,
        hand_at_most: int | None = None,
        prior_mirror: bool | None = None,
    ) -> None:
        if not isinstance(prior, str) or (prior not in PRIORS and ":" not in prior):
            raise ValueError(f"search prior must be one of {PRIORS} or a trained agent's spec, got {prior!r}")
        if prior_mirror is not None:
            check_bool("search prior_mirror", prior_mirror)
            if ":" not in prior:
                raise ValueError(
                    "search prior_mirror reads a trained prior (prior=pretrained:NAME or policy:PATH) one way "
                    f"(false) or both ways round (true), got prior={prior!r}"
                )
        guide = self._trained_prior(prior, resolve_rules(rules), seed, prior_mirror) if ":" in prior else None
        # The round's moves come from the "history" encoding: the belief weighs them, and a
        # "tracked" prior reads who placed which tile in every world the search lays out.
        tracks = guide is not None and guide.observation == "tracked"
        reads_moves = belief == "prior" or tracks
        if reads_moves and observation not in (None, "history"):
            needs = "belief='prior'" if belief == "prior" else f"a prior that reads 'tracked' ({prior})"
            raise ValueError(
                f"a search with {needs} reads the round's moves from the 'history' encoding, got {observation!r}"
            )
        super().__init__(rules, seed, observation or ("history" if reads_moves else "vector"))
        if isinstance(worlds, bool) or not isinstance(worlds, int) or worlds < 1:
            raise ValueError(f"search worlds must be a positive int, got {worlds!r}")
        if playout not in PLAYOUTS:
            raise ValueError(f"search playout must be one of {PLAYOUTS}, got {playout!r}")
        if not is_number(epsilon) or not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"search epsilon must be in 0..1, got {epsilon!r}")
        if leaf not in LEAVES:
            raise ValueError(f"search leaf must be one of {LEAVES}, got {leaf!r}")
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not confidence >= 0:
            raise ValueError(f"search confidence must be a non-negative number, got {confidence!r}")
        if engine not in ENGINES:
            raise ValueError(f"search engine must be one of {ENGINES}, got {engine!r}")
        if belief not in BELIEFS:
            raise ValueError(f"search belief must be one of {BELIEFS}, got {belief!r}")
        check_number("search playout_temperature", playout_temperature, 0.0)
        if playout_temperature != 1.0 and playout != "policy":
            raise ValueError(
                f"search playout_temperature ({playout_temperature!r}) sets the temperature of the prior's "
                f"playouts: it needs playout='policy', got playout={playout!r}"
            )
        if hand_at_most is not None:
            hand_at_most = check_int("search hand_at_most", hand_at_most, low=2)
            if prior == "none":
                raise ValueError(
                    "search hand_at_most plays the prior's move at the other decisions: it needs a prior, got prior='none'"
                )
            if engine != "batched":
                raise ValueError(f"search hand_at_most runs on the batched engine (engine='batched'), got {engine!r}")
        self.hand_at_most = hand_at_most
        self._hand_count = layout_for(self.rules, self.observation).offset("hand_counts")  # seat 0's
        self.engine = engine
        self.guide = guide
        self._reads_moves = reads_moves
        self._tracks = tracks
        if self.guide is None and (playout == "policy" or leaf == "value" or belief == "prior"):
            raise ValueError(
                f"search playout='policy', leaf='value' and belief='prior' read a trained prior's network "
                f"(prior=pretrained:NAME or policy:PATH), got prior={prior!r}"
            )
        self.belief = belief
        if self.guide is not None and engine != "batched":
            raise ValueError("a search guided by a trained prior runs on the batched engine (engine='batched')")
        if leaf == "value" and self.guide is not None:
            self.guide.checked_value_scale()
        self.prior: StrategicAgent | PolicyAgent | None = (
            StrategicAgent(self.rules, seed, self.observation) if prior == "strategic" else self.guide
        )
        self.leaf = leaf
        self.confidence = float(confidence)
        self.worlds = worlds
        self.playout = playout
        self.playout_temperature = float(playout_temperature)
        self.epsilon = 1.0 if playout == "random" else epsilon
        # The scripted playouts' move score weights (move_score): "greedy" ranks as the greedy
        # agent does; "heuristic" as the strategic agent's first terms.
        self._weights = GREEDY_WEIGHTS if playout == "greedy" else PLAYOUT_WEIGHTS.move_weights
        self._batches: dict[int, BatchedGames] = {}
        ranked = playout == "greedy" and self.epsilon == 0 and leaf == "end"  # played out in one compiled call
        self._greedy = (
            CompiledPolicies.build([greedy_rank(self.rules)], self.rules.tile_set.num_actions) if ranked else None
        )
        self._encode = batch_encoder(self.rules, self.guide.observation) if self.guide is not None else None

    @staticmethod
    def _trained_prior(spec: str, rules: Rules, seed: int | None, mirror: bool | None) -> PolicyAgent:
        """The trained agent a guided search reads (its moves, network and value head), read
        both ways round or one way as ``mirror`` says (None: as its agent.json says)."""
        from block_env.agents import parse_spec  # the spec parser lives in the package above

        name, options = parse_spec(spec)  # an unknown pretrained agent is named there
        if name != "policy":
            raise ValueError(f"search prior {spec!r} is not a trained agent (pretrained:NAME or policy:PATH)")
        agent = PolicyAgent(
            rules, seed, path=options["path"], endgame=False, mirror=mirror
        )  # its network: no search inside the search
        if agent.observation not in PRIOR_ENCODINGS:
            raise ValueError(
                f"search prior {spec!r} reads the {agent.observation!r} encoding; a search's prior reads one of "
                f"{PRIOR_ENCODINGS}"
            )
        return agent

    def act(self, obs: Observation) -> int:
        legal = legal_actions(obs)  # refuses an all-zero mask
        if self.engine == "batched":  # one game of the batched path: the same draws in the same order
            masks = np.asarray(obs["action_mask"], dtype=bool)[None]
            return int(self.act_batch(np.asarray(obs["observation"])[None], masks)[0])
        if len(legal) == 1:
            return legal[0]
        k = self.view(obs)
        worlds = self.sample_worlds(k)
        values = self._scalar_values(k, legal, worlds)
        observations, masks = np.asarray(obs["observation"])[None], np.asarray(obs["action_mask"], dtype=bool)[None]
        (default,) = self._prior_choices(observations, masks, [k], [legal], worlds[0][None], [[]])
        return legal[self._decide(values, default)]

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """A move for each of many games (rows of observations and masks), their searches'
        worlds and moves all played out in one batch: what a vector env's opponent calls.
        Each game's sampled worlds and choice are those ``act`` would make for it alone, up
        to the playouts' random moves, which share one stream across the batch."""
        masks = np.asarray(masks, dtype=bool)
        if not masks.any(axis=1).all():
            raise ValueError(f"the action masks of rows {np.flatnonzero(~masks.any(axis=1)).tolist()} are all zeros")
        if self.engine != "batched":
            return np.array([self.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)])
        choices = masks.argmax(axis=1)  # right for the forced moves (one legal action)
        observations = np.asarray(observations)
        deciding = np.flatnonzero(masks.sum(axis=1) > 1)
        early = deciding[:0]
        if self.hand_at_most is not None:
            late = observations[deciding, self._hand_count] <= self.hand_at_most
            deciding, early = deciding[late], deciding[~late]
        for i, searched in zip(deciding, self._search_moves(observations[deciding], masks[deciding])):
            choices[i] = searched.choice
        if len(early):  # after the search, which draws from the generator as it would without them
            choices[early] = self._prior_moves(observations[early], masks[early])
        return choices

    def search_moves(self, observations: np.ndarray, masks: np.ndarray) -> list[SearchedMoves]:
        """Search each row's position (batched engine): every legal move's round value in
        every sampled world, and the move the search chooses. What ``act_batch`` decides by,
        and what expert iteration distils (its values as soft targets, or its choices).
        ValueError for a search with ``hand_at_most``: this searches every position."""
        if self.hand_at_most is not None:
            raise ValueError(
                f"search_moves searches every position; this search (hand_at_most={self.hand_at_most}) plays its "
                "prior's move where it holds more tiles: play it with act or act_batch"
            )
        return self._search_moves(observations, masks)

    def _search_moves(self, observations: np.ndarray, masks: np.ndarray) -> list[SearchedMoves]:
        if self.engine != "batched":
            raise ValueError("search_moves runs on the batched engine (engine='batched')")
        masks = np.asarray(masks, dtype=bool)
        if not len(masks):
            return []
        obs = [{"observation": o, "action_mask": m} for o, m in zip(observations, masks)]
        views = [self.view(o) for o in obs]
        legal = [legal_actions(o) for o in obs]  # refuses an all-zero mask
        # values[g][j][w]: game g's round value of move j in sampled world w (common worlds,
        # so moves are compared on the same deals).
        histories = [read_moves(o, self.rules) if self._reads_moves else [] for o in obs]
        worlds = [self._worlds(k, moves) for k, moves in zip(views, histories)]
        values = self._batched_values(views, legal, worlds, histories)
        defaults = self._prior_choices(observations, masks, views, legal, np.stack([w[0] for w in worlds]), histories)
        return [
            SearchedMoves(moves, np.array(v), moves[self._decide(v, default)])
            for moves, v, default in zip(legal, values, defaults)
        ]

    def _prior_choices(
        self,
        observations: np.ndarray,
        masks: np.ndarray,
        views: list[PublicView],
        legal: list[list[int]],
        hands: np.ndarray,
        histories: list[list[tuple[int, int]]],
    ) -> list[int | None]:
        """The index in each row's ``legal`` of the prior's move (None without a prior), the
        position laid out on ``hands[i]`` for a prior that reads another encoding."""
        if self.prior is None:
            return [None] * len(legal)
        actions = self._prior_actions(observations, masks, views, hands, histories)
        return [moves.index(int(action)) for moves, action in zip(legal, actions)]

    def _prior_moves(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The prior's move in each row, where this search does not search: each position
        laid out on one deal drawn from a fixed seed, which leaves the search's stream alone."""
        assert self.prior is not None
        if self.prior.observation == self.observation:  # nothing to lay out
            return self.prior.act_batch(observations, masks)
        obs = [{"observation": o, "action_mask": m} for o, m in zip(observations, masks)]
        views = [self.view(o) for o in obs]
        histories = [read_moves(o, self.rules) if self._reads_moves else [] for o in obs]
        hands = np.concatenate([self.sample_worlds(k, 1, seed=0) for k in views])
        return self._prior_actions(observations, masks, views, hands, histories)

    def _prior_actions(
        self,
        observations: np.ndarray,
        masks: np.ndarray,
        views: list[PublicView],
        hands: np.ndarray,
        histories: list[list[tuple[int, int]]],
    ) -> np.ndarray:
        """The prior's move in each row, in one batch (the moves its ``act`` would make one
        by one). A trained prior that reads another encoding than the search sees each
        position written in its own, laid out on one deal (``hands[i]``) with the round's
        moves: that encoding shows only this seat's hand and the public record, the same in
        every deal."""
        assert self.prior is not None
        if self.prior.observation == self.observation:  # strategic reads the search's
            return self.prior.act_batch(observations, masks)
        assert self._encode is not None
        games = self._batch(len(views))
        self._lay_out(games, views, hands, [1] * len(views), histories)
        inputs = self._encode(games, np.arange(len(views)), np.zeros(len(views), dtype=np.int64))
        return self.prior.act_batch(inputs, masks)

    def _decide(self, values: list[list[float]], default: int | None) -> int:
        """The index of the move with the best mean value; with a prior's move (``default``),
        that one unless the best beats it by ``confidence`` standard errors of the paired mean
        difference."""
        means = [sum(v) / self.worlds for v in values]
        best = means.index(max(means))
        if default is None or best == default or self.worlds < 2:
            return best
        diffs = [b - d for b, d in zip(values[best], values[default])]
        mean = sum(diffs) / len(diffs)
        var = sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1)
        return best if mean > self.confidence * (var / len(diffs)) ** 0.5 else default

    def _batched_values(
        self,
        views: list[PublicView],
        legal: list[list[int]],
        worlds: list[np.ndarray],
        histories: list[list[tuple[int, int]]],
    ) -> list[list[list[float]]]:
        """Every (game, world, move) triple as one game of a batch: play the move, then every
        game to the round's end at once with the playout policy, in compiled code."""
        sizes = [len(w) * len(moves) for w, moves in zip(worlds, legal)]
        games = self._batch(sum(sizes))
        hands = np.concatenate([np.repeat(w, len(moves), axis=0) for w, moves in zip(worlds, legal)])
        self._lay_out(games, views, hands, sizes, histories)
        moves = np.concatenate([np.tile(np.array(m, dtype=np.int64), len(w)) for w, m in zip(worlds, legal)])
        until_seat = 0 if self.leaf == "value" else None  # I am seat 0 of every world
        if self._greedy is not None:
            # Greedy without random moves is a fixed rank of the actions: the engine's compiled
            # loop plays each move and the round after it to the end in one call, with the same moves.
            ended = [play_out_ranked(games, games.all_games, self._greedy, first_moves=moves)]
        else:
            first = games.step(moves, check=False)
            ended = [first, play_out(games, np.flatnonzero(~games.over), self._playout_moves(games), until_seat)]
        value = np.zeros(games.num_games)
        for results in ended:
            value[results.games] = results.side_values("zero_sum")[:, 0]  # my side is side 0
        if until_seat is not None:  # the worlds still in play: the value head, from my seat
            assert self.guide is not None and self._encode is not None
            waiting = np.flatnonzero(~games.over)
            value[waiting] = self.guide.values(self._encode(games, waiting, np.zeros(len(waiting), dtype=np.int64)))
        return [
            part.reshape(len(w), len(m)).T.tolist()
            for part, w, m in zip(np.split(value, np.cumsum(sizes)[:-1]), worlds, legal)
        ]

    def _lay_out(
        self,
        games: BatchedGames,
        views: list[PublicView],
        hands: np.ndarray,
        sizes: list[int],
        histories: list[list[tuple[int, int]]],
    ) -> None:
        """Lay out ``games`` (``hands``: (N, P, T) bool, this seat 0 and to move) at each view's
        position (:meth:`Round.from_view`), ``sizes[i]`` consecutive games per view; with a
        "tracked" prior, each game's move record is its view's round so far (``histories``)."""
        num_tiles = self.rules.tile_set.num_tiles
        positions = [Round.from_view(k) for k in views]

        def per_game(facts: list | np.ndarray) -> np.ndarray:  # each view's facts, once per game of its block
            return np.repeat(np.asarray(facts), sizes, axis=0)

        # One decision's games share its facts: set_positions broadcasts them.
        def position_fact(facts: list) -> np.ndarray:
            return np.asarray(facts[0]) if len(views) == 1 else per_game(facts)

        record = None
        if self._tracks:
            longest = max(len(moves) for moves in histories)
            seats, actions = np.zeros((2, len(histories), longest), dtype=np.int64)
            for i, moves in enumerate(histories):
                if moves:
                    seats[i, : len(moves)], actions[i, : len(moves)] = zip(*moves)
            record = (per_game(actions), per_game(seats), per_game([len(moves) for moves in histories]))

        games.set_positions(
            hands,
            ends=position_fact([(r.left, r.right) for r in positions]),  # -1 for an empty line
            played=position_fact([mask_bits(r.played, num_tiles) for r in positions]),
            current=position_fact([r.current for r in positions]),
            leader=position_fact([r.leader for r in positions]),
            passes=position_fact([r.passes for r in positions]),
            voids=position_fact([r.voids for r in positions]),
            # What observations show beyond a position: the opening tile, the match scores.
            opening=position_fact([-1 if k.opening is None else k.opening for k in views]),
            scores=position_fact([k.scores for k in views]),
            record=record,
        )

    def _batch(self, size: int) -> BatchedGames:
        """A batch of ``size`` games, reused decision after decision (set_positions lays out
        every field anew); the last few sizes are kept."""
        if size not in self._batches:
            if len(self._batches) >= BATCHES_KEPT:
                self._batches.clear()
            self._batches[size] = BatchedGames(self.rules, size)
        return self._batches[size]

    def _playout_moves(self, games: BatchedGames) -> MoveChooser:
        """The playout policy over ``games``: scripted (compiled) or the prior's network."""
        seed = self.rng.getrandbits(63)
        if self.playout != "policy":
            return heuristic_moves(games, self._weights, self.epsilon, seed)
        guide, encode, temperature = self.guide, self._encode, self.playout_temperature
        assert guide is not None and encode is not None
        rng = np.random.default_rng(seed)

        def choose(active: np.ndarray, masks: np.ndarray) -> np.ndarray:
            logits = np.where(masks, guide.logits(encode(games, active, games.current[active])), -np.inf)
            if temperature == 0:  # the network's own choice, as a policy agent plays
                return logits.argmax(axis=1)
            return (logits / temperature + rng.gumbel(size=logits.shape)).argmax(axis=1)  # a draw from the softmax

        return choose

    def _scalar_values(self, k: PublicView, legal: list[int], worlds: np.ndarray) -> list[list[float]]:
        """The reference: each (world, move) played out one by one on the scalar engine."""
        values = [[0.0] * len(worlds) for _ in legal]
        bits = 1 << np.arange(worlds.shape[2], dtype=object)
        for w, dealt in enumerate(worlds):
            world = Round.from_view(k, [int(bits[row].sum()) for row in dealt])
            for j, action in enumerate(legal):
                rnd = world.copy()
                rnd.apply(action)
                self._play_out(rnd)
                assert rnd.result is not None
                values[j][w] = rnd.result.side_values("zero_sum")[0]  # my side is side 0
        return values

    def _worlds(self, k: PublicView, moves: list[tuple[int, int]]) -> np.ndarray:
        """The deals a decision is searched on: sampled, or with a belief drawn by weight
        (``moves``: the round so far, read from the "history" encoding)."""
        if self.belief == "none":
            return self.sample_worlds(k)
        assert self.guide is not None and self._encode is not None
        candidates = self.sample_worlds(k, BELIEF_CANDIDATES * self.worlds)
        log_weights = move_log_likelihoods(self.rules, candidates, moves, self.guide, self._encode)
        weights = np.exp(log_weights - log_weights.max())
        draw = np.random.default_rng(self.rng.getrandbits(63))
        return candidates[draw.choice(len(candidates), size=self.worlds, p=weights / weights.sum())]

    def sample_worlds(self, k: PublicView, worlds: int | None = None, seed: int | None = None) -> np.ndarray:
        """(worlds, P, T) bool: deals of the unseen tiles consistent with the public record
        (hand counts, tiles out of play or unseen, voids shown by passes); this seat is 0.
        ``worlds`` deals (default: the search's budget), drawn from ``seed`` (default: the
        search's generator, which draws it)."""
        return sample_hidden_hands(
            self.rules,
            hand=k.hand,
            unseen=k.unseen,
            hand_counts=k.hand_counts,
            voids=k.voids,
            worlds=self.worlds if worlds is None else worlds,
            attempts=SAMPLE_ATTEMPTS,
            seed=self.rng.getrandbits(63) if seed is None else seed,
        )

    def _play_out(self, rnd: Round) -> None:
        rng = self.rng
        eps = self.epsilon
        while rnd.result is None:
            legal = rnd.legal_actions()
            if len(legal) == 1:
                rnd.apply(legal[0])
            elif rng.random() < eps:
                rnd.apply(legal[rng.randrange(len(legal))])
            else:  # the first best, as the compiled playouts choose
                rnd.apply(max(legal, key=lambda a: self._move_score(rnd, a)))

    def _move_score(self, rnd: Round, action: int) -> float:
        """The scripted playout's score of ``action`` for the seat to move in ``rnd``: heavy
        tiles, doubles, and tiles of its own kept for the new ends, by the playout's weights."""
        ts = rnd.tiles
        i = action >> 1
        x, y = ts.tiles[i]
        ends = ends_after(ts, rnd.ends, action)
        kept = (rnd.hands[rnd.current] & ~(1 << i) & (ts.suit_masks[ends[0]] | ts.suit_masks[ends[1]])).bit_count()
        return move_score(self._weights, x + y, x == y, kept)
