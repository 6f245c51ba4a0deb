"""A trained MaskablePPO policy as an agent (always given the action mask).

An agent file is a folder with ``agent.json`` (rules, encoding, network shape) and
``policy.pth`` (the policy's tensors). Loading rebuilds the network from the JSON and reads
the tensors with ``torch.load(weights_only=True)``: no pickled code is executed.
"""

from __future__ import annotations

import functools
import json
import shutil
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
from numba import njit

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.agents.move_scorer import (
    MOVE_SCORER,
    MOVE_SCORER_WEIGHTS,
    MoveScorer,
    check_scored_encoding,
    check_scorer_shapes,
    load_move_scorer,
)
from block_env.files import replace_folder
from block_env.observations import layout_for
from block_env.options import ENCODINGS
from block_env.rules import Rules
from block_env.validation import is_number

AGENT_JSON = "agent.json"
#: State-dict key prefixes of a MaskableActorCriticPolicy's actor (policy network, action
#: head) and critic (value network, value head).
ACTOR_KEYS = ("mlp_extractor.policy_net.", "action_net.")
CRITIC_KEYS = ("mlp_extractor.value_net.", "value_net.")
POLICY_WEIGHTS = "policy.pth"
FORMAT_VERSION = 1
#: agent.json's optional key: the decisions the agent hands to a search, late in a round.
ENDGAME = "endgame"
#: agent.json's optional key: true plays each decision after the opening by the network's logits
#: for the position and for its mirror image (the line's ends swapped), averaged.
MIRROR = "mirror"
#: How close two logits are (this times one plus the larger's size) for a batched decision to be
#: made again one row at a time (:meth:`PolicyAgent.act_batch`): far above the float32 rounding between a pass
#: over many rows and one over a single row (about 1e-5 on the shipped agents' logits).
NEAR_TIE = 1e-3


def activation_class(name: str) -> Any:
    """The torch module class of an activation named in ACTIVATIONS."""
    import torch

    return {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[name]


def policy_shape(rules: Rules, observation: str, net_arch: dict, activation: str) -> dict[str, Any]:
    """The agent.json keys that shape a policy network (what :func:`build_policy` reads) for
    an agent of ``rules`` reading the ``observation`` encoding."""
    return {
        "observation_size": layout_for(rules, observation).size,
        "num_actions": rules.tile_set.num_actions,
        "net_arch": net_arch,
        "activation": activation,
    }


def build_policy(metadata: dict[str, Any]) -> Any:
    """An untrained MaskableActorCriticPolicy shaped as ``metadata`` describes."""
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    obs_space = spaces.Box(0.0, np.inf, shape=(metadata["observation_size"],), dtype=np.float32)
    action_space = spaces.Discrete(metadata["num_actions"])
    return MaskableActorCriticPolicy(
        obs_space,
        action_space,
        lr_schedule=lambda _: 0.0,
        net_arch=dict(metadata["net_arch"]),
        activation_fn=activation_class(metadata["activation"]),
    )


def save_agent(
    policy: Any,
    path: str | Path,
    rules: Rules,
    observation: str,
    net_arch: dict,
    activation: str,
    value_scale: float | None = None,
) -> Path:
    """Write a policy as an agent folder (agent.json + policy.pth). ``value_scale``: the
    value head's units per zero-sum point, when it estimates those from the observation
    (what a search reads at its leaves)."""
    import dataclasses

    import torch

    folder = Path(path)
    metadata = {
        "format": FORMAT_VERSION,
        "rules": dataclasses.asdict(rules),
        "observation": observation,
        "observation_size": int(policy.observation_space.shape[0]),
        "num_actions": int(policy.action_space.n),
        "net_arch": {k: list(v) for k, v in net_arch.items()},
        "activation": activation,
    }
    if value_scale is not None:
        metadata["value_scale"] = value_scale
    with replace_folder(folder) as temporary:  # a crash never leaves a half-written agent
        (temporary / AGENT_JSON).write_text(json.dumps(metadata, indent=2) + "\n")
        torch.save(policy.state_dict(), temporary / POLICY_WEIGHTS)
    return folder


#: The networks' activation functions, by the name agent.json and the configs give them.
ACTIVATIONS = ("tanh", "relu")


def load_agent_metadata(path: str | Path) -> dict[str, Any]:
    """Read and check an agent folder's agent.json against its schema: every key with its
    type, the rules it claims, an encoding whose size fits those rules, and a known
    activation. ValueError names the file, the key and what is allowed."""
    folder = Path(path)
    meta_path = folder / AGENT_JSON
    if not meta_path.is_file():
        raise FileNotFoundError(f"{folder} is not an agent folder: {AGENT_JSON} is missing")
    try:
        metadata = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{meta_path} is not valid JSON: {e}") from None

    def bad(key: str, allowed: str) -> ValueError:
        got = metadata.get(key, "nothing") if isinstance(metadata, dict) else metadata
        return ValueError(f"{meta_path}: {key} must be {allowed}, got {got!r}")

    if not isinstance(metadata, dict):
        raise ValueError(f"{meta_path} must hold a JSON object (agent.json's keys), got {type(metadata).__name__}")
    if metadata.get("format") != FORMAT_VERSION:
        raise bad("format", str(FORMAT_VERSION))
    if not isinstance(metadata.get("rules"), dict):
        raise bad("rules", "an object of block_env.Rules fields")
    try:
        rules = Rules.from_dict(metadata["rules"])
    except (ValueError, TypeError) as e:
        raise ValueError(f"{meta_path}: rules: {e}") from None
    if metadata.get("observation") not in ENCODINGS:
        raise bad("observation", f"one of {ENCODINGS}")
    size = layout_for(rules, metadata["observation"]).size
    if metadata.get("observation_size") != size or isinstance(metadata.get("observation_size"), bool):
        raise bad("observation_size", f"{size} (the {metadata['observation']!r} encoding's size for these rules)")
    if metadata.get("num_actions") != rules.tile_set.num_actions:
        raise bad("num_actions", f"{rules.tile_set.num_actions} (2T+1 for these rules)")
    arch = metadata.get("net_arch")
    if (
        not isinstance(arch, dict)
        or set(arch) != {"pi", "vf"}
        or not all(isinstance(v, list) and v and all(type(h) is int and h > 0 for h in v) for v in arch.values())
    ):
        raise bad("net_arch", 'an object {"pi": [sizes], "vf": [sizes]} of positive ints')
    if metadata.get("activation") not in ACTIVATIONS:
        raise bad("activation", f"one of {ACTIVATIONS}")
    scale = metadata.get("value_scale")
    if scale is not None and (not is_number(scale) or scale <= 0):
        raise bad("value_scale", "a positive number (value-head units per point), or absent")
    if ENDGAME in metadata:
        check_endgame(metadata[ENDGAME], str(meta_path))
    if MOVE_SCORER in metadata:
        settings = metadata[MOVE_SCORER]
        units = settings.get("hidden") if isinstance(settings, dict) and set(settings) == {"hidden"} else None
        if type(units) is not int or units < 1:
            raise bad(MOVE_SCORER, '{"hidden": units} (a positive int), or absent')
        check_scored_encoding(metadata["observation"], f"{meta_path}: {MOVE_SCORER}")
    if MIRROR in metadata:
        if not isinstance(metadata[MIRROR], bool):
            raise bad(MIRROR, "true or false")
        if metadata[MIRROR]:
            mirror_columns_of(rules, metadata["observation"], f"{meta_path}: mirror")
    return metadata


def check_endgame(settings: Any, where: str) -> None:
    """ValueError, naming ``where``, unless ``settings`` is an agent.json ``endgame``: the
    tiles held at most (two or more: a seat's last tile dominoes on either end, nothing to
    search) and a search spec."""
    if not (isinstance(settings, dict) and set(settings) == {"hand_at_most", "search"}):
        raise ValueError(
            f'{where}: endgame must be {{"hand_at_most": an int of 2 or more, "search": a search spec '
            f'("search" or "search:...")}}, got {settings!r}'
        )
    hand, search = settings["hand_at_most"], settings["search"]
    if type(hand) is not int or hand < 2:  # a seat's last tile needs no search
        raise ValueError(f"{where}: the endgame's hand_at_most must be an int of 2 or more, got {hand!r}")
    if not isinstance(search, str) or search.partition(":")[0] != "search":
        raise ValueError(
            f"{where}: the endgame's player must be a search spec ('search' or 'search:...'), got {search!r}"
        )


def load_policy_weights(path: str | Path, policy: Any) -> None:
    """Load policy.pth into ``policy`` weights-only (no pickled code runs); ValueError when
    the file is not plain tensors or its tensors do not fit the network agent.json describes."""
    import pickle

    import torch

    weights = Path(path) / POLICY_WEIGHTS
    if not weights.is_file():
        raise FileNotFoundError(f"{Path(path)} is not an agent folder: {POLICY_WEIGHTS} is missing")
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{weights}: refused, not a weights-only tensor file ({first})") from None
    expected = policy.state_dict()
    if not isinstance(state, dict) or set(state) != set(expected):
        missing = sorted(set(expected) - set(state)) if isinstance(state, dict) else list(expected)
        raise ValueError(f"{weights} does not hold this network's tensors (missing: {missing[:3]})")
    for key, tensor in expected.items():
        if not isinstance(state[key], torch.Tensor) or state[key].shape != tensor.shape:
            got = tuple(state[key].shape) if isinstance(state[key], torch.Tensor) else type(state[key]).__name__
            raise ValueError(f"{weights}: {key} has shape {got}, agent.json's network needs {tuple(tensor.shape)}")
    policy.load_state_dict(state)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, dtype=np.float32)


def network_layers(policy: Any, part: str = "actor") -> list[tuple[np.ndarray, np.ndarray, Any]]:
    """A MaskableActorCriticPolicy's actor (policy network, then action head) or critic (value
    network, then value head) as numpy ``(weight (in, out), bias, activation or None)`` steps;
    its features extractor must be SB3's flatten (the identity on these 1-D observations)."""
    import torch
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if not isinstance(policy.pi_features_extractor, FlattenExtractor):
        raise ValueError(f"expected a flatten features extractor, got {type(policy.pi_features_extractor).__name__}")
    activations = {torch.nn.Tanh: np.tanh, torch.nn.ReLU: _relu}
    parts = {
        "actor": [*policy.mlp_extractor.policy_net, policy.action_net],
        "critic": [*policy.mlp_extractor.value_net, policy.value_net],
    }
    if part not in parts:
        raise ValueError(f"a policy network's part is 'actor' or 'critic', got {part!r}")
    modules = parts[part]
    layers: list[list[Any]] = []
    for module in modules:
        if isinstance(module, torch.nn.Linear):
            weight = module.weight.detach().numpy().T.copy()
            layers.append([weight, module.bias.detach().numpy().copy(), None])
        elif type(module) in activations and layers:
            layers[-1][2] = activations[type(module)]
        else:
            raise ValueError(f"unexpected layer {module!r} in the policy network")
    return [tuple(layer) for layer in layers]


def _forward(layers: list[tuple[np.ndarray, np.ndarray, Any]], observations: np.ndarray) -> np.ndarray:
    rows = np.asarray(observations, dtype=np.float32)
    x = np.ascontiguousarray(rows.reshape(-1, rows.shape[-1]))
    for depth, (weight, bias, activation) in enumerate(layers):
        # The encodings are mostly zeros (one bit per tile, seat and suit: a "tracked" row has
        # about 50 of 1,000 set), so the first layer adds up only the weight rows of set inputs.
        x = _sparse_affine(x, weight, bias) if depth == 0 else x @ weight + bias
        if activation is not None:
            x = activation(x)
    return x.reshape(*rows.shape[:-1], x.shape[-1])


@njit(cache=True, nogil=True)
def _sparse_affine(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """x @ weight + bias, row by row over the non-zero inputs (the same sums in the same order
    for a row whatever the batch around it)."""
    out = np.empty((x.shape[0], weight.shape[1]), dtype=np.float32)
    for i in range(x.shape[0]):
        row = out[i]
        row[:] = bias
        for j in range(x.shape[1]):
            v = x[i, j]
            if v != 0.0:
                for k in range(weight.shape[1]):
                    row[k] += v * weight[j, k]
    return out


def _folder_version(folder: Path) -> tuple[str, int, int]:
    """An agent folder's identity for the cache: its path and its files' modification times
    (an agent saved again under the same path is loaded again)."""
    return (
        str(folder.resolve()),
        (folder / AGENT_JSON).stat().st_mtime_ns,
        (folder / POLICY_WEIGHTS).stat().st_mtime_ns,
    )


@functools.lru_cache(maxsize=16)
def _loaded_policy(folder: str, *version: int) -> tuple[Any, list, list]:
    """The torch policy of an agent folder (in eval mode) and its actor's and critic's layers in numpy,
    loaded once and shared by every agent playing that folder: neither is ever changed after
    loading, and a server with hundreds of games holds one copy."""
    policy = build_policy(load_agent_metadata(folder))
    load_policy_weights(folder, policy)
    policy.set_training_mode(False)
    return policy, network_layers(policy, "actor"), network_layers(policy, "critic")


def check_averageable(policy: Any, activation: str, members: Sequence[tuple[str, PolicyAgent]]) -> None:
    """ValueError, naming the member, unless every member's actor (its policy network and
    action head) has exactly ``policy``'s layers and shapes and uses ``activation``: what
    :func:`average_actors` needs. ``members``: (the name its errors give it, agent) pairs."""
    state = policy.state_dict()
    shapes = {key: tuple(tensor.shape) for key, tensor in state.items() if key.startswith(ACTOR_KEYS)}
    for name, agent in members:
        if agent.move_scorer is not None:
            raise ValueError(f"{name} has a move scorer, which averaging would drop: average the networks before")
        if agent.activation != activation:
            raise ValueError(
                f"{name} uses activation {agent.activation!r}, not {activation!r}: it cannot be averaged in"
            )
        theirs = {key: tuple(t.shape) for key, t in agent.policy.state_dict().items() if key.startswith(ACTOR_KEYS)}
        if theirs != shapes:
            differ = next(key for key in [*shapes, *theirs] if shapes.get(key) != theirs.get(key))
            raise ValueError(
                f"{name}'s network does not have this one's layers ({differ}: {theirs.get(differ, 'none')}, "
                f"needs {shapes.get(differ, 'none')}): it cannot be averaged in"
            )


def average_actors(policy: Any, activation: str, members: Sequence[tuple[str, PolicyAgent]]) -> None:
    """Set ``policy``'s actor (its policy network and action head) to the mean, weight by
    weight, of its own and the ``members``' actors: a weight average ("model soup") of
    networks of one shape. It can help where they come from one lineage (each fine-tuned from
    an earlier one) and were fitted to noisy labels, whose errors the average partly cancels.
    The value head stays ``policy``'s own (the members' may be in other units or read other
    inputs). Checked first by :func:`check_averageable`."""
    import torch

    check_averageable(policy, activation, members)
    state = policy.state_dict()
    others = [agent.policy.state_dict() for _, agent in members]
    for key in state:
        if key.startswith(ACTOR_KEYS):
            # Summed in float64: the same average whatever the members' order (in practice).
            stacked = torch.stack([state[key], *(other[key] for other in others)])
            state[key] = stacked.double().mean(dim=0).to(state[key].dtype)
    policy.load_state_dict(state)


def check_new_folder(target: Path, why: str) -> None:
    """ValueError unless ``target`` is absent or an empty folder (``why``: what writes it),
    so that nothing already there is lost."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"{target} already exists and is not an empty folder: {why}")


def average_agent_folders(folders: Sequence[str | Path], out: str | Path) -> Path:
    """Write to ``out`` (a folder that does not exist yet, or is empty) an agent whose policy
    is the weight average of the agent folders' (:func:`average_actors`); its value head, and
    agent.json's ``value_scale``, are the first folder's. The folders must share rules,
    encoding, network shape and activation, and none may have a move scorer (ValueError names
    the first that does not); two at least.

    Examples:
        >>> import tempfile
        >>> from block_env.agents import PRETRAINED_DIR
        >>> with tempfile.TemporaryDirectory() as out:
        ...     folder = average_agent_folders([PRETRAINED_DIR / "standard_thirteenth", PRETRAINED_DIR / "standard_belief"], out)
        ...     load_agent_metadata(folder)["observation"]
        'tracked'
    """
    if len(folders) < 2:
        raise ValueError(f"averaging needs two agent folders at least, got {len(folders)}")
    target = Path(out)
    check_new_folder(target, "averaging writes a new agent folder")
    first = load_agent_metadata(folders[0])
    rules = Rules.from_dict(first["rules"])
    agents = [(str(folder), PolicyAgent(rules, observation=first["observation"], path=folder)) for folder in folders]
    policy = build_policy(first)  # a fresh copy: the loaded agents' networks are shared and never changed
    check_averageable(policy, first["activation"], agents[:1])  # the first member too (average_actors checks the rest)
    policy.load_state_dict(agents[0][1].policy.state_dict())
    average_actors(policy, first["activation"], agents[1:])
    return save_agent(
        policy, target, rules, first["observation"], first["net_arch"], first["activation"], first.get("value_scale")
    )


class PolicyAgent(Agent):
    """Plays a saved MaskablePPO policy, always passing the action mask: its best legal move
    (``deterministic``) or a draw from its distribution over the legal moves. Where agent.json
    names an ``endgame`` search (:func:`add_endgame_search`), that search decides the late moves
    it names; ``endgame=False`` (or :meth:`network_only`) plays the network alone. Where it
    names a ``move_scorer`` (:func:`add_move_scorer`), the scorer's scores join the network's
    logits; ``move_scorer=False`` reads the network's logits alone.

    ``mirror`` (by default agent.json's ``mirror``, else False) reads each position after the
    opening both ways round: the network's logits for it and, moved back onto the same ends,
    for its mirror image (the line's ends swapped) are averaged (:meth:`logits`), so the two
    orientations of a position get mirrored moves, two rows of one pass a decision. The
    "history" encoding, whose move rows imply the opening's ends, cannot be mirrored.

    Examples:
        >>> from block_env import raw_env
        >>> from block_env.agents import make_agent
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> agent = make_agent("pretrained:standard_vector", env.rules, seed=0)  # a PolicyAgent
        >>> env.observe(env.agent_selection)["action_mask"][agent.act(env.observe(env.agent_selection))]
        np.int8(1)
    """

    name = "policy"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        observation: str | None = None,
        path: str | Path | None = None,
        deterministic: bool = True,
        endgame: bool = True,
        mirror: bool | None = None,
        move_scorer: bool = True,
    ) -> None:
        if path is None:
            raise ValueError("the policy agent needs the path of an agent folder (policy:PATH)")
        metadata = load_agent_metadata(path)
        reads: str = metadata["observation"] if observation is None else observation
        super().__init__(rules, seed, reads)
        trained = Rules.from_dict(metadata["rules"])
        if trained != self.rules or metadata["observation"] != reads:
            raise ValueError(
                f"{path} was trained for {trained} with the {metadata['observation']!r} encoding; "
                f"it cannot play {self.rules} with {reads!r}"
            )
        self.policy, self._actor, self._critic = _loaded_policy(*_folder_version(Path(path)))
        self.value_scale: float | None = metadata.get("value_scale")
        self.activation: str = metadata["activation"]
        self.path = Path(path)
        self.deterministic = deterministic  # an endgame search keeps it so: its seed is the observation's
        self.name = f"policy:{Path(path).name}"
        self.endgame = (
            _EndgameSearch(metadata[ENDGAME], self.rules, reads, path) if endgame and ENDGAME in metadata else None
        )
        self.move_scorer: MoveScorer | None = None
        if move_scorer and MOVE_SCORER in metadata:
            self.move_scorer = load_move_scorer(
                path, self.rules, metadata["net_arch"]["pi"][-1], metadata[MOVE_SCORER]["hidden"]
            )
        self.mirror: bool = metadata.get(MIRROR, False) if mirror is None else mirror
        if not isinstance(self.mirror, bool):
            raise ValueError(f"{self.name}: mirror must be true or false, got {mirror!r}")
        if self.mirror:
            self._mirror_columns = mirror_columns_of(self.rules, reads, f"{self.name}: mirror")
            self._mirror_actions = self.rules.tile_set.mirror_actions
            self._ends = layout_for(self.rules, reads).slices["ends"]

    def network_only(self) -> PolicyAgent:
        """This agent without its endgame search (agent.json's ``endgame``): every move its
        network's (with its move scorer, where it reads one), as a search reads a trained prior."""
        network = PolicyAgent(
            self.rules,
            observation=self.observation,
            path=self.path,
            deterministic=self.deterministic,
            endgame=False,
            mirror=self.mirror,
            move_scorer=self.move_scorer is not None,
        )
        network.rng.setstate(self.rng.getstate())  # the same draws, where it samples its moves
        return network

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """The policy's action logits for (k, size) observations: its actor's layers in numpy
        (the same float32 arithmetic as the torch module; without torch's per-call overhead one
        decision takes about 10 us instead of about 100 us, which the arena and play pay per move).
        With ``mirror``, each row after the opening (the line has ends) averages them with its
        mirror image's, read back onto the same ends. ValueError when the observations are not
        in the encoding it reads."""
        self._check_encoding(observations)
        if not self.mirror:
            return self._network_logits(observations)
        rows = np.atleast_2d(observations)  # act reads one row
        after_opening = rows[:, self._ends].any(axis=1)
        mirrored = rows[np.ix_(after_opening, self._mirror_columns)]
        both = self._network_logits(np.concatenate([rows, mirrored]))  # one pass over both readings
        logits = both[: len(rows)]
        logits[after_opening] = (logits[after_opening] + both[len(rows) :, self._mirror_actions]) / 2
        return logits.reshape(np.shape(observations)[:-1] + logits.shape[-1:])

    def _network_logits(self, observations: np.ndarray) -> np.ndarray:
        """The network's logits, plus its move scorer's scores where it has one (one reading)."""
        if self.move_scorer is None:
            return _forward(self._actor, observations)
        rows = np.atleast_2d(np.asarray(observations, dtype=np.float32))
        hidden = _forward(self._actor[:-1], rows)
        weight, bias, _ = self._actor[-1]
        logits = hidden @ weight + bias
        where, scores = self.move_scorer.scores(self.rules, self.observation, rows, hidden)
        logits.reshape(-1)[where] += scores
        return logits.reshape(np.shape(observations)[:-1] + logits.shape[-1:])

    def last_hidden_layer(self, observations: np.ndarray) -> np.ndarray:
        """The policy network's last hidden layer for (k, size) observations (its actor's layers
        but the action head): what the moves are read from (one pass: without ``mirror``'s
        second, of the mirror image). ValueError as :meth:`logits`."""
        self._check_encoding(observations)
        return _forward(self._actor[:-1], observations)

    def _check_encoding(self, observations: np.ndarray) -> None:
        size = self._actor[0][0].shape[0]
        if np.shape(observations)[-1] != size:
            raise ValueError(
                f"{self.name} reads the {self.observation!r} encoding ({size} values), got observations of "
                f"{np.shape(observations)[-1]}: observe it with env.observe(agent, {self.observation!r})"
            )

    def values(self, observations: np.ndarray) -> np.ndarray:
        """The value head's estimate, in points for the observer's side (zero-sum), of the
        round from each of (k, size) observations; ValueError for an agent whose agent.json
        has no ``value_scale`` (its value head was not trained on zero-sum points, or it read
        hidden hands and was not kept)."""
        return _forward(self._critic, observations)[:, 0] / self.checked_value_scale()

    def checked_value_scale(self) -> float:
        """agent.json's ``value_scale``; ValueError naming the agent when it has none."""
        if self.value_scale is None:
            raise ValueError(
                f"{self.name} has no value estimate: its agent.json has no value_scale (a value head trained "
                "on zero-sum points, with the critic reading the observation)"
            )
        return self.value_scale

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """One forward pass for every game waiting on this policy (masked like ``act``, and
        the same choices: row k's is what ``act`` would choose after k earlier decisions); the
        rows an endgame search decides are searched one by one, and draw nothing from this
        agent's generator, as in ``act``.

        A pass over many rows rounds differently from ``act``'s pass over one (the logits differ
        in their last bits), so a deterministic policy whose best two legal logits are within
        ``NEAR_TIE * (1 + |best|)`` of each other (:data:`NEAR_TIE`) decides that row again
        alone, as ``act`` does: its choices are exactly ``act``'s. ValueError for a row whose
        mask is all zeros, as ``act``."""
        masks = np.asarray(masks, dtype=bool)
        if not masks.any(axis=1).all():
            raise ValueError(f"the action masks of rows {np.flatnonzero(~masks.any(axis=1)).tolist()} are all zeros")
        observations = np.asarray(observations)
        self._check_encoding(observations)
        chosen = np.zeros(len(masks), dtype=np.int64)
        searched = np.zeros(0, dtype=np.int64)
        if self.endgame is not None:
            searched = self.endgame.rows(observations, masks)
            for row in searched:
                chosen[row] = self.endgame.act(observations[row], masks[row])
        rows = np.setdiff1d(np.arange(len(masks)), searched)  # the network's, in order (a sampler's draws)
        if not len(rows):
            return chosen
        logits = self.logits(observations[rows])
        chosen[rows] = self._choose(logits, masks[rows])
        if self.deterministic and masks.shape[1] > 1:
            best_two = np.partition(np.where(masks[rows], logits, -np.inf), -2, axis=1)[:, -2:]
            near = best_two[:, 1] - best_two[:, 0] <= NEAR_TIE * (1.0 + np.abs(best_two[:, 1]))  # one legal move: +inf
            for row in rows[near]:
                chosen[row] = self._choose(self.logits(observations[row])[None], masks[row][None])[0]
        return chosen

    def act(self, obs: Observation) -> int:
        legal_actions(obs)  # refuses an all-zero mask
        masks = np.asarray(obs["action_mask"], dtype=bool)[None]
        if self.endgame is not None:
            observation = np.asarray(obs["observation"])
            self._check_encoding(observation)
            if self.endgame.decides(observation, masks[0]):
                return self.endgame.act(observation, masks[0])
        # The policy's action logits, masked here: the same choice as SB3's masked
        # predict(), without its distribution objects, sampling with this agent's seeded RNG.
        logits = self.logits(obs["observation"])[None]  # one row's forward pass, as it always was
        return int(self._choose(logits, masks)[0])

    def _choose(self, logits: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Each row's move: its best legal logit, or (not ``deterministic``) a draw from the
        softmax over its legal moves, one draw of this agent's RNG per row."""
        masked = np.where(masks, logits, -np.inf)
        if self.deterministic:
            return masked.argmax(axis=1)
        draws = np.array([self.rng.random() for _ in range(len(masked))])
        return sample_legal(masked, masks, draws)


def add_endgame_search(source: str | Path, out: str | Path, search: str, hand_at_most: int) -> Path:
    """Write to ``out`` (a folder that does not exist yet, or is empty) a copy of the agent
    folder ``source`` whose agent.json names an endgame search: the decisions with two or more
    legal moves once it holds ``hand_at_most`` tiles or fewer (two at least) are the ``search``
    spec's (a search reading the agent's encoding or one it holds), the others its network's.
    ValueError names a bad option before anything is written.

    Examples:
        >>> import tempfile
        >>> from block_env.agents import PRETRAINED_DIR
        >>> with tempfile.TemporaryDirectory() as out:
        ...     folder = add_endgame_search(PRETRAINED_DIR / "standard", out, "search:worlds=16", 2)
        ...     load_agent_metadata(folder)["endgame"]
        {'hand_at_most': 2, 'search': 'search:worlds=16'}
    """
    target = Path(out)
    settings = {"hand_at_most": hand_at_most, "search": search}
    check_endgame(settings, "the endgame to add")
    check_new_folder(target, "the agent is written to a new folder")
    metadata = load_agent_metadata(source)
    if ENDGAME in metadata:
        raise ValueError(f"{source} already hands its endgame to {metadata[ENDGAME]['search']!r}")
    # Built once here, as the agent will build it: a search that cannot be names why before any write.
    _EndgameSearch(settings, Rules.from_dict(metadata["rules"]), metadata["observation"], target)
    return _copy_with_setting(source, target, metadata, ENDGAME, settings)


def play_both_ways(source: str | Path, out: str | Path) -> Path:
    """Write to ``out`` (a folder that does not exist yet, or is empty) a copy of the agent
    folder ``source`` whose agent.json says ``"mirror": true``: it plays each decision its
    network makes after the opening (an ``endgame`` search keeps its own) by the network's
    logits for the position and for its mirror image averaged
    (:class:`PolicyAgent`'s ``mirror``). ValueError, before anything is written, for an agent
    that already does, or one reading the "history" encoding (no ends to swap).

    Examples:
        >>> import tempfile
        >>> from block_env.agents import PRETRAINED_DIR
        >>> with tempfile.TemporaryDirectory() as out:
        ...     load_agent_metadata(play_both_ways(PRETRAINED_DIR / "standard_tracked", out))["mirror"]
        True
    """
    target = Path(out)
    check_new_folder(target, "the agent is written to a new folder")
    metadata = load_agent_metadata(source)
    if metadata.get(MIRROR):
        raise ValueError(f"{source} already plays both ways round (its agent.json says mirror: true)")
    mirror_columns_of(
        Rules.from_dict(metadata["rules"]), metadata["observation"], f"{source} cannot play both ways round"
    )
    return _copy_with_setting(source, target, metadata, MIRROR, True)


def scorable_agent(source: str | Path, out: Path, replacing: bool = False) -> dict[str, Any]:
    """agent.json of the agent folder ``source``, checked to take a move scorer written to
    ``out`` (with ``replacing``, in place of its own): ValueError for an agent that already has
    one (with ``replacing``, one that has none), one reading an encoding a scorer cannot read,
    or an ``out`` that already holds files."""
    check_new_folder(out, "the agent is written to a new folder")
    metadata = load_agent_metadata(source)
    if replacing and MOVE_SCORER not in metadata:
        raise ValueError(f"{source} has no move scorer to fit further")
    if not replacing and MOVE_SCORER in metadata:
        raise ValueError(f"{source} already has a move scorer")
    check_scored_encoding(metadata["observation"], str(source))
    return metadata


def add_move_scorer(
    source: str | Path,
    out: str | Path,
    scorer: MoveScorer,
    report: dict[str, Any] | None = None,
    replacing: bool = False,
) -> Path:
    """Write to ``out`` (a folder that does not exist yet, or is empty) a copy of the agent
    folder ``source`` with ``scorer`` beside its network (agent.json's ``move_scorer``; see
    :mod:`block_env.agents.move_scorer`; with ``replacing``, in place of the agent's own), and
    ``report``, if given, as ``move_scorer.json``. ValueError, before anything is written, for
    an agent that already has one (with ``replacing``, one that has none), one reading an
    encoding a scorer cannot read, or a scorer whose shapes do not fit the network."""
    target = Path(out)
    metadata = scorable_agent(source, target, replacing)
    check_scorer_shapes(
        scorer.arrays(), Rules.from_dict(metadata["rules"]), metadata["net_arch"]["pi"][-1], scorer.units, str(source)
    )

    def scorer_files(folder: Path) -> None:
        scorer.save(folder)
        if report is not None:
            (folder / "move_scorer.json").write_text(json.dumps(report, indent=2) + "\n")

    return _copy_with_setting(source, target, metadata, MOVE_SCORER, {"hidden": scorer.units}, scorer_files)


def mirror_columns_of(rules: Rules, observation: str, where: str) -> np.ndarray:
    """The ``observation`` encoding's mirror columns (:attr:`Layout.mirror_columns`);
    ValueError, its message led by ``where``, for an encoding without ends to swap."""
    try:
        return layout_for(rules, observation).mirror_columns
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _copy_with_setting(
    source: str | Path,
    target: Path,
    metadata: dict[str, Any],
    key: str,
    value: Any,
    also: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``source``'s weights (its move scorer's too) and its agent.json with ``key`` set to
    ``value`` into ``target``; ``also`` writes more files into the folder before it is in place."""
    with replace_folder(target) as temporary:
        (temporary / AGENT_JSON).write_text(json.dumps({**metadata, key: value}, indent=2) + "\n")
        shutil.copyfile(Path(source) / POLICY_WEIGHTS, temporary / POLICY_WEIGHTS)
        if MOVE_SCORER in metadata:
            shutil.copyfile(Path(source) / MOVE_SCORER_WEIGHTS, temporary / MOVE_SCORER_WEIGHTS)
        if also is not None:
            also(temporary)
    return target


class _Search(Protocol):
    """What an endgame reads of its search (agents/search.py's SearchAgent, which imports this
    module, so it is not imported here)."""

    engine: str
    observation: str
    hand_at_most: int | None

    def reset(self, seed: int | None = None) -> None: ...

    def search_moves(self, observations: np.ndarray, masks: np.ndarray) -> list[Any]: ...


class _EndgameSearch:
    """The search a policy agent hands its late decisions to (agent.json's ``endgame``): every
    decision with two or more legal moves once the agent holds ``hand_at_most`` tiles or fewer
    (but its last: one tile dominoes on either end). Late in a round few tiles are hidden, a
    move decides many points, and a search plays them better than a network; it is also cheap
    then, its playouts short. Its worlds are drawn from a seed derived from the observation, so
    the agent's move stays a function of the observation alone (``deterministic``: the arena
    may ask it for many games at once). The search keeps state (its generator, its batches), so
    an agent with an endgame plays in one thread at a time."""

    def __init__(self, settings: dict[str, Any], rules: Rules, reads: str, path: str | Path) -> None:
        from block_env.agents import make_agent  # the spec parser lives in the package above

        self.hand_at_most = settings["hand_at_most"]
        where = f"{Path(path) / AGENT_JSON}: endgame search {settings['search']!r}"
        try:  # check_endgame took a "search" spec: a SearchAgent
            search = cast(_Search, make_agent(settings["search"], rules))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        self.search = search
        if search.engine != "batched":  # it decides by search_moves
            raise ValueError(f"{where} must run on the batched engine")
        if search.hand_at_most is not None:  # search_moves searches every position it is given
            raise ValueError(f"{where}: the endgame's own hand_at_most says which decisions it searches")
        mine = layout_for(rules, reads)
        try:  # the search reads its encoding's columns of the agent's observation
            self.columns = layout_for(rules, self.search.observation).columns_in(mine)
        except ValueError:
            raise ValueError(
                f"{where} reads the {self.search.observation!r} encoding, which the agent's {reads!r} "
                "observations do not hold"
            ) from None
        self.hand_count = mine.offset("hand_counts")  # relative seat 0: the observer

    def _searched(self, held: Any, legal_moves: Any) -> Any:
        """Whether the search decides (arrays or scalars): two or more legal moves, at most
        ``hand_at_most`` tiles held, and two at least (a seat's last tile dominoes on either
        end: nothing to search)."""
        return (held <= self.hand_at_most) & (held >= 2) & (legal_moves > 1)

    def rows(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The rows of a batch the search decides."""
        return np.flatnonzero(self._searched(observations[:, self.hand_count], masks.sum(axis=1)))

    def decides(self, observation: np.ndarray, mask: np.ndarray) -> bool:
        """Whether the search decides one position: :meth:`rows` in scalars, which every
        decision of the agent pays for."""
        return bool(self._searched(float(observation[self.hand_count]), int(np.count_nonzero(mask))))

    def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
        seen = np.ascontiguousarray(observation, dtype=np.float32)
        self.search.reset(seed=zlib.crc32(seen.tobytes()))  # the observation's own seed
        return int(self.search.search_moves(seen[self.columns][None], mask[None])[0].choice)


def sample_legal(masked_logits: np.ndarray, masks: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Each row's move drawn from the softmax of its logits over its legal moves (``masks``;
    illegal logits are -inf), by inverse transform of ``draws`` in [0, 1): the first move whose
    cumulative weight exceeds draw x total weight. The weights are not normalised, so rounding
    can never leave the last cumulative weight below the threshold; and should it be reached
    anyway, the row's last legal move is chosen, never an illegal one. The same arithmetic as
    ``random.Random.choices`` with these weights and the same draw.

    Examples:
        >>> logits = np.log(np.array([[0.5, 0.25, 0.25, 1.0]]))
        >>> masks = np.array([[True, False, True, False]])
        >>> sample_legal(np.where(masks, logits, -np.inf), masks, np.array([0.7])).tolist()
        [2]
    """
    weights = np.exp(masked_logits - masked_logits.max(axis=1, keepdims=True))
    cumulative = np.cumsum(weights, axis=1, dtype=np.float64)  # an illegal move adds exactly 0
    threshold = draws * cumulative[:, -1]
    chosen = (cumulative <= threshold[:, None]).sum(axis=1)  # the first move whose cumulative weight exceeds it
    last_legal = masks.shape[1] - 1 - np.argmax(masks[:, ::-1], axis=1)
    return np.minimum(chosen, last_legal)
