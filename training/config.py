"""Typed, validated training configuration, read from YAML (configs/*.yaml).

Every section is a frozen dataclass with a docstring per field; an unknown key, a wrong type
or an out-of-range value is a ValueError that names the key (with its section).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from block_env.agents import check_option_names, make_agent, parse_spec, trained_agent_folder
from block_env.agents.policy import ACTIVATIONS, mirror_columns_of
from block_env.observations import layout_for
from block_env.options import ENCODINGS, EPISODES, REWARDS
from block_env.rules import Rules, resolve_rules
from block_env.validation import check_bool, check_choice, check_int, check_number, is_number

#: How the training envs are vectorised.
VEC_ENVS = ("batched", "subproc", "dummy")
#: What the value network reads (block_env.training.critic).
CRITICS = ("observation", "full_information")
#: What expert iteration fits the policy to (ExpertConfig.targets).
EXPERT_TARGETS = ("values", "choice")


@dataclass(frozen=True)
class PPOConfig:
    """sb3-contrib MaskablePPO hyperparameters."""

    learning_rate: float = 3e-4
    """Adam step size."""
    anneal_learning_rate: bool = False
    """The step size falls linearly from ``learning_rate`` to zero over ``total_timesteps``
    (a run resumed with the same total carries on from where it stopped; a new total spreads
    the fall over it), so that the last updates settle the policy
    instead of moving it as much as the first."""
    n_steps: int = 512
    """Transitions collected per env between updates."""
    batch_size: int = 256
    """Minibatch size of each gradient step."""
    n_epochs: int = 5
    """Passes over each rollout."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE smoothing."""
    clip_range: float = 0.2
    """PPO policy clip."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    vf_coef: float = 0.5
    """Value loss weight."""
    critic_warmup: int = 0
    """Env steps at the start of the run (counted from step 0, so a resumed run keeps the same
    schedule; a rollout that starts before it counts whole) whose updates fit only the value
    network, the policy's layers held as they are:
    a policy carried in from imitation or another run is then not steered by the advantages of
    a critic that has not yet learned its returns. 0: every update moves both."""
    net_arch: tuple[int, ...] = (128, 128)
    """Hidden layer sizes, shared shape for the policy and value networks."""
    activation: str = "tanh"
    """"tanh" or "relu"."""
    critic: str = "observation"
    """What the value network reads: "observation" (the learner's, as the policy) or
    "full_information" (the observation plus every hidden hand, an asymmetric actor-critic;
    the policy still reads only the observation, and only the policy is deployed).
    "full_information" needs vec_env "batched"."""

    @property
    def asymmetric(self) -> bool:
        """The critic reads the hidden hands too (block_env.training.critic)."""
        return self.critic == "full_information"

    def validate(self) -> None:
        check_number("ppo.learning_rate", self.learning_rate, positive=True)
        check_number("ppo.n_steps", self.n_steps, positive=True)
        check_number("ppo.batch_size", self.batch_size, positive=True)
        check_number("ppo.n_epochs", self.n_epochs, positive=True)
        _in_range("ppo.gamma", self.gamma, 0.0, 1.0)
        _in_range("ppo.gae_lambda", self.gae_lambda, 0.0, 1.0)
        check_number("ppo.clip_range", self.clip_range, positive=True)
        _in_range("ppo.ent_coef", self.ent_coef, 0.0, 1.0)
        check_number("ppo.vf_coef", self.vf_coef, positive=True)
        check_int("ppo.critic_warmup", self.critic_warmup, low=0)
        if not self.net_arch or any(not isinstance(h, int) or h < 1 for h in self.net_arch):
            raise ValueError(f"ppo.net_arch must be a non-empty list of positive ints, got {list(self.net_arch)}")
        check_choice("ppo.activation", self.activation, ACTIVATIONS)
        check_choice("ppo.critic", self.critic, CRITICS)


#: ``opponents.partner`` for the learner's own policy opposite it.
LEARNER_PARTNER = "learner"


@dataclass(frozen=True)
class OpponentsConfig:
    """Who the learner plays against during training."""

    scripted: tuple[str, ...] = ("random", "greedy", "strategic")
    """Baseline agent specs always in the pool (block_env.agents.make_agent specs)."""
    self_play: bool = True
    """Add frozen snapshots of the learner to the pool as training goes on."""
    snapshot_every: int = 50_000
    """Environment steps between snapshots."""
    max_snapshots: int = 3
    """Newest snapshots kept in the pool."""
    partner: str | None = None
    """Partnership rules: who sits opposite the learner in every game (the other side draws from
    the pool). ``"learner"``: a copy of the learner, refreshed at every rollout, so that both
    seats of its side play its policy, as in the arena; or an agent spec (the teacher, say).
    None: the partner's seat draws from the pool too."""

    @property
    def fixed_partner(self) -> str | None:
        """The agent spec of a partner that never changes (not the learner's copy), or None."""
        return None if self.partner == LEARNER_PARTNER else self.partner

    def validate(self) -> None:
        if not self.scripted and not self.self_play:
            raise ValueError("opponents: give at least one scripted opponent or enable self_play")
        for i, spec in enumerate(self.scripted):
            _unattended_spec(f"opponents.scripted[{i}]", spec)
        check_number("opponents.snapshot_every", self.snapshot_every, positive=True)
        check_number("opponents.max_snapshots", self.max_snapshots, positive=True)
        if self.fixed_partner is not None:
            _unattended_spec("opponents.partner", self.fixed_partner)


#: What ``pretrain.teacher`` and ``pretrain.init_from`` write for the agent ``pretrain.prior``
#: trains (``policy:RUN/prior``).
PRIOR_PLACEHOLDER = "{prior}"


@dataclass(frozen=True)
class PriorConfig:
    """A first imitation stage, before the warm start: a network on the "vector" encoding
    (``ppo.net_arch``, ``ppo.activation``, a value head that reads the observation) fitted to
    ``teacher``'s moves in its own games, saved as the run's ``prior`` agent. The warm start's
    teacher and ``init_from`` name it as ``{prior}``: a search that infers the hidden hands
    from the other players' moves needs such a model of the players (``search:prior={prior},
    belief=prior``), and the learner may start from it."""

    teacher: str = "search"
    """Agent spec whose decisions the prior imitates."""
    decisions: int = 60_000
    """Teacher decisions with two or more legal moves to collect."""
    epochs: int = 10
    """Passes over the collected decisions."""
    batch_size: int = 256
    """Minibatch size."""
    learning_rate: float = 1e-3
    """Adam step size."""

    def validate(self) -> None:
        _unattended_spec("pretrain.prior.teacher", self.teacher)
        if PRIOR_PLACEHOLDER in self.teacher:
            raise ValueError(f"pretrain.prior.teacher cannot name {PRIOR_PLACEHOLDER}: it is what this stage trains")
        check_number("pretrain.prior.decisions", self.decisions, positive=True)
        check_number("pretrain.prior.epochs", self.epochs, positive=True)
        check_number("pretrain.prior.batch_size", self.batch_size, positive=True)
        check_number("pretrain.prior.learning_rate", self.learning_rate, positive=True)


@dataclass(frozen=True)
class PretrainConfig:
    """Imitation warm start: before PPO, fit the policy to a teacher agent's moves and the
    value head to the teacher games' outcomes (behaviour cloning). ``teacher: null`` skips it."""

    init_from: str | None = None
    """A trained agent (``pretrained:NAME`` or ``policy:PATH``) whose policy network the
    learner starts from, before any imitation: the same rules and ``ppo.activation``, as many
    layers in ``ppo.net_arch``, each as wide or wider (the added units start at zero weight
    into the source's, so a larger network begins as the smaller one), and the learner's
    encoding or one it holds ("vector" inside "tracked": the first layer starts at zero weight
    on the other inputs). Its value head comes too: as the critic when the critic reads the
    observation; as the full-information critic with zero weights on the hidden hands when the
    agent's values are in the learner's units (its ``value_scale`` is ``reward_scale`` over
    zero-sum rounds), else that critic starts fresh. null: a fresh network."""
    teacher: str | None = "strategic"
    """Agent spec whose decisions are imitated (one per seat of the teacher games, each reading
    its own encoding), or null."""
    decisions: int = 40_000
    """Teacher decisions with two or more legal moves to collect."""
    epochs: int = 8
    """Passes over the collected decisions."""
    batch_size: int = 256
    """Minibatch size."""
    learning_rate: float = 1e-3
    """Adam step size of the warm start."""
    anneal_learning_rate: bool = False
    """The step size falls linearly from ``learning_rate`` to zero over the ``epochs`` passes'
    minibatches."""
    workers: int = 1
    """Processes playing the teacher games (a search teacher's decisions are the slow part)."""
    ray_address: str | None = None
    """Play the teacher games as Ray tasks (extra ``[ray]``; ``train --ray [ADDRESS]``): "local"
    (a Ray started for them on this machine, ``workers`` CPUs), "auto" (the cluster this machine
    is in) or a cluster's address. The same ``workers`` shares of the same games as in
    processes, so the same decisions. null: processes on this machine."""
    targets: str = "choice"
    """What the policy is fitted to: "choice" (the teacher's move) or, for a search teacher,
    "values" (softmax(move value / temperature) over the legal moves: how much better each
    move searched, not only which was best)."""
    temperature: float = 1.0
    """Points per round of the "values" targets' softmax."""
    played_by: str | None = None
    """Agent spec whose moves are played at the labelled seats, while the teacher still labels
    every decision there: the learner's own network (``init_from``'s, or ``{prior}``) makes the
    teacher correct the positions the learner itself reaches (DAgger), not only the teacher's
    own; null: the teacher's moves are played."""
    against: str | None = None
    """Agent spec at the other sides' seats, unlabelled: each teacher game labels one side
    (a seat, or both seats of a partnership), the sides in turn game by game, as the arena
    seats a learner against its opponents; null: the teacher at every seat, all labelled."""
    earlier_decisions: tuple[str, ...] = ()
    """Teacher decisions saved by earlier runs (each run keeps its own as
    ``teacher_decisions.npz``), fitted together with this run's: data gathered over rounds.
    Each must have been made under the same rules, encoding, critic and reward units. With
    ``decisions: 0``, the policy is fitted to these alone and no teacher game is played (a
    ``teacher`` is still named: a search one for "values" targets). Paths are relative to the
    working directory."""
    holdout: float = 0.0
    """Share of the decisions kept out of the fit to measure it (the last games saved of each
    set: this run's and each earlier one's): the held-out loss and agreement are reported
    before fitting and after every pass, and the policy of the pass with the lowest held-out
    loss is kept (the start, when no pass lowers it; the value head, which that loss does not
    measure, keeps its last pass). 0: every decision fitted, the last pass kept."""
    hand_at_most: int | None = None
    """Fit the teacher's targets only at the decisions where the deciding seat holds this many
    tiles (2 or more) or fewer; at the others the targets are the warm start's own move
    distribution (its softmax over the legal moves), so the fit teaches the late decisions and
    holds the earlier ones where they were. Needs ``teacher`` and ``init_from`` (the network
    whose earlier play is kept). The fit's agreement and losses are measured against these
    targets; the held-out ``value`` reads the teacher's values at every decision. Null: the
    teacher's targets at every decision."""
    mirror: bool = False
    """Fit each teacher decision made after the opening twice: as played, and seen in a mirror
    (the line's left and right ends swapped, each move's target on the other end). A position
    is worth the same either way round, so the mirrored target is as right as the played one;
    the engine opens each line low half left, so some mirrored positions never arise in play,
    and the network is fitted to treat the two ends alike. Nearly twice the decisions
    for the same teacher games; the held-out decisions are fitted as played only. Needs
    ``teacher`` and the "vector" or "tracked" encoding; not with ``hand_at_most`` (whose
    earlier targets are the warm start's own moves in the played orientation)."""
    belief_weight: float = 0.0
    """Weight, against the policy's loss, of an auxiliary loss while fitting: a linear head on
    the policy network's last hidden layer learns, for every tile, which other seat holds it
    or that none does (the learner's own, played, or not dealt), from the hidden hands the
    teacher decisions keep for the full-information critic (``ppo.critic: full_information``).
    The teacher's choices depend on where the hidden tiles are, which the round's moves hint
    at; the head makes the network carry that reading. The head is dropped after fitting: the
    agent is the policy network alone. 0: no such loss."""
    average_with: tuple[str, ...] = ()
    """Trained agents (``pretrained:NAME``, ``policy:PATH``) whose policy networks are averaged,
    weight by weight, with the learner's once the warm start has fitted it (and before PPO):
    a "model soup" of one network shape and encoding, each member counting as much as the
    learner. Networks fitted to noisy labels along one lineage (each round started from the one
    before) err partly apart, and their average may play stronger than any of them. The value head
    stays the learner's. The members are loaded and checked against the learner's network before
    any teacher game; averaging needs a warm start (``init_from`` or ``teacher``). Empty: no
    averaging."""
    prior: PriorConfig | None = None
    """A first imitation stage whose network ``teacher``, ``init_from``, ``played_by`` and
    ``against`` may name as ``{prior}``; null: none."""

    def validate(self) -> None:
        if self.prior is not None:
            self.prior.validate()
        check_choice("pretrain.targets", self.targets, EXPERT_TARGETS)
        check_number("pretrain.temperature", self.temperature, positive=True)
        if check_number("pretrain.belief_weight", self.belief_weight, 0.0) and self.teacher is None:
            raise ValueError(
                f"pretrain.belief_weight ({self.belief_weight!r}) needs pretrain.teacher: it is learned while "
                "fitting the teacher's decisions"
            )
        if check_number("pretrain.holdout", self.holdout, 0.0) >= 1:
            raise ValueError(f"pretrain.holdout must be below 1 (a share of the decisions), got {self.holdout!r}")
        if self.hand_at_most is not None:
            check_int("pretrain.hand_at_most", self.hand_at_most, low=2)  # one tile: the same tile either end
            for key, value in (("pretrain.teacher", self.teacher), ("pretrain.init_from", self.init_from)):
                if value is None:
                    raise ValueError(
                        f"pretrain.hand_at_most ({self.hand_at_most!r}) needs {key}: the teacher's targets at the "
                        "late decisions, the warm start's own moves at the others"
                    )
        if check_bool("pretrain.mirror", self.mirror) and self.teacher is None:
            raise ValueError("pretrain.mirror (true) needs pretrain.teacher: it mirrors the teacher's decisions")
        if self.mirror and self.hand_at_most is not None:
            raise ValueError(
                f"pretrain.mirror and pretrain.hand_at_most ({self.hand_at_most!r}) do not go together: the earlier "
                "decisions' targets are the warm start's own moves as played, not mirrored"
            )
        if self.holdout and self.teacher is None:
            raise ValueError(
                f"pretrain.holdout ({self.holdout!r}) needs pretrain.teacher: it holds out teacher decisions"
            )
        if self.targets == "values" and (self.teacher is None or parse_spec(self.teacher)[0] != "search"):
            raise ValueError(
                f'pretrain.targets "values" needs a search teacher (its move values), got {self.teacher!r}'
            )
        if self.targets == "values" and self.teacher is not None and "hand_at_most" in parse_spec(self.teacher)[1]:
            raise ValueError(
                f'pretrain.targets "values" reads every decision\'s searched move values; the teacher '
                f"{self.teacher!r} searches only some (hand_at_most)"
            )
        for name, spec in self.named_specs():
            if spec is not None and PRIOR_PLACEHOLDER in spec and self.prior is None:
                raise ValueError(f"{name} names {PRIOR_PLACEHOLDER} ({spec!r}) but pretrain.prior is not set")
        if self.init_from is not None and self.init_from != PRIOR_PLACEHOLDER:
            _trained_agent_spec("pretrain.init_from", self.init_from)
        for name, spec in (("pretrain.played_by", self.played_by), ("pretrain.against", self.against)):
            if spec is not None and self.teacher is None:
                raise ValueError(f"{name} ({spec!r}) needs pretrain.teacher: it plays the teacher games")
            if spec is not None and spec != PRIOR_PLACEHOLDER:  # the prior: a network, built once trained
                _unattended_spec(name, spec)
        if self.teacher is not None:
            _unattended_spec("pretrain.teacher", self.teacher)
        if not all(path.strip() for path in self.earlier_decisions):
            raise ValueError(f"pretrain.earlier_decisions: an empty path in {list(self.earlier_decisions)!r}")
        resolved = [Path(path).resolve() for path in self.earlier_decisions]
        twice = sorted({str(p) for p in resolved if resolved.count(p) > 1})
        if twice:  # fitted twice, its held-out games in the fit too
            raise ValueError(f"pretrain.earlier_decisions names {', '.join(twice)} more than once")
        if self.earlier_decisions:
            if self.teacher is None:
                raise ValueError(
                    "pretrain.earlier_decisions needs pretrain.teacher (with decisions: 0 it plays no game, "
                    'but it names how they are fitted: a search teacher for targets "values")'
                )
            check_int("pretrain.decisions", self.decisions, low=0)
        elif self.decisions == 0:
            raise ValueError("pretrain.decisions is 0 with no pretrain.earlier_decisions: there is nothing to imitate")
        else:
            check_number("pretrain.decisions", self.decisions, positive=True)
        check_number("pretrain.epochs", self.epochs, positive=True)
        check_number("pretrain.batch_size", self.batch_size, positive=True)
        check_number("pretrain.learning_rate", self.learning_rate, positive=True)
        check_int("pretrain.workers", self.workers, low=1)
        for spec in self.average_with:
            _trained_agent_spec("pretrain.average_with", spec)
        if self.average_with and self.init_from is None and self.teacher is None:
            raise ValueError(
                "pretrain.average_with averages the warm start's network with trained agents: "
                "it needs pretrain.init_from or pretrain.teacher"
            )
        if self.ray_address is not None and not self.ray_address.strip():
            raise ValueError("pretrain.ray_address must be 'local', 'auto' or a Ray cluster's address, got ''")

    def named_specs(self) -> tuple[tuple[str, str | None], ...]:
        """The agent specs of the warm start, by config key: those that may name ``{prior}``."""
        return (
            ("pretrain.teacher", self.teacher),
            ("pretrain.init_from", self.init_from),
            ("pretrain.played_by", self.played_by),
            ("pretrain.against", self.against),
        )


def _trained_agent_spec(name: str, spec: str) -> None:
    """ValueError, naming the config key, unless ``spec`` names a trained agent."""
    try:
        trained_agent_folder(spec)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


@dataclass(frozen=True)
class ExpertConfig:
    """Expert iteration, after the warm start and before PPO: a search guided by the current
    policy (its moves as the prior and as every seat's playouts) plays itself; each decision's
    move values, as a softmax at ``temperature`` (or the search's choice), are distilled back
    into the policy, and the value head learns the searched value of the move played;
    repeated ``rounds`` times, each round's policy guiding the next round's search.
    ``rounds: 0`` skips it."""

    rounds: int = 0
    """Search-then-distil rounds."""
    decisions: int = 100_000
    """Searched decisions (two or more legal moves) per round."""
    worlds: int = 32
    """Hidden deals the search samples per decision (each plays every legal move out)."""
    confidence: float = 1.0
    """The search keeps the policy's move unless its best move wins by this many standard
    errors (which move is played in the search's own games; the targets are every move's value)."""
    targets: str = "values"
    """What the policy is fitted to: "values" (softmax(move value / temperature) over the
    legal moves) or "choice" (the move the search chose, which is the policy's own unless the
    search beat it by ``confidence`` standard errors)."""
    temperature: float = 1.0
    """Points per round: the targets are softmax(move value / temperature) over legal moves."""
    epochs: int = 4
    """Passes over each round's decisions."""
    batch_size: int = 1024
    """Minibatch size of the distillation."""
    learning_rate: float = 1e-4
    """Adam step size of the distillation."""
    workers: int = 2
    """Processes that search in parallel."""
    games: int = 32
    """Games each worker plays at once (their searches batched together)."""
    eval_opponent: str = "search"
    """Each round's policy is measured against this agent (learning curve)."""
    eval_deals: int = 400
    """Duplicate deals of that measurement."""

    def validate(self) -> None:
        check_int("expert.rounds", self.rounds, low=0)
        for name in ("decisions", "worlds", "epochs", "batch_size", "workers", "games", "eval_deals"):
            check_int(f"expert.{name}", getattr(self, name), low=1)
        check_number("expert.confidence", self.confidence, low=0.0)
        check_choice("expert.targets", self.targets, EXPERT_TARGETS)
        check_number("expert.temperature", self.temperature, positive=True)
        check_number("expert.learning_rate", self.learning_rate, positive=True)
        _unattended_spec("expert.eval_opponent", self.eval_opponent)


@dataclass(frozen=True)
class EvalConfig:
    """Periodic evaluation against the baselines (masks always on) and the final arena."""

    every: int = 50_000
    """Environment steps between evaluations (learning-curve points; best model kept)."""
    deals: int = 60
    """Duplicate deals per opponent at each periodic evaluation."""
    opponents: tuple[str, ...] = ("random", "greedy", "strategic")
    """Baselines the learner is evaluated against, periodically and in the final arena."""
    final_deals: int = 300
    """Duplicate deals of the final arena run (block-dominoes main)."""
    final_opponents: tuple[str, ...] | None = None
    """The final arena's baselines (block-dominoes main); null: ``opponents``."""
    halfwidth: float | None = None
    """If set, a learning-curve point plays more deals against an opponent (beyond ``deals``,
    up to ``max_deals``) until its 95% interval is +-halfwidth points per round or narrower;
    None: ``deals`` against each."""
    max_deals: int = 6000
    """The most deals one learning-curve point plays against one opponent (with ``halfwidth``)."""

    def validate(self) -> None:
        check_number("eval.every", self.every, positive=True)
        check_number("eval.deals", self.deals, positive=True)
        check_number("eval.final_deals", self.final_deals, positive=True)
        if self.halfwidth is not None:
            check_number("eval.halfwidth", self.halfwidth, positive=True)
        check_number("eval.max_deals", self.max_deals, positive=True)
        if self.max_deals < self.deals:
            raise ValueError(f"eval.max_deals ({self.max_deals}) must be at least eval.deals ({self.deals})")
        if not self.opponents:
            raise ValueError("eval.opponents must name at least one baseline")
        for i, spec in enumerate(self.opponents):
            _unattended_spec(f"eval.opponents[{i}]", spec)
        if self.final_opponents is not None:
            if not self.final_opponents:
                raise ValueError("eval.final_opponents must name at least one baseline, or be null")
            for i, spec in enumerate(self.final_opponents):
                _unattended_spec(f"eval.final_opponents[{i}]", spec)


@dataclass(frozen=True)
class TrainConfig:
    """One training run. ``rules`` is a preset name or a mapping of Rules fields.

    Examples:
        >>> config = config_from_dict({"total_timesteps": 10_000, "ppo": {"net_arch": [64, 64]}})
        >>> config.resolved_rules().num_players, config.ppo.net_arch
        (2, (64, 64))
    """

    rules: str | dict[str, Any] = "standard"
    """Rules preset name, or a mapping of block_env.Rules fields."""
    episode: str = "round"
    """"round" or "match" episodes."""
    reward: str = "zero_sum"
    """The AEC reward mode the learner gets: "zero_sum", "points" or "win_loss"."""
    reward_scale: float = 0.05
    """Multiplies rewards (points are tens; PPO likes rewards near 1)."""
    observation: str = "vector"
    """Observation encoding: "vector", "history" or "tracked"."""
    total_timesteps: int = 200_000
    """Learner environment steps of PPO (0 with expert iteration: that alone)."""
    n_envs: int = 4
    """Parallel environments."""
    vec_env: str = "batched"
    """"batched" (every env on the batched engine in this process), "subproc" (one process
    per single env) or "dummy" (single envs one after another in this process)."""
    env_processes: int = 1
    """With vec_env "batched": processes the games are split across, one core each (n_envs
    a multiple of it). More than 1 pays when the opponents cost more than the learner (a
    search at the other seats); scripted opponents are fastest in one."""
    seed: int = 0
    """Seeds the model, the envs and the evaluations."""
    checkpoint_every: int = 50_000
    """Environment steps between resumable checkpoints."""
    update_threads: int = 0
    """torch threads for each PPO update with the batched env (rollouts always use one);
    0: every core this process may use."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    expert: ExpertConfig = field(default_factory=ExpertConfig)
    opponents: OpponentsConfig = field(default_factory=OpponentsConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def validate(self) -> None:
        try:
            self.resolved_rules()
        except ValueError as e:
            raise ValueError(f"rules: {e}") from None
        check_choice("episode", self.episode, EPISODES)
        check_choice("reward", self.reward, REWARDS)
        check_choice("observation", self.observation, ENCODINGS)
        check_choice("vec_env", self.vec_env, VEC_ENVS)
        check_number("reward_scale", self.reward_scale, positive=True)
        check_int("seed", self.seed, low=0)
        # 0 PPO steps is a run of expert iteration alone.
        check_number("total_timesteps", self.total_timesteps, low=0 if self.expert.rounds else 1)
        check_number("n_envs", self.n_envs, positive=True)
        check_number("checkpoint_every", self.checkpoint_every, positive=True)
        check_int("update_threads", self.update_threads, low=0)
        check_int("env_processes", self.env_processes, low=1)
        if self.env_processes > 1 and self.vec_env != "batched":
            raise ValueError(f'env_processes splits the "batched" vec_env, got vec_env {self.vec_env!r}')
        if self.n_envs % self.env_processes:
            raise ValueError(
                f"n_envs ({self.n_envs}) must be a multiple of env_processes ({self.env_processes}): "
                "every process steps an equal share of the games"
            )
        self.ppo.validate()
        if self.ppo.asymmetric and self.vec_env != "batched":
            raise ValueError(
                f'ppo.critic "full_information" needs vec_env "batched" (the hidden hands come from the batched '
                f"engine), got vec_env {self.vec_env!r}"
            )
        self.pretrain.validate()
        if self.pretrain.mirror:
            mirror_columns_of(
                self.resolved_rules(), self.observation, f"pretrain.mirror with observation {self.observation!r}"
            )
        if self.pretrain.belief_weight and not self.ppo.asymmetric:
            raise ValueError(
                f"pretrain.belief_weight ({self.pretrain.belief_weight!r}) learns from the hidden hands that only "
                f'the full-information critic\'s decisions keep: it needs ppo.critic "full_information", '
                f"got {self.ppo.critic!r}"
            )
        self.expert.validate()
        if self.expert.rounds:
            # The guided search reads the policy's "vector" encoding, and the value head
            # learns searched values of that observation, in zero-sum round points.
            wanted = {"observation": "vector", "episode": "round", "reward": "zero_sum", "ppo.critic": "observation"}
            got = {"observation": self.observation, "episode": self.episode, "reward": self.reward}
            got["ppo.critic"] = self.ppo.critic
            for key, value in wanted.items():
                if got[key] != value:
                    raise ValueError(f"expert iteration needs {key} {value!r}, got {got[key]!r}")
        self.opponents.validate()
        if self.opponents.partner is not None:
            if not self.resolved_rules().partnership:
                raise ValueError("opponents.partner: only partnership rules seat a partner")
            if self.vec_env != "batched":
                raise ValueError(f'opponents.partner needs vec_env "batched", got vec_env {self.vec_env!r}')
        self.eval.validate()
        # Every agent spec built once for the rules it will play (each reads its own encoding):
        # its options (search:worlds=0) and files (policy:PATH) are checked before any work starts.
        specs = [(f"opponents.scripted[{i}]", spec) for i, spec in enumerate(self.opponents.scripted)]
        if self.opponents.fixed_partner is not None:
            specs.append(("opponents.partner", self.opponents.fixed_partner))
        specs += [(f"eval.opponents[{i}]", spec) for i, spec in enumerate(self.eval.opponents)]
        specs += [(f"eval.final_opponents[{i}]", spec) for i, spec in enumerate(self.eval.final_opponents or ())]
        if self.expert.rounds:
            specs.append(("expert.eval_opponent", self.expert.eval_opponent))
        if self.pretrain.prior is not None:
            specs.append(("pretrain.prior.teacher", self.pretrain.prior.teacher))
        # A spec naming {prior} is built only once that stage has trained it: its option names now.
        for name, spec in self.pretrain.named_specs():
            if spec is not None and PRIOR_PLACEHOLDER not in spec:
                specs.append((name, spec))
            elif spec is not None and spec != PRIOR_PLACEHOLDER:  # the prior itself: a network
                try:
                    check_option_names(spec)
                except ValueError as e:
                    raise ValueError(f"{name}: {e}") from None
        rules = self.resolved_rules()
        for name, spec in specs:
            try:
                agent = make_agent(spec, rules)
                if name == "pretrain.init_from":  # its encoding, or one the learner's input holds
                    layout_for(rules, agent.observation).columns_in(layout_for(rules, self.observation))
            except (ValueError, OSError) as e:
                raise ValueError(f"{name}: {e}") from None
        if self.pretrain.init_from == PRIOR_PLACEHOLDER:
            try:  # the prior reads "vector"
                layout_for(rules, "vector").columns_in(layout_for(rules, self.observation))
            except ValueError as e:
                raise ValueError(f"pretrain.init_from: {e}") from None

    def resolved_rules(self) -> Rules:
        if isinstance(self.rules, str):
            return resolve_rules(self.rules)
        return Rules.from_dict(dict(self.rules))

    def to_dict(self) -> dict[str, Any]:
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _in_range(name: str, value: Any, low: float, high: float) -> None:
    if not is_number(value) or not low <= value <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {value!r}")


def _unattended_spec(name: str, spec: str) -> None:
    """An agent spec for a seat nobody watches: known, with valid options, and not human."""
    try:
        agent, _ = parse_spec(spec)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    if agent == "human":
        raise ValueError(f"{name} cannot be 'human': training and evaluation run unattended")


def _build(cls: type, values: Any, where: str) -> Any:
    """A dataclass from a mapping: unknown keys and wrong types are errors naming the key."""
    if not isinstance(values, dict):
        raise ValueError(f"{where or 'the config'} must be a mapping, got {values!r}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    prefix = f"{where}." if where else ""
    # YAML reads `1:` as a number and `on:`/`yes:` as booleans: name them as written.
    not_names = [key for key in values if not isinstance(key, str)]
    if not_names:
        raise ValueError(
            f"config keys are names; {where or 'the config'} has {', '.join(repr(k) for k in not_names)}"
            " (YAML reads on, off, yes and no as booleans: quote such a key)"
        )
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"unknown config key(s) {', '.join(prefix + k for k in unknown)}; known: {', '.join(sorted(known))}"
        )
    kwargs = {}
    for key, value in values.items():
        name = f"{where}.{key}" if where else key
        kwargs[key] = _convert(hints[key], value, name)
    return cls(**kwargs)


def _convert(hint: Any, value: Any, name: str) -> Any:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value, name)
    origin = typing.get_origin(hint)
    if origin is tuple:
        (item,) = {a for a in typing.get_args(hint) if a is not Ellipsis}
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{name} must be a list, got {value!r}")
        return tuple(_convert(item, v, f"{name}[{i}]") for i, v in enumerate(value))
    if origin in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        if len(options) == 1:  # X | None: X's own error names what was wrong
            return _convert(options[0], value, name)
        for option in options:
            try:
                return _convert(option, value, name)
            except ValueError:
                continue
        raise ValueError(f"{name} has the wrong type: {value!r}")
    if typing.get_origin(hint) is dict or hint is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{name} must be a mapping, got {value!r}")
        return dict(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name} must be a number, got {value!r}")
        return float(value)
    if hint is type(None):
        if value is not None:
            raise ValueError(f"{name} must be null, got {value!r}")
        return None
    if hint is int or hint is bool or hint is str:
        if type(value) is not hint:
            raise ValueError(f"{name} must be {hint.__name__}, got {value!r}")
        return value
    return value


def read_yaml(path: str | Path) -> Any:
    """A YAML file's contents (ValueError naming the file for a syntax error)."""
    import yaml

    text = Path(path).read_text()
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{path} is not valid YAML: {' '.join(str(e).split())}") from None


def build_dataclass(cls: type, values: Any) -> Any:
    """A config dataclass from a mapping: unknown keys and wrong types are errors naming the key."""
    return _build(cls, values, "")


def apply_settings(values: dict[str, Any], settings: Sequence[str]) -> dict[str, Any]:
    """A config mapping with each ``KEY=VALUE`` of ``settings`` set, in order (a later setting of
    the same key wins): a dotted KEY reaches into a section (``pretrain.decisions=30000``; a
    top-level key has no dot) and VALUE is read as YAML (``ppo.net_arch=[512, 512]``,
    ``pretrain.played_by=null``). The mapping is copied, not changed. A setting that is not
    ``KEY=VALUE``, has an empty VALUE (write ``null`` for none), or whose KEY passes through a
    key that is not a section is a ValueError naming it; an unknown key is named when the
    config is built.

    Examples:
        >>> apply_settings({"seed": 0, "pretrain": {"decisions": 1000}}, ["pretrain.decisions=30000"])
        {'seed': 0, 'pretrain': {'decisions': 30000}}
    """
    import yaml

    if isinstance(settings, str):
        raise ValueError(f"settings are a list of KEY=VALUE strings, got the string {settings!r}")
    values = dict(values)
    for setting in settings:
        key, sep, text = setting.partition("=")
        path = [name.strip() for name in key.split(".")]
        if not sep or not all(path):
            raise ValueError(
                "--set takes KEY=VALUE, KEY a config key dotted into its section "
                f"(e.g. seed=3 or pretrain.decisions=30000), got {setting!r}"
            )
        if not text.strip():
            raise ValueError(f"--set {setting!r}: VALUE is empty (write null for none)")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ValueError(f"--set {setting!r}: VALUE is not valid YAML: {' '.join(str(e).split())}") from None
        section = values
        for depth, name in enumerate(path[:-1]):
            inner = section.get(name, {})
            if not isinstance(inner, dict):
                raise ValueError(f"--set {setting!r}: {'.'.join(path[: depth + 1])} is not a section, it is {inner!r}")
            inner = dict(inner)  # copied: the caller's nested mappings stay as they were
            section[name] = inner
            section = inner
        section[path[-1]] = value
    return values


def load_config(path: str | Path, overrides: dict[str, Any] | None = None, settings: Sequence[str] = ()) -> TrainConfig:
    """Read and validate a YAML config; ``overrides`` replace top-level keys, then each
    ``KEY=VALUE`` of ``settings`` sets a key, dotted into its section (:func:`apply_settings`)."""
    values = read_yaml(path)
    if not isinstance(values, dict):
        raise ValueError(f"{path} must be a mapping of config keys, got {values!r}")
    if overrides:
        values = {**values, **overrides}
    if settings:
        values = apply_settings(values, settings)
    config = _build(TrainConfig, values, "")
    config.validate()
    return config


def config_from_dict(values: dict[str, Any]) -> TrainConfig:
    config = _build(TrainConfig, values, "")
    config.validate()
    return config
