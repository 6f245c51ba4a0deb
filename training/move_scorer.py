"""Fit a move scorer (:mod:`block_env.agents.move_scorer`) on top of a trained agent's frozen
network, to a search teacher's move values saved by training runs (``teacher_decisions.npz``):
``block-dominoes score-moves``.

The network's last hidden layer and logits are read once; only the scorer learns, so its fit
can only add to what the network knows. Each decision after the opening is also fitted seen
in a mirror (the line's ends swapped), as ``pretrain.mirror`` does. The last ``holdout`` share
of each file is held out, and the pass with the lowest held-out loss is kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agents import trained_agent_folder
from block_env.agents.move_scorer import (
    MOVE_SCORER,
    MoveScorer,
    load_move_scorer,
    logit_positions,
    move_feature_size,
    scored_moves,
)
from block_env.agents.policy import PolicyAgent, add_move_scorer, scorable_agent
from block_env.observations import layout_for
from block_env.rules import Rules
from block_env.seeding import derive_seed
from block_env.training.teaching import (
    decisions_about,
    held_out_cut,
    move_value_targets,
    opened_decisions,
    with_mirrored,
)
from block_env.validation import check_number


def load_values(path: str | Path, rules: Rules, observation: str) -> dict[str, np.ndarray]:
    """A saved set of teacher decisions' observations (the ``observation`` encoding's columns),
    legal-move masks and searched move values; ValueError naming the file when it is missing,
    not a set of teacher decisions, made under other rules or another encoding, or without
    move values (its teacher was not a search)."""
    name = str(path)
    with opened_decisions(path, "--decisions") as saved:
        about = decisions_about(saved, path, "--decisions")
        if about.get("rules") != rules.as_dict() or about.get("observation") != observation:
            raise ValueError(
                f"--decisions: {name!r} was made under rules {about.get('rules')} with the "
                f"{about.get('observation')!r} encoding; the agent plays {rules.as_dict()} with {observation!r}"
            )
        if "values" not in saved.files:
            raise ValueError(
                f"--decisions: {name!r} holds no move values (its teacher {about.get('teacher')!r} is not a search)"
            )
        size = layout_for(rules, observation).size
        return {
            "observations": saved["observations"][:, :size].astype(np.float32),  # beyond: a critic's hidden hands
            "masks": saved["masks"].astype(bool),
            "values": saved["values"].astype(np.float32),
        }


def fit_move_scorer(
    agent: str,
    decisions: Sequence[str | Path],
    out: str | Path,
    hidden: int | None = None,
    epochs: int = 5,
    learning_rate: float = 3e-4,
    batch_size: int = 512,
    temperature: float = 1.0,
    holdout: float = 0.1,
    seed: int = 0,
    progress: bool = True,
    continuing: bool = False,
) -> dict[str, Any]:
    """Fit a move scorer of ``hidden`` units (default 64) on ``agent``'s frozen network (a trained agent's
    spec, reading "vector" or "tracked"; with ``continuing``, the agent's own scorer further,
    from its weights and of its units, in place of a new one) to the move values of the teacher decisions in
    ``decisions`` (softmax(value / ``temperature``) over the legal moves, as ``pretrain.targets:
    values`` fits them), ``epochs`` passes of Adam, pass k (from 1) at ``learning_rate`` times 1 - (k - 1) / ``epochs``,
    and write the agent with it to ``out`` (a new folder). Returns the report (also written as
    ``out/move_scorer.json``): the held-out loss and agreement with the teacher's best move
    before the fit and after each pass, and the pass kept. ValueError, before any fitting, for
    a bad option, an agent that already has a scorer (with ``continuing``: one that has none,
    or a ``hidden`` other than its scorer's), a file that does not fit the agent, or a
    ``holdout`` that holds out nothing or leaves nothing to fit; and after it, with nothing
    written, where no pass lowered the held-out loss."""
    import torch

    units: int = 64 if hidden is None else hidden  # with continuing, its scorer's (checked below)
    for option, value in (
        ("--hidden", units),
        ("--epochs", epochs),
        ("--batch-size", batch_size),
    ):
        if type(value) is not int or value < 1:
            raise ValueError(f"{option} must be a positive int, got {value!r}")
    check_number("--learning-rate", learning_rate, positive=True)
    check_number("--temperature", temperature, positive=True)
    if not (isinstance(holdout, float | int) and 0 < holdout < 1):
        raise ValueError(f"--holdout must be between 0 and 1 (a share of each file held out), got {holdout!r}")
    if not decisions:
        raise ValueError("--decisions: name one saved set of teacher decisions at least")
    folder = trained_agent_folder(agent)
    metadata = scorable_agent(folder, Path(out), replacing=continuing)
    rules = Rules.from_dict(metadata["rules"])
    observation = metadata["observation"]
    start = None  # with continuing, the agent's own scorer, fitted further
    if continuing:
        units = metadata[MOVE_SCORER]["hidden"]
        if hidden not in (None, units):
            raise ValueError(f"--hidden {hidden}: the scorer fitted further keeps its {units} units")
        start = load_move_scorer(folder, rules, metadata["net_arch"]["pi"][-1], units)
    # The network alone, one reading: the scorer's scores are what is fitted.
    network = PolicyAgent(rules, path=folder, mirror=False, endgame=False, move_scorer=False)
    sets = [load_values(path, rules, observation) for path in decisions]

    fit, held = _split(sets, holdout)
    if not len(held["masks"]):
        raise ValueError(f"--holdout {holdout} holds out no decision of these files: hold out a larger share")
    if not len(fit["masks"]):
        raise ValueError(f"--holdout {holdout} leaves no decision of these files to fit: hold out a smaller share")
    layout = layout_for(rules, observation)
    tiles = rules.tile_set
    fit_targets = move_value_targets(np.where(fit["masks"], fit["values"], np.nan), temperature)
    fit_obs, fit_masks, fit_targets, _ = with_mirrored(
        layout, tiles, fit["observations"], fit["masks"], fit_targets, np.zeros(len(fit_targets), np.float32)
    )
    held_targets = move_value_targets(np.where(held["masks"], held["values"], np.nan), temperature)
    fit_moves, fit_features = scored_moves(rules, observation, fit_obs)
    held_moves, held_features = scored_moves(rules, observation, held["observations"])
    actions = tiles.num_actions

    def frozen(observations: np.ndarray) -> tuple[Any, Any]:
        rows = [network.last_hidden_layer(observations[i : i + 8192]) for i in range(0, len(observations), 8192)]
        base = [network.logits(observations[i : i + 8192]) for i in range(0, len(observations), 8192)]
        return torch.from_numpy(np.concatenate(rows)), torch.from_numpy(np.concatenate(base))

    fit_hidden, fit_base = frozen(fit_obs)
    held_hidden, held_base = frozen(held["observations"])
    if start is None:
        generator = torch.Generator().manual_seed(derive_seed(seed, "move_scorer"))
        bound = 1.0 / np.sqrt(fit_hidden.shape[1] + move_feature_size(rules))
        weights = {
            "hidden_weight": (torch.rand(fit_hidden.shape[1], units, generator=generator) * 2 - 1) * bound,
            "move_weight": (torch.rand(move_feature_size(rules), units, generator=generator) * 2 - 1) * bound,
            "bias": (torch.rand(units, generator=generator) * 2 - 1) * bound,
            "out_weight": torch.zeros(units),  # it starts as the network alone
            "out_bias": torch.zeros(()),
        }
    else:
        weights = {name: torch.from_numpy(array.astype(np.float32)) for name, array in start.arrays().items()}
    for tensor in weights.values():
        tensor.requires_grad_(True)
    optimizer = torch.optim.Adam(list(weights.values()), lr=learning_rate)

    # Each row's scored moves, as a slice of the flat move arrays (they are in row order).
    fit_first = np.searchsorted(fit_moves[:, 0], np.arange(len(fit_obs) + 1))

    def logits(hidden_rows: Any, base: Any, moves: np.ndarray, features: np.ndarray, rows_of_moves: np.ndarray) -> Any:
        inner = torch.tanh(
            (hidden_rows @ weights["hidden_weight"])[torch.from_numpy(rows_of_moves)]
            + torch.from_numpy(features) @ weights["move_weight"]
            + weights["bias"]
        )
        scores = inner @ weights["out_weight"] + weights["out_bias"]
        where = torch.from_numpy(logit_positions(rows_of_moves, moves, actions))
        return base.reshape(-1).index_add(0, where, scores).reshape(base.shape)

    def loss_and_agreement(masks: np.ndarray, targets: np.ndarray, values: np.ndarray | None, out_logits: Any) -> tuple:
        masked = out_logits.masked_fill(~torch.from_numpy(masks), -1e9)
        loss = -(torch.from_numpy(targets) * torch.log_softmax(masked, 1)).sum(1).mean()
        if values is None:
            return loss, None
        chosen = masked.argmax(1).numpy()
        best = np.where(masks, values, -np.inf).max(1)
        return loss, float((values[np.arange(len(chosen)), chosen] >= best).mean())

    def held_out() -> dict[str, float]:
        with torch.no_grad():
            out_logits = logits(held_hidden, held_base, held_moves, held_features, held_moves[:, 0])
            loss, agreement = loss_and_agreement(held["masks"], held_targets, held["values"], out_logits)
        return {"loss": float(loss), "agreement": agreement}

    report: dict[str, Any] = {
        "agent": agent,
        "decisions": [str(path) for path in decisions],
        "fitted_decisions": len(fit["masks"]),
        "fitted_rows": len(fit_obs),  # with each decision after the opening seen in a mirror
        "held_out_decisions": len(held["masks"]),
        "hidden": units,
        "epochs": epochs,
        "learning_rate": learning_rate,
        "batch_size": batch_size,
        "temperature": temperature,
        "holdout": holdout,
        "seed": seed,
        "continued": continuing,
        "held_out_before": held_out(),
        "held_out_by_epoch": [],
    }
    if progress:
        print(f"held out before the fit: {_figures(report['held_out_before'])}", flush=True)
    best = (report["held_out_before"]["loss"], 0, {name: tensor.detach().clone() for name, tensor in weights.items()})
    order_generator = np.random.default_rng(derive_seed(seed, "move_scorer_batches"))
    batches = len(fit_obs) // batch_size or 1
    started = time.perf_counter()
    for epoch in range(epochs):
        order = order_generator.permutation(len(fit_obs))
        for group in optimizer.param_groups:
            group["lr"] = learning_rate * (1 - epoch / epochs)  # a step per pass, falling linearly
        for batch in range(batches):
            rows = np.sort(order[batch * batch_size : (batch + 1) * batch_size])
            starts, counts = fit_first[rows], fit_first[rows + 1] - fit_first[rows]
            local = np.repeat(np.arange(len(rows)), counts)  # each scored move's row in the batch
            picked = starts[local] + np.arange(len(local)) - np.repeat(np.cumsum(counts) - counts, counts)
            out_logits = logits(fit_hidden[rows], fit_base[rows], fit_moves[picked], fit_features[picked], local)
            loss, _ = loss_and_agreement(fit_masks[rows], fit_targets[rows], None, out_logits)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        figures = held_out()
        report["held_out_by_epoch"].append(figures)
        if figures["loss"] < best[0]:
            best = (figures["loss"], epoch + 1, {name: tensor.detach().clone() for name, tensor in weights.items()})
        if progress:
            print(
                f"pass {epoch + 1}/{epochs}: held out {_figures(figures)} ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    report["kept_epoch"] = best[1]
    report["seconds"] = round(time.perf_counter() - started, 1)
    if best[1] == 0:
        raise ValueError(
            f"no pass lowered the held-out loss ({_figures(report['held_out_before'])} before the fit, at best "
            f"{min(f['loss'] for f in report['held_out_by_epoch']):.4f} after a pass): "
            f"{'fitting the scorer further adds' if continuing else 'the scorer adds'} nothing to this network, "
            "and nothing was written"
        )
    scorer = MoveScorer(**{name: tensor.numpy().astype(np.float32) for name, tensor in best[2].items()})
    add_move_scorer(folder, out, scorer, report, replacing=continuing)
    return report


def _figures(figures: dict[str, float]) -> str:
    return f"loss {figures['loss']:.4f}, the teacher's best move {figures['agreement']:.1%}"


def _split(sets: list[dict[str, np.ndarray]], holdout: float) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every set's first part to fit, joined, and its last ``holdout`` share held out (the last
    games each run saved), joined."""
    cuts = [held_out_cut(len(data["masks"]), holdout) for data in sets]
    fit = {key: np.concatenate([data[key][:cut] for data, cut in zip(sets, cuts)]) for key in sets[0]}
    held = {key: np.concatenate([data[key][cut:] for data, cut in zip(sets, cuts)]) for key in sets[0]}
    return fit, held
