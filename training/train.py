"""Train a MaskablePPO agent: vectorised envs, self-play against frozen snapshots mixed with
scripted baselines, periodic masked evaluation against the baselines, TensorBoard logs,
checkpoints, the best model, resume, a progress bar and a learning-curve PNG.

Reads top to bottom: build the envs, build (or resume) the model, attach the callbacks,
learn, write the outputs. ``block-dominoes train --config configs/default.yaml`` runs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from block_env.aec import raw_env
from block_env.agents import make_agent, make_env, make_vector_env
from block_env.agents.policy import (
    ACTOR_KEYS,
    CRITIC_KEYS,
    PolicyAgent,
    activation_class,
    average_actors,
    build_policy,
    check_averageable,
    check_new_folder,
)
from block_env.arena.play import progress_bar
from block_env.episodes import play_moves
from block_env.files import replace_folder, save_atomically, write_atomically, write_csv_atomically
from block_env.gym_env import BlockDominoesEnv
from block_env.observations import layout_for, privileged_layout
from block_env.rules import Rules
from block_env.seeding import derive_seed
from block_env.training.config import LEARNER_PARTNER, PRIOR_PLACEHOLDER, PretrainConfig, TrainConfig, load_config
from block_env.training.curves import CurveLine, head_to_head, plot_curve, read_curve
from block_env.training.expert import expert_iteration
from block_env.training.teaching import (
    PolicyTargets,
    check_decisions,
    decisions_in_processes,
    fit_policy,
    join_decisions,
    learner_shape,
    load_decisions,
    move_value_targets,
    one_hot_targets,
    policy_distribution,
    round_points_scale,
    save_decisions,
    save_policy_agent,
    split_held_out,
    with_mirrored,
)

BEST, FINAL, LATEST, STEP_0, PRIOR = "best", "final", "latest", "step_0", "prior"
#: The seed stream of the learning curve's deals: point k plays derive_seed(seed, EVALUATION_DEALS, k).
EVALUATION_DEALS = "evaluation"


@dataclass
class RunPaths:
    """Where a run writes its outputs (all under ``root``)."""

    root: Path

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def tensorboard(self) -> Path:
        return self.root / "tensorboard"

    @property
    def curve_csv(self) -> Path:
        return self.root / "learning_curve.csv"

    @property
    def curve_png(self) -> Path:
        return self.root / "learning_curve.png"

    @property
    def teacher_decisions(self) -> Path:
        return self.root / "teacher_decisions.npz"

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    def agent(self, name: str) -> Path:
        return self.root / name

    def earlier_run(self) -> list[str]:
        """What is already in ``root`` (sorted names): a new run there (not a resume) would mix
        its curve, best agent, snapshots and expert rounds with a run's outputs, or overwrite them."""
        return sorted(path.name for path in self.root.iterdir()) if self.root.is_dir() else []

    def resumable(self) -> bool:
        """Whether ``root`` holds a PPO checkpoint that ``--resume latest`` can continue."""
        return self.checkpoints.is_dir() and any(self.checkpoints.glob("*.zip"))


# -- environments ------------------------------------------------------------------------------


def make_vec_env(config: TrainConfig, opponents: list[str]) -> Any:
    """The training envs, with VecMonitor: "batched" (default) is every game on the batched
    engine in this process (block_env.training.sb3_vec_env.BlockDominoesVecEnv), or in
    ``env_processes`` processes (ShardedVecEnv); "subproc" and "dummy" are SB3's
    vectorisations of single envs."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    rules = config.resolved_rules()
    options = env_options(config, opponents)
    if config.vec_env == "batched":
        if config.opponents.fixed_partner is not None:  # the learner's copy comes once it exists
            options["partner"] = config.opponents.fixed_partner
        privileged = config.ppo.asymmetric  # the hidden hands ride along for the critic
        if config.env_processes == 1:
            vec = batched_shard(config.n_envs, rules, privileged, options)
        else:
            from block_env.training.sb3_vec_env import ShardedVecEnv

            size = config.n_envs // config.env_processes
            vec = ShardedVecEnv(
                [functools.partial(batched_shard, size, rules, privileged, options)] * config.env_processes
            )
        vec.seed(derive_seed(config.seed, "env"))
        return VecMonitor(vec)

    def factory(rank: int) -> Callable[[], BlockDominoesEnv]:
        def build() -> BlockDominoesEnv:
            import torch

            torch.set_num_threads(1)  # several env processes share 2 cores; snapshots act one obs at a time
            env = make_env(rules, **options)
            env.reset(seed=derive_seed(config.seed, "env", rank))
            return env

        return build

    builders: list[Callable[[], gymnasium.Env]] = [factory(rank) for rank in range(config.n_envs)]
    if config.vec_env == "subproc" and config.n_envs > 1:
        vec = SubprocVecEnv(builders, start_method="spawn")
    else:
        vec = DummyVecEnv(builders)
    return VecMonitor(vec)


def env_options(config: TrainConfig, opponents: list[str]) -> dict[str, Any]:
    """The config's settings of a training env, with ``opponents`` in the other seats."""
    return {
        "opponents": opponents,
        "episode": config.episode,
        "reward": config.reward,
        "observation": config.observation,
        "reward_scale": config.reward_scale,
    }


def batched_shard(n_envs: int, rules: Rules, privileged: bool, options: dict[str, Any]) -> Any:
    """``n_envs`` batched games as an SB3 VecEnv: the whole env in one process, or one
    process's share of a sharded one (built in that process)."""
    from block_env.training.sb3_vec_env import BlockDominoesVecEnv

    return BlockDominoesVecEnv(make_vector_env(n_envs, rules, privileged=privileged, **options))


# -- saving and safe loading ------------------------------------------------------------------


def policy_class(config: TrainConfig) -> Any:
    if config.ppo.asymmetric:
        from block_env.training.critic import AsymmetricActorCriticPolicy

        return AsymmetricActorCriticPolicy
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    return MaskableActorCriticPolicy


def policy_kwargs(config: TrainConfig) -> dict[str, Any]:
    arch = list(config.ppo.net_arch)
    kwargs = {"net_arch": {"pi": arch, "vf": arch}, "activation_fn": activation_class(config.ppo.activation)}
    if config.ppo.asymmetric:
        kwargs["actor_size"] = layout_for(config.resolved_rules(), config.observation).size
    return kwargs


def read_checkpoint_data(path: Path) -> dict[str, Any]:
    """An SB3 checkpoint's ``data`` entry (its settings, JSON; the pickled ones left as they
    are); ValueError for a missing file or one that is not such a checkpoint."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data").decode())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such checkpoint") from None
    except zipfile.BadZipFile:
        raise ValueError(f"{path} is not a checkpoint: not a zip file") from None
    except KeyError:
        raise ValueError(f"{path} is not a stable-baselines3 checkpoint: it has no 'data' entry") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: its 'data' entry is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: its 'data' entry is not a JSON object")
    return data


def safe_custom_objects(path: Path, config: TrainConfig, env: Any) -> dict[str, Any]:
    """Replacements for every cloudpickled entry of an SB3 checkpoint, built from the config,
    so that loading it executes no pickled code (SB3 reads the tensors weights-only).
    ValueError for a config whose activation is not the checkpoint's, which the replaced
    ``policy_kwargs`` would otherwise hide (other layers' sizes are refused as the weights load)."""
    from stable_baselines3.common.utils import ConstantSchedule

    data = read_checkpoint_data(path)
    # SB3 keeps the activation's name readable beside its pickled copy.
    saved = data.get("policy_kwargs", {})
    activation = str(activation_class(config.ppo.activation))
    if isinstance(saved, dict) and saved.get("activation_fn", activation) != activation:
        raise ValueError(
            f"{path}: its network uses {saved['activation_fn']}, the config's ppo.activation is "
            f"{config.ppo.activation!r}"
        )
    known: dict[str, Any] = {
        "policy_class": policy_class(config),
        "policy_kwargs": policy_kwargs(config),
        "observation_space": env.observation_space,
        "action_space": env.action_space,
        "lr_schedule": learning_rate_schedule(config),
        "learning_rate": learning_rate_schedule(config),
        "clip_range": ConstantSchedule(config.ppo.clip_range),
        "clip_range_vf": None,
        "rollout_buffer_class": None,
        "rollout_buffer_kwargs": {},
        # Rollout state: None makes learn() reset the envs and start fresh buffers.
        "_last_obs": None,
        "_last_episode_starts": None,
        "_last_original_obs": None,
        "ep_info_buffer": None,
        "ep_success_buffer": None,
    }
    pickled = [key for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value]
    unknown = sorted(set(pickled) - set(known))
    if unknown:
        raise ValueError(f"{path}: refusing to unpickle checkpoint entries {unknown} (no safe replacement)")
    return {key: known[key] for key in pickled}


def load_checkpoint(path: Path, config: TrainConfig, env: Any) -> Any:
    """The checkpoint's model (weights, optimizer state, step count) learning on with the
    config's PPO settings: a resume after editing the run's ``ppo`` section uses the edits
    (a new ``n_steps`` sizes a new rollout buffer). ValueError for a config of another
    network (other layers or activation) than the checkpoint's."""
    from sb3_contrib import MaskablePPO

    settings = {**safe_custom_objects(path, config, env), **ppo_settings(config)}
    try:
        return MaskablePPO.load(path, env=env, device="cpu", custom_objects=settings)
    except RuntimeError as e:
        details = [line.strip() for line in str(e).splitlines()[1:] if line.strip()]
        if "Error(s) in loading state_dict" in str(e) and details:  # weights of other shapes
            raise ValueError(f"{path}: its network does not fit the config's ({details[0]})") from None
        raise ValueError(f"{path}: its weights cannot be loaded ({e})") from None


# -- imitation warm start ---------------------------------------------------------------------


def collect_teacher_decisions(config: TrainConfig, progress: bool = True) -> dict[str, np.ndarray]:
    """Play teacher-vs-teacher episodes (one teacher per seat, each reading its own encoding;
    with ``pretrain.against``, one side's seats in turn, that agent at the others; with
    ``pretrain.played_by``, its moves played while the teacher labels them); keep every
    labelled decision with two or more legal moves: the learner's observation of it (with
    the asymmetric critic, the hidden hands appended as the vector env's privileged
    observations have them), mask, the teacher's action, the deciding seat and its scaled
    episode return (in the training reward mode), for the value head. With
    ``pretrain.workers`` above 1 the episodes are shared out among that many processes, or
    Ray tasks with ``pretrain.ray_address`` (the same decisions either way). ``progress``: a
    bar of the decisions gathered so far, with the time left."""
    workers, wanted = config.pretrain.workers, config.pretrain.decisions
    share = -(-wanted // workers)
    tasks = [(config, k, workers, share) for k in range(workers)]
    where = "" if config.pretrain.ray_address is None else " on Ray"
    with progress_bar(progress, wanted, f"teacher decisions ({config.pretrain.teacher}){where}") as advance:
        shown = 0

        def gathered(more: int) -> None:  # the shares add up to a little over wanted
            nonlocal shown
            step = min(more, wanted - shown)
            shown += step
            advance(step)

        data = decisions_in_processes(
            teacher_games,
            tasks,
            workers,
            progress=gathered if progress else None,
            ray_address=config.pretrain.ray_address,
        )
    return {key: values[:wanted] for key, values in data.items()}


def teacher_games(
    config: TrainConfig, worker: int, workers: int, wanted: int, report: Callable[[int], None] | None = None
) -> dict[str, np.ndarray]:
    """:func:`collect_teacher_decisions`' share of process ``worker`` of ``workers``: episodes
    ``worker``, ``worker + workers``, ... of the teacher-game seeds, until ``wanted`` decisions;
    ``report`` is told the decisions gathered so far after each episode."""
    from threadpoolctl import threadpool_limits

    # One process per core: a second BLAS thread (a guided teacher's network) would only wait.
    with threadpool_limits(1, user_api="blas"):
        return _teacher_games(config, worker, workers, wanted, report)


def _teacher_games(
    config: TrainConfig, worker: int, workers: int, wanted: int, report: Callable[[int], None] | None = None
) -> dict[str, np.ndarray]:
    rules = config.resolved_rules()
    assert config.pretrain.teacher is not None
    env = raw_env(rules, episode=config.episode, reward=config.reward, observation=config.observation)
    pretrain = config.pretrain

    def per_seat(spec: str | None, stream: str) -> list[Any]:
        if spec is None:
            return [None] * rules.num_players
        return [
            make_agent(spec, rules, seed=derive_seed(config.seed, stream, seat)) for seat in range(rules.num_players)
        ]

    teachers, played_by, against = (
        per_seat(pretrain.teacher, "teacher"),
        per_seat(pretrain.played_by, "played_by"),
        per_seat(pretrain.against, "against"),
    )
    observations, masks, actions, returns = [], [], [], []
    values: list[np.ndarray] = []  # each decision's move values, when the targets are values
    by_values = config.pretrain.targets == "values"
    seats: list[int] = []

    class RecordingTeacher:
        """One seat's teacher, keeping each decision it makes with two or more legal moves;
        with a ``played_by`` agent, that agent's move is played instead of the teacher's."""

        def __init__(self, teacher: Any, played_by: Any) -> None:
            self.teacher, self.played_by = teacher, played_by
            self.observation = teacher.observation  # play_moves hands it its own encoding

        def reset(self, seed: int | None = None) -> None:
            self.teacher.reset(seed)
            if self.played_by is not None:
                self.played_by.reset(None if seed is None else derive_seed(seed, "played_by"))

        def act(self, obs: dict[str, np.ndarray]) -> int:
            deciding = obs["action_mask"].sum() > 1
            if deciding and by_values:  # the same draws as its act: what act_batch decides by
                searched = self.teacher.search_moves(obs["observation"][None], obs["action_mask"][None])[0]
                action = searched.choice
                move_values = np.full(len(obs["action_mask"]), np.nan, dtype=np.float32)
                move_values[searched.legal] = searched.means
                values.append(move_values)
            else:
                action = self.teacher.act(obs)
            if deciding:
                agent = env.agent_selection
                learner_sees = env.observe(agent)["observation"]  # in the learner's encoding
                if config.ppo.asymmetric:  # what the asymmetric critic reads: the hidden hands appended
                    observations.append(np.concatenate([learner_sees, env.hidden_hands(agent)]))
                else:
                    observations.append(learner_sees)
                masks.append(obs["action_mask"].astype(bool))
                actions.append(action)
                seats.append(env.seat_of(agent))
            if self.played_by is None:
                return action
            return self.played_by.act(env.observe(env.agent_selection, self.played_by.observation))

    recording = [RecordingTeacher(teacher, played) for teacher, played in zip(teachers, played_by)]
    episode = worker
    while len(actions) < wanted:
        players: list[Any] = recording
        if pretrain.against is not None:  # one side labelled, the sides in turn game by game
            side = episode % rules.num_sides
            players = [recording[s] if rules.side_of(s) == side else against[s] for s in range(rules.num_players)]
        env.reset(seed=derive_seed(config.seed, "teacher_games", episode))
        for seat, player in enumerate(players):
            player.reset(seed=derive_seed(derive_seed(config.seed, "teacher_games", episode), "seat", seat))
        episode += workers
        first = len(seats)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for _ in play_moves(env, players):
            for a in env.possible_agents:
                totals[a] += env.rewards[a]
        returns += [totals[env.possible_agents[s]] * config.reward_scale for s in seats[first:]]
        if report is not None:
            report(min(len(actions), wanted))
    data = {
        "observations": np.asarray(observations[:wanted], dtype=np.float32),
        "masks": np.asarray(masks[:wanted]),
        "actions": np.asarray(actions[:wanted], dtype=np.int64),
        "returns": np.asarray(returns[:wanted], dtype=np.float32),
        "seats": np.asarray(seats[:wanted], dtype=np.int64),
    }
    if by_values:
        data["values"] = np.asarray(values[:wanted], dtype=np.float32)
    return data


def imitate(model: Any, config: TrainConfig, progress: bool = True, keep: Path | None = None) -> dict[str, Any]:
    """Behaviour cloning of the teacher into the policy (and its outcomes into the value
    head), before PPO: on ``pretrain.decisions`` of its decisions (saved at ``keep``, when
    given) and those of ``pretrain.earlier_decisions``, less the share ``pretrain.holdout``
    measures the fit on. Returns :func:`fit_policy`'s figures and the seconds the teacher games
    and the fitting took."""
    started = time.perf_counter()
    width, actions = model.observation_space.shape[0], model.action_space.n
    parts = [load_decisions(path, config, width, actions) for path in config.pretrain.earlier_decisions]
    if config.pretrain.decisions:
        parts.append(collect_teacher_decisions(config, progress))
        if keep is not None:
            try:
                save_decisions(keep, parts[-1], config)
            except OSError as e:  # the decisions are still fitted: losing the copy is no reason to stop
                print(f"warning: could not keep the teacher decisions at {keep}: {e}", flush=True)
    held_out = None
    if config.pretrain.holdout:  # the decisions are kept above, whole, before any is held out
        total = sum(len(part["actions"]) for part in parts)
        fitted, held = zip(*(split_held_out(part, config.pretrain.holdout) for part in parts))
        parts, held_data = list(fitted), join_decisions(held, config.pretrain.targets)
        if not 0 < len(held_data["actions"]) < total:
            raise ValueError(
                f"pretrain.holdout {config.pretrain.holdout} of {total} decisions holds out "
                f"{len(held_data['actions'])}: none would be {'fitted' if len(held_data['actions']) else 'held out'}"
            )
        held_out = PolicyTargets(
            held_data["observations"],
            held_data["masks"],
            imitation_targets(held_data, config, model.policy),
            held_data.get("values"),
        )
    data = join_decisions(parts, config.pretrain.targets)
    del parts  # the parts are not held beside the joined arrays while fitting
    gathered = time.perf_counter()
    targets = imitation_targets(data, config, model.policy)
    observations, masks, returns = data["observations"], data["masks"], data["returns"]
    if config.pretrain.mirror:
        rules = config.resolved_rules()
        layout = layout_for(rules, config.observation)
        observations, masks, targets, returns = with_mirrored(
            layout, rules.tile_set, observations, masks, targets, returns
        )
    del data
    epochs = config.pretrain.epochs
    with progress_bar(
        progress, epochs * len(targets), f"fitting {len(targets)} decisions x {epochs} epochs"
    ) as advance:
        stats = fit_policy(
            model,
            observations,
            masks,
            targets,
            returns,
            epochs=epochs,
            batch_size=config.pretrain.batch_size,
            learning_rate=config.pretrain.learning_rate,
            seed=derive_seed(config.seed, "imitation_batches"),
            advance=advance,
            held_out=held_out,
            belief_weight=config.pretrain.belief_weight,
            other_seats=config.resolved_rules().num_players - 1,
            anneal=config.pretrain.anneal_learning_rate,
        )
    return {
        **stats,
        "teacher_seconds": round(gathered - started, 1),
        "fit_seconds": round(time.perf_counter() - gathered, 1),
    }


def imitation_targets(data: dict[str, np.ndarray], config: TrainConfig, warm_start: Any = None) -> np.ndarray:
    """What the policy is fitted to on a set of teacher decisions: its move values' softmax
    (``pretrain.targets: values``) or the teacher's moves; with ``pretrain.hand_at_most``, the
    ``warm_start`` policy's own move distribution (the caller passes it before fitting) where
    the deciding seat holds more tiles."""
    if config.pretrain.targets == "values":
        targets = move_value_targets(data["values"], config.pretrain.temperature)
    else:
        targets = one_hot_targets(data["actions"], data["masks"].shape[1])
    if config.pretrain.hand_at_most is not None:
        if warm_start is None:
            raise ValueError("pretrain.hand_at_most's targets read the warm start's policy: pass it")
        held = layout_for(config.resolved_rules(), config.observation).offset("hand_counts")  # the observer's
        earlier = np.flatnonzero(data["observations"][:, held] > config.pretrain.hand_at_most)
        targets[earlier] = policy_distribution(
            warm_start, data["observations"], data["masks"], config.pretrain.batch_size, earlier
        )
    return targets


# -- evaluation and learning curve ------------------------------------------------------------


def evaluate_against_baselines(agent_dir: Path, config: TrainConfig, deals: int, seed: int) -> dict[str, Any]:
    """Net points per round of the saved agent against each baseline (duplicate deals,
    masks always on), with 95% intervals and the number of deals played: ``deals``, or, with
    ``eval.halfwidth``, as many more as that interval needs (:func:`head_to_head`); every
    opponent on the same deals, those of ``seed``."""
    spec = f"policy:{agent_dir}"
    row: dict[str, Any] = {}
    margins = []
    for opponent in config.eval.opponents:
        estimate = head_to_head(
            spec,
            opponent,
            config.resolved_rules(),
            episode=config.episode,
            deals=deals,
            seed=seed,
            halfwidth=config.eval.halfwidth,
            max_deals=config.eval.max_deals,
        )
        row[f"vs_{opponent}"] = estimate.mean
        row[f"vs_{opponent}_low"] = estimate.low
        row[f"vs_{opponent}_high"] = estimate.high
        row[f"vs_{opponent}_deals"] = estimate.n
        margins.append(estimate.mean)
    row["mean_margin"] = float(np.mean(margins))
    return row


def write_learning_curve(paths: RunPaths, opponents: tuple[str, ...]) -> None:
    """learning_curve.png from learning_curve.csv: each opponent's margin per point with its
    interval, and which deals the points played (their arena seeds are the CSV's ``seed``)."""
    rows = read_curve(paths.curve_csv)
    if not rows:
        return
    lines = []
    for opponent in opponents:
        deals = sorted({int(r.get(f"vs_{opponent}_deals") or 0) for r in rows} - {0})
        label = f"vs {opponent}"
        if deals:
            span = f"{deals[0]:,}" if len(deals) == 1 else f"{deals[0]:,}-{deals[-1]:,}"
            label += f" ({span} deals a point)"
        lines.append(
            CurveLine(
                label,
                [float(r[f"vs_{opponent}"]) for r in rows],
                [float(r[f"vs_{opponent}_low"]) for r in rows],
                [float(r[f"vs_{opponent}_high"]) for r in rows],
            )
        )
    seeds = [r.get("seed") or None for r in rows]  # runs from before the seed column have none
    if None not in seeds and len(set(seeds)) == len(seeds):
        note = "every point on fresh duplicate deals (their arena seeds: learning_curve.csv, column seed)"
    else:
        note = "points with the same arena seed (learning_curve.csv, column seed) played the same deals"
    plot_curve(
        paths.curve_png,
        [int(r["timesteps"]) for r in rows],
        lines,
        xlabel="environment steps (learner decisions)",
        title="MaskablePPO learning curve: duplicate-deal evaluation against the baselines",
        note=note,
    )


# -- callbacks --------------------------------------------------------------------------------


class PeriodicCallback(BaseCallback):
    """Calls :meth:`on_period` each time another ``every`` env steps have passed (counted
    from a multiple of ``every``, so that a resumed run keeps the same schedule)."""

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self.next_at = 0

    def _on_training_start(self) -> None:
        self.next_at = (self.num_timesteps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_at:
            self.next_at += self.every
            self.on_period()
        return True

    def on_period(self) -> None:
        raise NotImplementedError


class SelfPlayCallback(PeriodicCallback):
    """Every ``opponents.snapshot_every`` steps, freeze the learner into the opponent pool
    (the newest ``max_snapshots`` snapshots beside the scripted baselines)."""

    def __init__(self, config: TrainConfig, paths: RunPaths, opponent_pool: list[str]) -> None:
        super().__init__(config.opponents.snapshot_every)
        self.config = config
        self.paths = paths
        self.opponent_pool = opponent_pool

    def on_period(self) -> None:
        folder = save_policy_agent(self.model, self.paths.snapshots / f"step_{self.num_timesteps:09d}", self.config)
        self.opponent_pool[:] = opponent_pool(self.config, self.paths)
        self.training_env.env_method("set_opponents", list(self.opponent_pool))
        self.logger.record("self_play/snapshot", str(folder.name))


class LearnerPartnerCallback(BaseCallback):
    """``opponents.partner: learner``: a copy of the learner sits opposite it in every game,
    saved to the run's ``partner`` folder at the start of every rollout, so that both seats of
    its side play the policy that collects it."""

    def __init__(self, config: TrainConfig, paths: RunPaths) -> None:
        super().__init__()
        self.config = config
        self.paths = paths

    def _on_rollout_start(self) -> None:
        folder = save_policy_agent(self.model, self.paths.root / "partner", self.config)
        self.training_env.env_method("set_partner", f"policy:{folder}")

    def _on_step(self) -> bool:
        return True


class EvaluateCallback(PeriodicCallback):
    """Every ``eval.every`` steps, play the baselines (masks on), log the margins to
    TensorBoard and the learning curve, and keep the best agent so far."""

    def __init__(self, config: TrainConfig, paths: RunPaths, phases: dict[str, float] | None = None) -> None:
        super().__init__(config.eval.every)
        self.config = config
        self.paths = paths
        self.phases = {} if phases is None else phases  # its seconds go to phases["evaluation"]
        self.best = -float("inf")
        self.last_at = -1
        self.points = 0  # learning-curve points so far: the next one's deal stream index

    def _on_training_start(self) -> None:
        super()._on_training_start()
        rows = read_curve(self.paths.curve_csv)
        if rows:  # a resumed run: the best so far, and its next point on deals no earlier point played
            self.best = max(float(r["mean_margin"]) for r in rows)
            self.points = len(rows)
        else:
            self.evaluate()  # the starting point of the curve (after any warm start)

    def _on_training_end(self) -> None:
        if self.last_at != self.num_timesteps:
            self.evaluate()

    def on_period(self) -> None:
        self.evaluate()

    def evaluate(self) -> None:
        """A learning-curve point now: the latest agent against the baselines, on fresh deals
        (point k plays those of ``derive_seed(seed, "evaluation", k)``, the CSV's ``seed``), so
        that the best agent is chosen on deals the choice has not seen before."""
        config, paths = self.config, self.paths
        self.last_at = self.num_timesteps
        with timed(self.phases, "evaluation"):
            latest = save_policy_agent(self.model, paths.agent(LATEST), config)
            seed = derive_seed(config.seed, EVALUATION_DEALS, self.points)
            row = {
                "timesteps": self.num_timesteps,
                "seed": seed,
                **evaluate_against_baselines(latest, config, config.eval.deals, seed=seed),
            }
        self.points += 1
        for key, value in row.items():
            if key not in ("timesteps", "seed"):
                self.logger.record(f"eval/{key}", value)
        self.logger.dump(self.num_timesteps)
        rows = read_curve(paths.curve_csv)
        write_csv_atomically(paths.curve_csv, list(row), [*rows, row])  # a crash keeps every earlier point
        if row["mean_margin"] > self.best:
            self.best = row["mean_margin"]
            with replace_folder(paths.agent(BEST)) as best:
                shutil.copytree(latest, best, dirs_exist_ok=True)


def opponent_pool(config: TrainConfig, paths: RunPaths, with_snapshots: bool = True) -> list[str]:
    """The scripted baselines plus the newest saved snapshots (self-play)."""
    snapshots = []
    if with_snapshots and config.opponents.self_play and paths.snapshots.exists():
        snapshots = sorted(p for p in paths.snapshots.iterdir() if p.is_dir())[-config.opponents.max_snapshots :]
    pool = [*config.opponents.scripted, *(f"policy:{p}" for p in snapshots)]
    return pool or ["random"]  # self-play only, before the first snapshot


class CheckpointCallback(PeriodicCallback):
    """Every ``checkpoint_every`` steps, a resumable checkpoint ``checkpoints/ppo_STEPS_steps.zip``,
    written atomically: a process killed while saving leaves the previous checkpoints whole."""

    def __init__(self, config: TrainConfig, paths: RunPaths) -> None:
        super().__init__(config.checkpoint_every)
        self.paths = paths

    def on_period(self) -> None:
        save_checkpoint(self.model, self.paths)


def save_checkpoint(model: Any, paths: RunPaths) -> Path:
    """The model as ``checkpoints/ppo_STEPS_steps.zip`` (atomically); its path."""
    paths.checkpoints.mkdir(parents=True, exist_ok=True)
    path = paths.checkpoints / f"ppo_{model.num_timesteps}_steps.zip"
    save_atomically(path, model.save)
    return path


def checkpoint_steps(checkpoint: Path) -> int:
    """The env steps a ``ppo_STEPS_steps.zip`` checkpoint holds, read from its name."""
    return int(checkpoint.stem.split("_")[1])


def latest_checkpoint(run: Path) -> Path:
    """The newest checkpoint of the run folder ``run`` (ValueError if there is none)."""
    found = sorted((run / "checkpoints").glob("ppo_*_steps.zip"), key=checkpoint_steps)
    if not found:
        raise ValueError(f"{run / 'checkpoints'} holds no checkpoint to resume from")
    return found[-1]


def export_checkpoint(checkpoint: str | Path, out: str | Path, config: TrainConfig | None = None) -> Path:
    """Write a PPO checkpoint's policy (with the asymmetric critic, its actor alone) as an agent
    folder at ``out`` (a folder that does not exist yet, or is empty), the same way the run
    writes ``latest`` at a learning-curve point, so that any checkpoint can play in the arena.
    ``config``: the run's; by default the run folder's ``config.yaml``, the run folder being
    the one that holds the checkpoint (``final.zip``) or its ``checkpoints/`` folder.
    ValueError, before anything is written, for a missing file or one that is not such a
    checkpoint, one with no run config beside it, or a config of another network (other
    layers or activation) than the checkpoint's."""
    checkpoint, target = Path(checkpoint), Path(out)
    check_new_folder(target, "the checkpoint's agent is written to a new folder")
    read_checkpoint_data(checkpoint)  # a missing file is named before its config is looked for
    if config is None:
        beside = [RunPaths(folder).config for folder in (checkpoint.parent, checkpoint.parent.parent)]
        found = [path for path in beside if path.is_file()]
        if not found:
            raise ValueError(f"{checkpoint}: no run config at {beside[0]} or {beside[1]}; name the run's config")
        config = load_config(found[0])
    # One game on the batched engine, as in training, gives the checkpoint's spaces.
    env = batched_shard(1, config.resolved_rules(), config.ppo.asymmetric, env_options(config, ["random"]))
    try:
        model = load_checkpoint(checkpoint, config, env)
    finally:
        env.close()
    return save_policy_agent(model, target, config)


class UpdateThreadsCallback(BaseCallback):
    """torch on every core for the PPO update (large minibatches: 30% faster on 2 cores), and
    for the rollout's forward passes when the games step in this process (they wait for the
    forward pass, so its second thread takes an idle core: a third off its time); one thread
    while collecting rollouts from env processes, whose games step on the other cores. Only
    with the batched env: nothing else runs beside it."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        import torch

        from block_env.training.sb3_vec_env import ShardedVecEnv

        sharded = isinstance(self.training_env.unwrapped, ShardedVecEnv)
        torch.set_num_threads(1 if sharded else self.threads)

    def _on_rollout_end(self) -> None:
        import torch

        torch.set_num_threads(self.threads)


class CriticWarmupCallback(BaseCallback):
    """``ppo.critic_warmup``: a rollout that starts before that many env steps is learned from
    by the value network alone (the whole rollout, though it may end past the limit); the
    policy's layers take no gradient until then."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps

    def _on_rollout_start(self) -> None:
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

        policy = self.model.policy
        assert isinstance(policy, MaskableActorCriticPolicy)  # the asymmetric critic's policy is one too
        learning = self.model.num_timesteps >= self.steps
        for module in (policy.mlp_extractor.policy_net, policy.action_net):
            module.requires_grad_(learning)

    def _on_step(self) -> bool:
        return True


class ProgressCallback(BaseCallback):
    """PPO's env steps on :func:`progress_bar`'s ``advance``: the same bar as the other phases
    (plain lines where the output goes to a file, which SB3's own bar leaves empty until the end)."""

    def __init__(self, advance: Callable[..., None], steps: int) -> None:
        super().__init__()
        self.advance, self.left = advance, steps

    def _on_step(self) -> bool:
        # The last rollout may run past the total: the bar stops at it.
        steps = min(self.training_env.num_envs, self.left)
        if steps > 0:
            self.advance(steps)
            self.left -= steps
        return True


def make_callbacks(
    config: TrainConfig, paths: RunPaths, pool: list[str], phases: dict[str, float] | None = None
) -> list[Any]:
    callbacks: list[Any] = [EvaluateCallback(config, paths, phases), CheckpointCallback(config, paths)]
    if config.vec_env == "batched":
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        callbacks.append(UpdateThreadsCallback(config.update_threads or cores))
    if config.opponents.self_play:
        callbacks.insert(0, SelfPlayCallback(config, paths, pool))
    if config.opponents.partner == LEARNER_PARTNER:
        callbacks.insert(0, LearnerPartnerCallback(config, paths))
    if config.ppo.critic_warmup:
        callbacks.append(CriticWarmupCallback(config.ppo.critic_warmup))
    return callbacks


# -- the run ----------------------------------------------------------------------------------


def learning_rate_schedule(config: TrainConfig) -> Any:
    """The PPO step size as SB3's schedule of the training's progress: ``ppo.learning_rate``
    throughout, or falling linearly to zero (``ppo.anneal_learning_rate``). SB3 measures the
    progress over the whole run, resumed or not: it counts the steps already taken."""
    from stable_baselines3.common.utils import ConstantSchedule, LinearSchedule

    rate = config.ppo.learning_rate
    return LinearSchedule(rate, 0.0, 1.0) if config.ppo.anneal_learning_rate else ConstantSchedule(rate)


def ppo_settings(config: TrainConfig) -> dict[str, Any]:
    """MaskablePPO's hyperparameters from the config's ``ppo`` section: what a fresh model is
    built with and what a resumed one takes over from its checkpoint."""
    p = config.ppo
    return {
        "learning_rate": learning_rate_schedule(config),
        "n_steps": p.n_steps,
        "batch_size": p.batch_size,
        "n_epochs": p.n_epochs,
        "gamma": p.gamma,
        "gae_lambda": p.gae_lambda,
        "clip_range": p.clip_range,
        "ent_coef": p.ent_coef,
        "vf_coef": p.vf_coef,
    }


def build_model(config: TrainConfig, env: Any, paths: RunPaths) -> Any:
    """A fresh MaskablePPO model with the config's settings, logging to the run's TensorBoard folder."""
    from sb3_contrib import MaskablePPO

    return MaskablePPO(
        policy_class(config),
        env,
        **ppo_settings(config),
        policy_kwargs=policy_kwargs(config),
        tensorboard_log=str(paths.tensorboard),
        seed=config.seed,
        device="cpu",
        verbose=0,
    )


def init_from_agent(model: Any, config: TrainConfig) -> None:
    """Copy ``pretrain.init_from``'s policy network and its value head into the learner, so
    that it starts deciding and valuing as that agent; ValueError when the learner's network
    cannot hold it (other layers, or one narrower). The first layers read its encoding's
    pieces where the learner's input has them (the same encoding, or one holding it, such as
    "tracked" holding "vector") and start at zero weight on the learner's other inputs. A
    learner with wider hidden layers (``ppo.net_arch``) holds the source's units first: the
    added units start as the learner's fresh ones do, at zero weight into the source's units
    and the outputs (a larger network that begins as the smaller one, its new units free to
    learn). An asymmetric critic, which also reads the hidden hands, starts as the source's
    value head that way when the source's values are in the learner's units (its
    ``value_scale`` is the config's ``reward_scale`` over zero-sum rounds); otherwise it starts
    fresh."""
    import torch

    assert config.pretrain.init_from is not None
    rules = config.resolved_rules()
    source = make_agent(config.pretrain.init_from, rules)
    if not isinstance(source, PolicyAgent):
        raise ValueError(f"pretrain.init_from must name a trained agent, got {config.pretrain.init_from!r}")
    if source.move_scorer is not None:  # the learner is a plain network: say what it does not get
        print(f"warm start: {config.pretrain.init_from}'s network alone, without its move scorer", flush=True)
    if source.activation != config.ppo.activation:
        raise ValueError(
            f"pretrain.init_from {config.pretrain.init_from!r}: its network uses activation {source.activation!r}, "
            f"ppo.activation is {config.ppo.activation!r}"
        )
    state = model.policy.state_dict()
    same_units = source.value_scale is not None and source.value_scale == round_points_scale(config)
    copied = ACTOR_KEYS + CRITIC_KEYS if not config.ppo.asymmetric or same_units else ACTOR_KEYS
    source_layout = layout_for(rules, source.observation)
    critic_layout = (
        privileged_layout(rules, config.observation) if config.ppo.asymmetric else layout_for(rules, config.observation)
    )
    first_layers = {
        f"{ACTOR_KEYS[0]}0.weight": source_layout.columns_in(layout_for(rules, config.observation)),
        f"{CRITIC_KEYS[0]}0.weight": source_layout.columns_in(critic_layout),
    }
    source_state = {key: tensor for key, tensor in source.policy.state_dict().items() if key.startswith(copied)}

    def does_not_fit(key: str) -> ValueError:
        return ValueError(
            f"pretrain.init_from {config.pretrain.init_from!r}: its network does not fit ppo.net_arch "
            f"{list(config.ppo.net_arch)} ({key})"
        )

    learner_keys = {key for key in state if key.startswith(copied)}
    if learner_keys != set(source_state):
        raise does_not_fit(", ".join(sorted(learner_keys ^ set(source_state))))
    for key, tensor in source_state.items():
        target = state[key]
        units = tensor.shape[0]
        if target.dim() != tensor.dim() or target.shape[0] < units:
            raise does_not_fit(key)
        if tensor.dim() == 1:  # a bias: the source's units first, the added ones as initialised
            state[key] = target.clone()
            state[key][:units] = tensor
            continue
        # Each input column where the learner's input has it: the mapped encoding's, or the
        # source's units first in a wider layer; the source's units read nothing else.
        columns = first_layers.get(key, range(tensor.shape[1]))
        if len(columns) != tensor.shape[1] or max(columns) >= target.shape[1]:
            raise does_not_fit(key)
        state[key] = target.clone()
        state[key][:units] = 0.0
        state[key][:units, torch.as_tensor(list(columns))] = tensor
    model.policy.load_state_dict(state)


@contextlib.contextmanager
def timed(phases: dict[str, float], name: str) -> Iterator[None]:
    """Adds the seconds the block took to ``phases[name]`` (the run summary's phase times)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = round(phases.get(name, 0.0) + time.perf_counter() - started, 1)


def train_prior(config: TrainConfig, paths: RunPaths, progress: bool = True) -> dict[str, Any]:
    """``pretrain.prior``'s stage: a "vector" network (the learner's architecture, a value
    head that reads the observation) fitted to the prior's teacher in games of its own (a
    seed derived from the run's), saved as the run's ``prior`` agent."""
    prior = config.pretrain.prior
    assert prior is not None
    stage = dataclasses.replace(
        config,
        observation="vector",
        seed=derive_seed(config.seed, PRIOR) % 2**32,  # its own teacher games; SB3 takes seeds below 2**32
        env_processes=1,
        ppo=dataclasses.replace(config.ppo, critic="observation"),
        pretrain=PretrainConfig(
            teacher=prior.teacher,
            decisions=prior.decisions,
            epochs=prior.epochs,
            batch_size=prior.batch_size,
            learning_rate=prior.learning_rate,
            workers=config.pretrain.workers,
            ray_address=config.pretrain.ray_address,
        ),
    )
    env = make_vec_env(stage, ["random"])  # only its spaces: the stage takes no PPO step
    try:
        model = build_model(stage, env, paths)
        stats = imitate(model, stage, progress)
    finally:
        env.close()
    save_policy_agent(model, paths.agent(PRIOR), stage)
    print(f"prior: imitated {prior.teacher} on {int(stats['decisions'])} decisions, accuracy {stats['accuracy']:.1%}")
    return stats


def with_prior(config: TrainConfig, paths: RunPaths) -> TrainConfig:
    """``config`` with ``{prior}`` in the warm start's agent specs (teacher, ``init_from``,
    ``played_by``, ``against``) replaced by the run's prior agent."""
    spec = f"policy:{paths.agent(PRIOR)}"
    resolved = {
        name.removeprefix("pretrain."): None if value is None else value.replace(PRIOR_PLACEHOLDER, spec)
        for name, value in config.pretrain.named_specs()
    }
    return dataclasses.replace(config, pretrain=dataclasses.replace(config.pretrain, **resolved))


def warm_start(
    model: Any,
    config: TrainConfig,
    paths: RunPaths,
    progress: bool = True,
    members: Sequence[tuple[str, PolicyAgent]] = (),
) -> dict[str, Any] | None:
    """Start from a trained agent and imitate the teacher (each if the config names one),
    average the result with ``members`` (:func:`averaging_members`, ``pretrain.average_with``),
    then save the step-0 agent: what PPO starts from, so that its own gain can be measured
    against it."""
    stats = None
    if config.pretrain.init_from is not None:
        init_from_agent(model, config)
        print(f"warm start: the policy of {config.pretrain.init_from}", flush=True)
    if config.pretrain.teacher is not None:
        stats = imitate(model, config, progress, keep=paths.teacher_decisions)
        print(
            f"warm start: imitated {config.pretrain.teacher} on {int(stats['decisions'])} decisions, "
            f"accuracy {stats['accuracy']:.1%} (the last pass)",
            flush=True,
        )
        if "kept_epoch" in stats:
            print(
                f"warm start: on {stats['held_out_decisions']} held-out decisions, "
                + ", ".join(
                    f"{f'pass {epoch}' if epoch else 'start'}: loss {fit['loss']:.4f}, agreement {fit['agreement']:.1%}"
                    + (f", value {fit['value']:+.3f}" if "value" in fit else "")
                    + (f", hidden-tile loss {fit['belief_loss']:.4f}" if "belief_loss" in fit else "")
                    for epoch, fit in enumerate(stats["held_out_by_epoch"])
                )
                + f" (the targets' entropy {stats['held_out_target_entropy']:.4f}); kept "
                + (f"pass {stats['kept_epoch']}" if stats["kept_epoch"] else "the start"),
                flush=True,
            )
    if members:
        average_actors(model.policy, config.ppo.activation, members)
        print(f"warm start: the policy averaged with {', '.join(config.pretrain.average_with)}", flush=True)
    save_policy_agent(model, paths.agent(STEP_0), config)
    return stats


def averaging_members(config: TrainConfig) -> list[tuple[str, PolicyAgent]]:
    """``pretrain.average_with``'s agents, by spec, loaded and checked against the network the
    config gives the learner (:func:`~block_env.agents.policy.check_averageable`), so that a run
    refuses them before its teacher games rather than after: ValueError names a member of other
    rules, encoding, layers or activation, or one with a move scorer."""
    if not config.pretrain.average_with:
        return []
    rules = config.resolved_rules()
    members = []
    for spec in config.pretrain.average_with:
        try:
            member = make_agent(spec, rules, observation=config.observation)
        except ValueError as e:
            raise ValueError(f"pretrain.average_with {spec!r}: {e}") from None
        assert isinstance(member, PolicyAgent)  # the config admits pretrained:NAME and policy:PATH only
        members.append((spec, member))
    try:
        check_averageable(build_policy(learner_shape(config)), config.ppo.activation, members)
    except ValueError as e:
        raise ValueError(f"pretrain.average_with: {e}") from None
    return members


def learn(
    model: Any,
    config: TrainConfig,
    paths: RunPaths,
    pool: list[str],
    steps: int,
    fresh: bool,
    progress: bool,
    phases: dict[str, float] | None = None,
) -> bool:
    """PPO for ``steps`` more env steps with the run's callbacks; False when Ctrl-C stopped it
    (a resumable checkpoint is saved then). The learning-curve evaluations' seconds go to
    ``phases["evaluation"]``."""
    from stable_baselines3.common.callbacks import CallbackList

    try:
        with progress_bar(progress, steps, "PPO steps") as advance:
            callbacks = [*make_callbacks(config, paths, pool, phases), ProgressCallback(advance, steps)]
            model.learn(
                total_timesteps=steps, callback=CallbackList(callbacks), reset_num_timesteps=fresh, tb_log_name="ppo"
            )
    except KeyboardInterrupt:
        checkpoint = save_checkpoint(model, paths)
        print(f"interrupted at {model.num_timesteps} steps: resume with --resume {checkpoint}", flush=True)
        return False
    return True


def train(
    config: TrainConfig, out: str | Path, resume: str | Path | None = None, progress: bool = True
) -> dict[str, Any]:
    """Train per ``config`` into ``out``; returns the run summary (also out/training.json).

    Build the envs and the model (or resume a checkpoint), warm-start it, learn, then write
    the learning curve and the final agent.
    """
    import torch
    import yaml
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)  # rollouts and SB3's env processes; the batched env's updates take every core
    paths = RunPaths(Path(out))
    members: list[tuple[str, PolicyAgent]] = []
    if resume is None:  # before any stage runs, not after an hour of the prior's teacher games
        if earlier := paths.earlier_run():
            shown = ", ".join(earlier[:6]) + (f" and {len(earlier) - 6} more" if len(earlier) > 6 else "")
            advice = "choose another --out"
            if paths.resumable():
                steps = checkpoint_steps(latest_checkpoint(paths.root))
                advice += (
                    f" (or continue that run's PPO past its {steps} steps with train's --resume latest"
                    + ("" if steps < config.total_timesteps else " and a larger --total-timesteps")
                    + ")"
                )
            elif paths.teacher_decisions.exists():
                advice += (
                    " (its teacher decisions can be fitted again without their games: pretrain.decisions: 0, "
                    f"pretrain.earlier_decisions: [{paths.teacher_decisions}])"
                )
            raise ValueError(f"{paths.root} is not empty ({shown}): a new run would mix with or overwrite it; {advice}")
        for path in config.pretrain.earlier_decisions:
            check_decisions(path, config)
        members = averaging_members(config)
    paths.root.mkdir(parents=True, exist_ok=True)
    run_config = yaml.safe_dump(config.to_dict(), sort_keys=False)
    if resume is None:
        write_atomically(paths.config, run_config)

    phases: dict[str, float] = {}  # seconds per phase, in the order they ran
    prior_stats = pretrain_stats = expert_rows = None
    if resume is None and config.pretrain.prior is not None:
        with timed(phases, "prior"):
            prior_stats = train_prior(config, paths, progress)
    config = with_prior(config, paths)
    pool = opponent_pool(config, paths, with_snapshots=resume is not None)
    env = make_vec_env(config, pool)
    model = build_model(config, env, paths) if resume is None else load_checkpoint(Path(resume), config, env)
    if resume is not None:
        if config.total_timesteps <= model.num_timesteps:
            env.close()
            raise ValueError(
                f"{resume} already has {model.num_timesteps} steps, total_timesteps is {config.total_timesteps}"
            )
        # once the checkpoint fits it and has steps left: otherwise the run's config stays as it was
        write_atomically(paths.config, run_config)
    if resume is None:
        with timed(phases, "warm_start"):
            pretrain_stats = warm_start(model, config, paths, progress, members)
    if resume is None and config.expert.rounds:
        with timed(phases, "expert_iteration"):
            expert_rows = expert_iteration(model, config, paths.root, progress)
    start_steps = model.num_timesteps
    remaining = config.total_timesteps - start_steps
    started = time.perf_counter()
    finished, fresh = True, resume is None
    if remaining > 0:  # no PPO steps: the run was expert iteration alone
        # numpy's BLAS on one thread while learning (after the warm start, whose teacher may
        # be a search guided by a network, with large products): the opponents' forward
        # passes are small, and BLAS threads waiting on a busy core cost more than they share.
        with threadpool_limits(1, user_api="blas"):
            finished = learn(model, config, paths, pool, remaining, fresh, progress, phases)
    seconds = time.perf_counter() - started
    if remaining > 0:  # PPO's own time: rollouts and updates, the evaluations apart
        phases["ppo"] = round(seconds - phases.get("evaluation", 0.0), 1)
    env.close()
    write_learning_curve(paths, config.eval.opponents)
    if finished:
        save_atomically(paths.root / "final.zip", model.save)
        save_policy_agent(model, paths.agent(FINAL), config)
    steps = model.num_timesteps - start_steps
    summary = {
        "timesteps": model.num_timesteps,
        "seconds": round(seconds, 1),
        "steps_per_second": round(steps / max(seconds, 1e-9), 1),
        "interrupted": not finished,
        "best_agent": str(paths.agent(BEST)),
        "final_agent": str(paths.agent(FINAL)) if finished else None,
        "step_0_agent": str(paths.agent(STEP_0)),
        "learning_curve": str(paths.curve_png),
        "pretrain": pretrain_stats,
        "prior": prior_stats,
        "expert": expert_rows,
        "phases": phases,
    }
    write_atomically(paths.root / "training.json", json.dumps(summary, indent=2) + "\n")
    return summary
