"""Teaching a policy: what training's warm start and expert iteration share. Decisions gathered
in a pool of processes (or as Ray tasks), a policy fitted to a teacher's decisions (or a
search's move values), and the learner saved as an agent folder.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import queue
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agents.policy import ACTOR_KEYS, policy_shape, save_agent
from block_env.files import save_atomically
from block_env.observations import Layout
from block_env.seeding import derive_seed
from block_env.tiles import TileSet
from block_env.training.config import TrainConfig
from block_env.training.reports import REPORT_SECONDS, Gathered, Reporter

#: Logit given to illegal actions in the imitation loss (masked out of the softmax).
MASKED_LOGIT = -1e8
#: Weight of the value head's loss against the policy's in the imitation warm start.
IMITATION_VALUE_WEIGHT = 0.5
#: Rows mirrored at a time: the mirrored observations are written into the result block by block.
MIRROR_BLOCK = 65536


def decisions_in_processes(
    play: Callable[..., dict[str, np.ndarray]],
    tasks: Sequence[Iterable[Any]],
    workers: int,
    done: Callable[[dict[str, np.ndarray]], None] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    ray_address: str | None = None,
) -> dict[str, np.ndarray]:
    """``play(*task)`` for each task, in a pool of ``workers`` processes (in this one when 1),
    or as Ray tasks with ``ray_address`` ("local": a Ray started for them with ``workers``
    CPUs, "auto" or a cluster's address); each task's arrays joined in task order, the same
    arrays wherever they ran. ``done(part)`` is told of each task's part as it comes back.
    With ``progress``, ``play`` gets ``report=``, which it calls with how many decisions it has
    gathered so far, and ``progress(n)`` is told of each ``n`` more over all the tasks (as
    they report, and as their parts come back): a progress bar fed while the tasks play."""
    tasks = [tuple(task) for task in tasks]
    parts: dict[int, dict[str, np.ndarray]] = {}
    gathered = Gathered(progress)

    def take(index: int, part: dict[str, np.ndarray]) -> None:
        parts[index] = part
        gathered(index, len(next(iter(part.values()))))
        if done is not None:
            done(part)

    if ray_address is not None:
        try:
            from block_env.training.ray import decisions_on_ray
        except ImportError as e:
            raise ValueError(f"teacher games on Ray need the [ray] extra (pip install 'block-env[ray]'): {e}") from None
        decisions_on_ray(play, tasks, ray_address, workers, take, gathered if progress else None)
    elif workers == 1:
        for index, task in enumerate(tasks):
            report = {"report": functools.partial(gathered, index)} if progress else {}
            take(index, play(*task, **report))
    else:
        _in_pool(play, tasks, workers, take, gathered if progress else None)
    return {key: np.concatenate([parts[i][key] for i in range(len(tasks))]) for key in parts[0]}


# A pool process's queue to the parent for reports (set as the process starts).
_REPORTS: Any = None


def _listen_to(reports: Any) -> None:
    global _REPORTS
    _REPORTS = reports


def _queued(task: int, decisions: int) -> None:
    _REPORTS.put((task, decisions))


def _in_pool(
    play: Callable[..., dict[str, np.ndarray]],
    tasks: list[tuple[Any, ...]],
    workers: int,
    take: Callable[[int, dict[str, np.ndarray]], None],
    told: Callable[[int, int], None] | None,
) -> None:
    """Each task in a pool of ``workers`` processes, ``take(index, part)`` as each finishes and
    ``told(index, decisions)`` for each report meanwhile."""
    # spawn, not fork: the parent may hold torch threads, which fork can deadlock.
    context = multiprocessing.get_context("spawn")
    reports = context.Queue() if told is not None else None
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_listen_to, initargs=(reports,)
    ) as pool:
        futures = {
            pool.submit(play, *task, **({"report": Reporter(functools.partial(_queued, i))} if told else {})): i
            for i, task in enumerate(tasks)
        }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=REPORT_SECONDS, return_when=FIRST_COMPLETED)
            while reports is not None and told is not None:
                try:
                    told(*reports.get_nowait())
                except queue.Empty:
                    break
            for future in finished:
                take(futures[future], future.result())


def round_points_scale(config: TrainConfig) -> float | None:
    """The learner's value units per zero-sum point of a round (``reward_scale``) when its
    value head estimates a round's zero-sum points: zero-sum reward over round episodes; else
    None."""
    return config.reward_scale if config.reward == "zero_sum" and config.episode == "round" else None


def learner_shape(config: TrainConfig) -> dict[str, Any]:
    """The agent.json keys that shape the learner's network as an agent folder holds it
    (:func:`~block_env.agents.policy.policy_shape`): its encoding's size, the action count,
    ``ppo.net_arch`` for the policy and the value network, and ``ppo.activation``."""
    arch = {"pi": list(config.ppo.net_arch), "vf": list(config.ppo.net_arch)}
    return policy_shape(config.resolved_rules(), config.observation, arch, config.ppo.activation)


def save_policy_agent(model: Any, folder: Path, config: TrainConfig) -> Path:
    """The learner's policy as an agent folder; with the asymmetric critic, its actor alone."""
    shape = learner_shape(config)
    policy = model.policy
    if config.ppo.asymmetric:
        from block_env.training.critic import export_actor

        policy = export_actor(policy, shape)
    # The saved value head is kept only when it read the observation alone: then a search may
    # use it at its leaves.
    value_scale = None if config.ppo.asymmetric else round_points_scale(config)
    return save_agent(
        policy,
        folder,
        config.resolved_rules(),
        config.observation,
        net_arch=shape["net_arch"],
        activation=config.ppo.activation,
        value_scale=value_scale,
    )


#: The arrays of a set of teacher decisions that fitting reads, besides move values.
DECISION_ARRAYS = ("observations", "masks", "actions", "returns", "seats")


def fitted_arrays(targets: str) -> tuple[str, ...]:
    """The arrays of a set of teacher decisions that fitting to ``targets`` reads: move values
    too for "values"."""
    return DECISION_ARRAYS + (("values",) if targets == "values" else ())


def decisions_signature(config: TrainConfig) -> dict[str, Any]:
    """The settings a saved set of teacher decisions is valid under: they fix the observation's
    layout (the critic's hidden hands included), the action space and the units of the value
    head's targets."""
    return {
        "rules": config.resolved_rules().as_dict(),
        "observation": config.observation,
        "critic": config.ppo.critic,
        "episode": config.episode,
        "reward": config.reward,
        "reward_scale": config.reward_scale,
    }


def save_decisions(path: Path, data: dict[str, np.ndarray], config: TrainConfig) -> None:
    """A run's teacher decisions (the arrays :func:`fit_policy` reads) as a compressed ``.npz``,
    with the settings they hold under and where they came from: the slow part of a recipe,
    kept for later rounds to fit again (``pretrain.earlier_decisions``)."""
    pretrain = config.pretrain
    about = {
        **decisions_signature(config),
        "teacher": pretrain.teacher,
        "played_by": pretrain.played_by,
        "against": pretrain.against,
        "seed": config.seed,
        "decisions": len(data["actions"]),
    }
    arrays: dict[str, Any] = {"about": np.array(json.dumps(about)), **data}
    save_atomically(path, lambda temporary: np.savez_compressed(temporary, allow_pickle=False, **arrays))


def check_decisions(path: str | Path, config: TrainConfig) -> None:
    """ValueError, naming ``path``, unless it holds teacher decisions saved under ``config``'s
    settings (the same rules, encoding, critic and reward units) with every array fitting
    reads (move values when it fits to them). Reads the file's header, not its arrays."""
    with opened_decisions(path) as saved:
        _check_saved(saved, path, config)


def load_decisions(path: str | Path, config: TrainConfig, width: int, actions: int) -> dict[str, np.ndarray]:
    """The teacher decisions saved at ``path`` by an earlier run, checked as
    :func:`check_decisions` does and to fit a learner reading ``width`` inputs with ``actions``
    actions; only the arrays fitting reads."""
    with opened_decisions(path) as saved:
        keys = _check_saved(saved, path, config)
        data = {key: saved[key] for key in keys}
    shape = data["observations"].shape[1:], data["masks"].shape[1:]
    if shape != ((width,), (actions,)):
        raise ValueError(
            f"{_named(path)} holds observations of {shape[0]} and masks of {shape[1]}; this learner reads "
            f"({width},) with ({actions},) actions"
        )
    return data


#: Where a set of teacher decisions is named, by default (what their errors lead with).
EARLIER_DECISIONS = "pretrain.earlier_decisions"


def _named(path: str | Path, option: str = EARLIER_DECISIONS) -> str:
    return f"{option}: {str(path)!r}"


def opened_decisions(path: str | Path, option: str = EARLIER_DECISIONS) -> Any:
    """The ``.npz`` of teacher decisions at ``path``, open; ValueError led by ``option`` (where
    it was named) when it is missing or not one."""
    try:
        saved = np.load(path)
    except FileNotFoundError:
        raise ValueError(f"{option}: no file {str(path)!r}") from None
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(f"{_named(path, option)} is not a saved set of teacher decisions: {e}") from None
    if not isinstance(saved, np.lib.npyio.NpzFile):
        raise ValueError(f"{_named(path, option)} is not a saved set of teacher decisions (a single array)")
    return saved


def decisions_about(saved: Any, path: str | Path, option: str = EARLIER_DECISIONS) -> dict[str, Any]:
    """The header of open teacher decisions (:func:`save_decisions`' ``about``): the settings
    they hold under and where they came from; ValueError led by ``option`` when it is unreadable."""
    try:
        return json.loads(str(saved["about"]))
    except (KeyError, ValueError) as e:
        raise ValueError(
            f"{_named(path, option)} is not a saved set of teacher decisions (no readable 'about': {e})"
        ) from None


def _check_saved(saved: Any, path: str | Path, config: TrainConfig) -> tuple[str, ...]:
    """The arrays of ``saved`` that fitting under ``config`` reads, after checking its header."""
    about = decisions_about(saved, path)
    for key, value in decisions_signature(config).items():
        if about.get(key) != value:
            raise ValueError(f"{_named(path)} was made with {key} {about.get(key)!r}, this run has {value!r}")
    keys = fitted_arrays(config.pretrain.targets)
    missing = [key for key in keys if key not in saved.files]
    if missing:
        raise ValueError(
            f"{_named(path)} holds no {', '.join(missing)} (its teacher {about.get('teacher')!r}; "
            f"pretrain.targets is {config.pretrain.targets!r})"
        )
    return keys


def join_decisions(parts: Sequence[dict[str, np.ndarray]], targets: str) -> dict[str, np.ndarray]:
    """Sets of teacher decisions as one, in order; only the arrays that ``targets`` fitting
    reads (move values only for "values"). One set is returned as it is, not copied."""
    keys = fitted_arrays(targets)
    if len(parts) == 1:
        return {key: parts[0][key] for key in keys}
    return {key: np.concatenate([part[key] for part in parts]) for key in keys}


def with_mirrored(
    layout: Layout,
    tiles: TileSet,
    observations: np.ndarray,
    masks: np.ndarray,
    targets: np.ndarray,
    returns: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The decisions, then each one made after the opening seen in a mirror: ``layout``'s
    :attr:`~block_env.observations.Layout.mirror_columns` on the observations (any columns
    beyond the layout, such as the hidden hands, read the same either way round) and ``tiles``'
    :attr:`~block_env.tiles.TileSet.mirror_actions` on the masks and targets. Openings are not
    repeated: a line opens on the left end only. The observations are copied once, into the
    result, a block of rows at a time."""
    after_opening = np.flatnonzero(observations[:, layout.slices["ends"]].any(axis=1))
    columns = np.concatenate([layout.mirror_columns, np.arange(layout.size, observations.shape[1])])
    actions = tiles.mirror_actions
    played = len(observations)
    both = np.empty((played + len(after_opening), observations.shape[1]), dtype=observations.dtype)
    both[:played] = observations
    for start in range(0, len(after_opening), MIRROR_BLOCK):
        rows = after_opening[start : start + MIRROR_BLOCK]
        both[played + start : played + start + len(rows)] = observations[np.ix_(rows, columns)]
    return (
        both,
        np.concatenate([masks, masks[np.ix_(after_opening, actions)]]),
        np.concatenate([targets, targets[np.ix_(after_opening, actions)]]),
        np.concatenate([returns, returns[after_opening]]),
    )


def one_hot_targets(actions: np.ndarray, num_actions: int) -> np.ndarray:
    """``fit_policy`` targets that put all the weight on one action per row (a chosen move).

    Examples:
        >>> one_hot_targets(np.array([2, 0]), 3)
        array([[0., 0., 1.],
               [1., 0., 0.]], dtype=float32)
    """
    targets = np.zeros((len(actions), num_actions), dtype=np.float32)
    targets[np.arange(len(actions)), actions] = 1.0
    return targets


def move_value_targets(values: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(value / temperature) over each row's legal moves (the non-NaN entries); 0 elsewhere.

    Examples:
        >>> move_value_targets(np.array([[1.0, np.nan, 1.0], [2.0, 0.0, np.nan]]), 1.0).round(3)
        array([[0.5  , 0.   , 0.5  ],
               [0.881, 0.119, 0.   ]])
    """
    scaled = np.where(np.isnan(values), -np.inf, values / temperature)
    scaled -= scaled.max(axis=1, keepdims=True)
    weights = np.exp(scaled)
    return weights / weights.sum(axis=1, keepdims=True)


def fit_policy(
    model: Any,
    observations: np.ndarray,
    masks: np.ndarray,
    targets: np.ndarray,
    returns: np.ndarray,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    advance: Callable[[int], None] | None = None,
    held_out: PolicyTargets | None = None,
    belief_weight: float = 0.0,
    other_seats: int = 1,
    anneal: bool = False,
) -> dict[str, Any]:
    """Fit the policy's masked move distribution to ``targets`` (a distribution over actions
    per row: one-hot for a teacher's moves, soft for a search's move values) by cross-entropy,
    and the value head to ``returns`` (learner units), with Adam. Returns the decisions, how
    often the policy's best move was the targets' best before fitting (``agreement``) and
    after the last epoch (``accuracy``), and the last epoch's mean losses. ``advance(n)`` is
    told of each minibatch's ``n`` decisions (a progress bar over epochs x decisions). With
    ``anneal``, the step size falls linearly from ``learning_rate`` to zero over all the passes'
    minibatches, so the last passes settle where a constant step keeps moving about.

    With ``held_out`` decisions (never fitted), the policy's loss and agreement on them (and the
    searched value of its choices, when they hold move values: :func:`policy_figures`) are
    measured before fitting and after every pass (``held_out_by_epoch``, the start first, each
    with its ``fitted_agreement``: how often it chose the targets' best move on the decisions
    it fits, before fitting for the start and during the pass for each pass), and the policy of
    the pass with the lowest held-out loss is the one kept (``kept_epoch``; 0: the start, no
    pass helped; the value head, which that loss does not measure, keeps its last pass), with its ``held_out_loss``,
    ``held_out_agreement`` (and ``held_out_value``); ``held_out_target_entropy`` is the least loss any policy could
    reach there. A fit that starts to learn its labels' noise is stopped where it did best on
    decisions it did not see. ``accuracy`` and the losses stay those of the last pass.

    With ``belief_weight``, an asymmetric policy's observations end with the ``other_seats``
    hidden hands, and a linear head on the policy network's last hidden layer learns, for every
    tile, which other seat holds it, or none (:func:`hidden_tile_loss`, this weight
    against the policy's loss; ``belief_loss`` its last pass's mean, and the held-out
    decisions' in each of their figures). The head is dropped after fitting: the policy
    network alone is the agent, made to carry what the round says about the hidden hands.
    """
    import torch

    policy = model.policy
    obs = torch.as_tensor(observations)
    legal = torch.as_tensor(masks)
    target = torch.as_tensor(targets, dtype=torch.float32)
    best = target.argmax(-1)
    value_target = torch.as_tensor(returns, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    belief_head = hidden_tile_head(policy, other_seats, seed) if belief_weight else None
    parameters = [*policy.parameters(), *(belief_head.parameters() if belief_head is not None else ())]
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    minibatches = epochs * -(-len(best) // batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / minibatches if anneal else 1.0)

    agreement = policy_figures(policy, PolicyTargets(observations, masks, targets), batch_size)["agreement"]
    policy.set_training_mode(True)
    stats: dict[str, Any] = {}
    by_epoch: list[dict[str, float]] = []
    kept_epoch, kept = 0, {}

    def measure_held_out(epoch: int, fitted_agreement: float) -> None:
        nonlocal kept_epoch, kept
        assert held_out is not None
        figures = policy_figures(policy, held_out, batch_size, belief_head, other_seats)
        by_epoch.append(figures | {"fitted_agreement": fitted_agreement})
        if epoch == 0 or figures["loss"] < by_epoch[kept_epoch]["loss"]:
            # The policy's layers only: the held-out loss measures them, not the value head,
            # which keeps its last pass (a kept start would otherwise undo every value fit).
            kept_epoch = epoch
            kept = {name: t.clone() for name, t in policy.state_dict().items() if name.startswith(ACTOR_KEYS)}

    if held_out is not None:
        measure_held_out(0, agreement)  # the start, kept if no pass helps
    for epoch in range(1, epochs + 1):
        order = torch.randperm(len(best), generator=generator)
        correct = policy_loss_sum = value_loss_sum = belief_loss_sum = 0.0
        for idx in order.split(batch_size):
            logits, values, latent = policy_outputs(policy, obs[idx], legal[idx])
            policy_loss = torch.nn.functional.cross_entropy(logits, target[idx])
            value_loss = torch.nn.functional.mse_loss(values, value_target[idx])
            loss = policy_loss + IMITATION_VALUE_WEIGHT * value_loss
            if belief_head is not None:
                belief_loss = hidden_tile_loss(belief_head, latent, obs[idx], policy, other_seats)
                loss = loss + belief_weight * belief_loss
                belief_loss_sum += belief_loss.item() * len(idx)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            correct += (logits.argmax(-1) == best[idx]).sum().item()
            policy_loss_sum += policy_loss.item() * len(idx)
            value_loss_sum += value_loss.item() * len(idx)
            if advance is not None:
                advance(len(idx))
        stats = {
            "decisions": float(len(best)),
            "agreement": agreement,
            "accuracy": correct / len(best),
            "policy_loss": policy_loss_sum / len(best),
            "value_loss": value_loss_sum / len(best),
            **({"belief_loss": belief_loss_sum / len(best)} if belief_head is not None else {}),
        }
        if held_out is not None:
            measure_held_out(epoch, stats["accuracy"])
    policy.set_training_mode(False)
    if held_out is not None:
        policy.load_state_dict(kept, strict=False)
        stats |= {
            "held_out_decisions": len(held_out.targets),
            "held_out_by_epoch": by_epoch,
            "kept_epoch": kept_epoch,
            "held_out_loss": by_epoch[kept_epoch]["loss"],
            "held_out_agreement": by_epoch[kept_epoch]["agreement"],
            **({"held_out_value": by_epoch[kept_epoch]["value"]} if held_out.values is not None else {}),
            "held_out_target_entropy": target_entropy(held_out.targets),
        }
    return stats


def policy_outputs(policy: Any, observations: Any, legal: Any) -> tuple[Any, Any, Any]:
    """An sb3 actor-critic policy's logits, illegal moves masked out of their softmax, its
    value head's outputs and its policy network's last hidden layer, for a batch of
    observations (tensors)."""
    features = policy.extract_features(observations, policy.pi_features_extractor)
    latent_pi, latent_vf = policy.mlp_extractor(features)
    logits = policy.action_net(latent_pi).masked_fill(~legal, MASKED_LOGIT)
    return logits, policy.value_net(latent_vf).squeeze(-1), latent_pi


def hidden_tile_head(policy: Any, other_seats: int, seed: int) -> Any:
    """A linear head from an asymmetric policy's last hidden layer to a logit per tile for each
    other seat and for no other seat (seeded), for :func:`hidden_tile_loss`; ValueError for a
    policy whose observations hold no hidden hands."""
    import torch

    actor_size = getattr(policy.mlp_extractor, "actor_size", None)
    hidden = policy.observation_space.shape[0] - (actor_size or 0)
    if actor_size is None or hidden % other_seats:
        raise ValueError(
            "fitting with a belief weight reads the hidden hands that the full-information critic's "
            "observations hold (ppo.critic: full_information)"
        )
    with torch.random.fork_rng(devices=[]):  # its initial weights from the seed, the global stream untouched
        torch.manual_seed(derive_seed(seed, "belief_head"))
        return torch.nn.Linear(policy.action_net.in_features, hidden // other_seats * (other_seats + 1))


def tile_places(observations: Any, actor_size: int, other_seats: int) -> Any:
    """Where each tile is, from the hidden hands at the end of asymmetric observations (after
    the first ``actor_size`` values: relative seat 1's hand, then 2's, ...): per row and tile,
    the index of the other seat holding it (0 for relative seat 1), or ``other_seats`` for
    none (the observer's, played, or not dealt)."""
    import torch

    holders = observations[:, actor_size:].reshape(len(observations), other_seats, -1)
    return torch.cat([holders, 1.0 - holders.sum(1, keepdim=True)], 1).argmax(1)


def hidden_tile_loss(head: Any, latent: Any, observations: Any, policy: Any, other_seats: int) -> Any:
    """Mean cross-entropy, over every tile, of the head's guess (a softmax over the other seats
    and "no other seat") of where it is (:func:`tile_places`). The tiles the observer sees are
    told by its observation, so what is left to learn is where the hidden ones are (and, with
    a boneyard, which unseen tiles were not dealt)."""
    import torch

    places = tile_places(observations, policy.mlp_extractor.actor_size, other_seats)
    logits = head(latent).reshape(len(observations), other_seats + 1, -1)
    return torch.nn.functional.cross_entropy(logits, places)


@dataclass(frozen=True)
class PolicyTargets:
    """Teacher decisions and what a policy is fitted to on them: the observations, legal-move
    masks and target move distributions (as :func:`fit_policy` reads them), and, from a search
    teacher, every legal move's searched value (points per round; NaN for the others)."""

    observations: np.ndarray
    masks: np.ndarray
    targets: np.ndarray
    values: np.ndarray | None = None


def evaluated_batches(
    policy: Any, observations: np.ndarray, masks: np.ndarray, batch_size: int, rows: np.ndarray | None = None
) -> Iterator[tuple[np.ndarray, Any, Any, Any]]:
    """Batch by batch over ``rows`` of the observations (every row by default): each batch's
    row numbers, its observations (a tensor), and the policy's masked logits and last hidden
    layer there (:func:`policy_outputs`). Only each batch's rows are copied out of the arrays.
    The policy stays in evaluation mode, without gradients, until the loop ends (the caller's
    loop body runs so too); its mode is restored then, or when the generator is closed."""
    import torch

    rows = np.arange(len(observations)) if rows is None else rows
    training = policy.training
    policy.set_training_mode(False)
    try:
        with torch.no_grad():
            for start in range(0, len(rows), batch_size):
                batch = rows[start : start + batch_size]
                obs, legal = torch.as_tensor(observations[batch]), torch.as_tensor(masks[batch])
                logits, _, latent = policy_outputs(policy, obs, legal)
                yield batch, obs, logits, latent
    finally:
        policy.set_training_mode(training)


def policy_figures(
    policy: Any, decisions: PolicyTargets, batch_size: int, belief_head: Any = None, other_seats: int = 1
) -> dict[str, float]:
    """The policy's mean cross-entropy to the decisions' targets (``loss``), how often its best
    legal move is the targets' best (``agreement``) and, where the decisions hold move values,
    the mean searched value of its best legal move (``value``, points per round), measured in
    evaluation mode (the policy's mode restored). On decisions it was not fitted to, ``value``
    is an unbiased estimate of what its choices are worth under the teacher's search, so a
    change in it between two networks says how many points a decision one gains there;
    agreement with the best of noisy values says little (two runs of a search disagree).
    With a ``belief_head``, its :func:`hidden_tile_loss` there too (``belief_loss``)."""
    import torch

    loss_sum = correct = value_sum = belief_sum = 0.0
    for rows, obs, logits, latent in evaluated_batches(policy, decisions.observations, decisions.masks, batch_size):
        if belief_head is not None:
            belief_sum += hidden_tile_loss(belief_head, latent, obs, policy, other_seats).item() * len(rows)
        target = torch.as_tensor(decisions.targets[rows], dtype=torch.float32)
        loss_sum += torch.nn.functional.cross_entropy(logits, target, reduction="sum").item()
        chosen = logits.argmax(-1)
        correct += (chosen == target.argmax(-1)).sum().item()
        if decisions.values is not None:
            value_sum += float(np.take_along_axis(decisions.values[rows], chosen.numpy()[:, None], 1).sum())
    count = len(decisions.targets)
    figures = {"loss": loss_sum / count, "agreement": correct / count}
    if decisions.values is not None:
        figures["value"] = value_sum / count
    if belief_head is not None:
        figures["belief_loss"] = belief_sum / count
    return figures


def policy_distribution(
    policy: Any, observations: np.ndarray, masks: np.ndarray, batch_size: int, rows: np.ndarray
) -> np.ndarray:
    """The policy's move distribution (softmax over the legal moves; 0 elsewhere) at ``rows``
    of the observations, one row each, in evaluation mode."""
    import torch

    distributions = np.zeros((len(rows), masks.shape[1]), dtype=np.float32)
    done = 0
    for batch, _, logits, _ in evaluated_batches(policy, observations, masks, batch_size, rows):
        distributions[done : done + len(batch)] = torch.softmax(logits, -1).numpy()
        done += len(batch)
    return distributions


def target_entropy(targets: np.ndarray) -> float:
    """The targets' mean entropy (nats): the least cross-entropy any policy can reach on them.

    Examples:
        >>> round(target_entropy(np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])), 4)
        0.3466
    """
    logs = np.log(np.where(targets > 0, targets, 1.0))
    return float(-(targets * logs).sum(axis=1).mean())


def split_held_out(data: dict[str, np.ndarray], share: float) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A set of teacher decisions as the part to fit and the last ``share`` of it held out.
    Decisions are saved game after game (each process's games in turn), so the held-out part
    is the last games saved, whole but for the one the cut falls in."""
    cut = held_out_cut(len(data["actions"]), share)
    return {key: array[:cut] for key, array in data.items()}, {key: array[cut:] for key, array in data.items()}


def held_out_cut(decisions: int, share: float) -> int:
    """The first held-out row of ``decisions`` saved in order when the last ``share`` is held out.

    Examples:
        >>> held_out_cut(250_000, 0.1)
        225000
    """
    return decisions - round(share * decisions)
