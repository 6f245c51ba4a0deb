"""Self-play PPO on Ray RLlib's new API stack (``block-dominoes train-rllib``; extra ``[ray]``).

The PettingZoo AEC env (``block_env.raw_env``) reaches RLlib through its ``PettingZooEnv``
wrapper, multi-agent: one module ``main`` is trained (RLlib's action-masking PPO module,
the mask taken from each observation), and every other seat of an episode is played by a
frozen snapshot of ``main`` (``snapshot_k``, refreshed round-robin every ``snapshot_every``
iterations) or a scripted baseline (a module that plays the agent's rule from the mask:
random or greedy). Checkpoints (RLlib's, resumable) and TensorBoard logs go to the run
folder, and the trained ``main`` is exported as a block_env agent folder (agent.json +
policy.pth, loaded weights-only) that the arena, ``play`` and the Gymnasium opponents use as
``policy:PATH``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from pettingzoo.utils.wrappers import BaseWrapper

from block_env.aec import raw_env
from block_env.agents import make_agent, parse_spec
from block_env.agents.policy import build_policy, policy_shape, save_agent
from block_env.agents.scripted import greedy_rank
from block_env.batched import random_legal_actions
from block_env.files import replace_folder
from block_env.options import ENCODINGS
from block_env.rules import PRESETS, Rules
from block_env.seeding import derive_seed
from block_env.training.config import PPOConfig, build_dataclass, read_yaml
from block_env.validation import check_choice, check_int, check_number

MAIN = "main"
SCRIPTED = ("random", "greedy")
CHECKPOINT = "checkpoint"
#: The file in the checkpoint folder with the iterations and env steps it holds.
PROGRESS = "block_env_progress.json"
EXPORT = "agent"


# -- config ---------------------------------------------------------------------------------


#: The PPO settings train-rllib starts from: the same fields and meanings as ``train``'s
#: (:class:`block_env.training.config.PPOConfig`), with RLlib's usual scale of rollouts.
RLLIB_PPO = PPOConfig(n_steps=500, batch_size=1000, n_epochs=4, gamma=1.0, vf_coef=1.0, net_arch=(256, 256))


@dataclasses.dataclass(frozen=True)
class RLlibConfig:
    """configs/rllib.yaml: what to train and how (every field checked on load).

    ``ppo`` is the same section as a MaskablePPO config's, key for key, handed to RLlib's
    PPO as: learning_rate -> lr, gamma, gae_lambda -> lambda_, clip_range -> clip_param,
    ent_coef -> entropy_coeff, vf_coef -> vf_loss_coeff, n_epochs -> num_epochs,
    batch_size -> minibatch_size, net_arch and activation -> the module's fcnet layers, and
    n_steps (steps per env between updates) x envs_per_runner x env runners ->
    train_batch_size. RLlib's module has no asymmetric critic: ``ppo.critic`` must be
    "observation"; nor is ``ppo.anneal_learning_rate`` handed over (it must be false).
    """

    rules: str = "standard"
    """Rules preset name."""
    observation: str = "vector"
    """Observation encoding: "vector", "history" or "tracked"."""
    iterations: int = 40
    """Training iterations (one rollout and update each)."""
    seed: int = 0
    """Seeds RLlib, the envs and the final arena."""
    num_env_runners: int = 1
    """Env runner processes sampling beside the learner (0: sample in the learner)."""
    envs_per_runner: int = 8
    """Envs each runner steps."""
    reward_scale: float = 0.05
    """Multiplies rewards (points are tens; PPO likes rewards near 1)."""
    scripted: tuple[str, ...] = ("random", "greedy")
    """Scripted baselines that may sit at the other seats (run inside RLlib as modules)."""
    snapshots: int = 3
    """Frozen copies of the learner kept as opponents."""
    snapshot_every: int = 5
    """Iterations between snapshot refreshes (round-robin)."""
    self_play_share: float = 0.5
    """Probability that an opponent seat is a snapshot rather than a scripted baseline."""
    checkpoint_every: int = 10
    """Iterations between RLlib checkpoints (what --resume continues from)."""
    final_deals: int = 1000
    """Duplicate deals of the exported agent's arena run against ``--evaluate``."""
    ppo: PPOConfig = dataclasses.field(default_factory=lambda: RLLIB_PPO)
    """The PPO settings, as for ``train`` (see the class docstring for RLlib's names)."""

    def __post_init__(self) -> None:
        check_choice("rules", self.rules, tuple(PRESETS))
        check_choice("observation", self.observation, ENCODINGS)
        for name in ("iterations", "envs_per_runner"):
            check_int(name, getattr(self, name), low=1)
        for name in ("snapshots", "snapshot_every", "checkpoint_every", "final_deals", "num_env_runners", "seed"):
            check_int(name, getattr(self, name), low=0)
        check_number("reward_scale", self.reward_scale, positive=True)
        check_number("self_play_share", self.self_play_share, low=0.0)
        if self.self_play_share > 1:
            raise ValueError(f"self_play_share must be in [0, 1], got {self.self_play_share}")
        self.ppo.validate()
        if self.ppo.asymmetric:
            raise ValueError(
                'ppo.critic "full_information" is for train (MaskablePPO); train-rllib\'s critic reads the observation'
            )
        if self.ppo.anneal_learning_rate:
            raise ValueError("ppo.anneal_learning_rate is for train (MaskablePPO); train-rllib keeps ppo.learning_rate")
        if self.ppo.critic_warmup:
            raise ValueError(
                "ppo.critic_warmup is for train (MaskablePPO); train-rllib updates the policy from the start"
            )
        unknown = [s for s in self.scripted if s not in SCRIPTED]
        if unknown:
            raise ValueError(f"scripted opponents must be among {SCRIPTED}, got {unknown}")
        if not self.scripted and not self.snapshots:
            raise ValueError("give some opponents: scripted baselines, snapshots, or both")

    @property
    def rules_object(self) -> Rules:
        return PRESETS[self.rules]

    @property
    def train_batch_size(self) -> int:
        """Env steps per iteration: ppo.n_steps from every env of every runner."""
        return self.ppo.n_steps * self.envs_per_runner * max(1, self.num_env_runners)

    @classmethod
    def load(cls, path: str | Path) -> RLlibConfig:
        """Read and check a YAML config (ValueError names the file and the key)."""
        try:
            return build_dataclass(cls, read_yaml(path))
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


# -- the env, as RLlib sees it ----------------------------------------------------------------


class _MaskedObservations(BaseWrapper):
    """The AEC env with observations as RLlib's action-masking module reads them
    ({"observations": the encoding, "action_mask": float 0/1}) and rewards times
    ``reward_scale`` (PPO's value loss wants them near 1)."""

    def __init__(self, env: Any, reward_scale: float = 1.0) -> None:
        super().__init__(env)
        self.reward_scale = reward_scale
        size = env.observation_space(env.possible_agents[0])["observation"].shape
        num_actions = env.rules.tile_set.num_actions
        self._space = gymnasium.spaces.Dict(
            {
                "observations": gymnasium.spaces.Box(0.0, np.inf, shape=size, dtype=np.float32),
                "action_mask": gymnasium.spaces.Box(0.0, 1.0, shape=(num_actions,), dtype=np.float32),
            }
        )

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._space

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        obs = self.env.observe(agent)
        assert obs is not None  # the AEC env observes every agent
        return {"observations": obs["observation"], "action_mask": obs["action_mask"].astype(np.float32)}

    def last(self, observe: bool = True) -> tuple:
        obs, reward, terminated, truncated, info = super().last(observe)
        return obs, reward * self.reward_scale, terminated, truncated, info


def make_rllib_env(env_config: dict[str, Any]) -> Any:
    """RLlib's MultiAgentEnv over block_env's AEC env (one round per episode, zero-sum)."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    env = raw_env(
        env_config.get("rules", "standard"),
        episode="round",
        reward="zero_sum",
        observation=env_config.get("observation", "vector"),
    )
    return PettingZooEnv(_MaskedObservations(env, env_config.get("reward_scale", 1.0)))


# -- modules ---------------------------------------------------------------------------------


def _scripted_module_class() -> type:
    """An RLModule that plays a scripted baseline from the action mask (never trained)."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    class ScriptedRLModule(RLModule):
        def setup(self) -> None:
            config: dict[str, Any] = dict(self.model_config or {})  # type: ignore[arg-type]  # a plain dict here
            self.policy = config["policy"]
            self.rank = np.asarray(config.get("rank", []), dtype=np.float64)
            self.rng = np.random.default_rng(config.get("seed"))

        def _forward(self, batch: dict, **kwargs: Any) -> dict:
            masks = np.asarray(batch[Columns.OBS]["action_mask"]) > 0
            if self.policy == "greedy":
                actions = np.where(masks, self.rank, -2.0).argmax(axis=1)
            else:
                actions = random_legal_actions(masks, self.rng)
            return {Columns.ACTIONS: actions}

        def _forward_train(self, *args: Any, **kwargs: Any) -> dict:
            raise NotImplementedError("a scripted module is not trained")

    return ScriptedRLModule


def build_algorithm(config: RLlibConfig, run: Path) -> Any:
    """An RLlib PPO Algorithm for ``config`` (Ray must be initialised)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    register_env("block_env_rllib", make_rllib_env)
    rules = config.rules_object
    env_config = {"rules": config.rules, "observation": config.observation, "reward_scale": config.reward_scale}
    learner_spec = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={
            "fcnet_hiddens": list(config.ppo.net_arch),
            "fcnet_activation": config.ppo.activation,
            "vf_share_layers": False,
        },
    )
    scripted = _scripted_module_class()
    specs = {MAIN: learner_spec, **{f"snapshot_{k}": learner_spec for k in range(config.snapshots)}}
    for name in config.scripted:
        specs[name] = RLModuleSpec(
            module_class=scripted, model_config={"policy": name, "rank": [float(r) for r in greedy_rank(rules)]}
        )
    mapping = _mapping_fn(config, rules.num_players)
    ppo = (
        PPOConfig()
        .environment(
            "block_env_rllib", env_config=env_config, disable_env_checking=True
        )  # its checker plays illegal moves
        .env_runners(
            num_env_runners=config.num_env_runners,
            num_envs_per_env_runner=config.envs_per_runner,
            num_cpus_per_env_runner=1,
        )
        .multi_agent(policies=set(specs), policy_mapping_fn=mapping, policies_to_train=[MAIN])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .training(
            lr=config.ppo.learning_rate,
            gamma=config.ppo.gamma,
            lambda_=config.ppo.gae_lambda,
            clip_param=config.ppo.clip_range,
            entropy_coeff=config.ppo.ent_coef,
            vf_loss_coeff=config.ppo.vf_coef,
            train_batch_size_per_learner=config.train_batch_size,
            minibatch_size=config.ppo.batch_size,
            num_epochs=config.ppo.n_epochs,
            vf_clip_param=100.0,
        )
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=200)
    )
    return ppo.build_algo()


def _mapping_fn(config: RLlibConfig, num_players: int) -> Any:
    """Per episode: ``main`` at one seat (chosen from the episode id), a snapshot (share
    ``self_play_share``) or a scripted baseline at each other seat."""
    import zlib

    snapshots = [f"snapshot_{k}" for k in range(config.snapshots)]
    scripted = list(config.scripted)
    share = config.self_play_share if scripted and snapshots else (1.0 if snapshots else 0.0)

    def mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
        key = zlib.crc32(str(episode.id_).encode())
        seat = int(agent_id.rsplit("_", 1)[1])
        if seat == key % num_players:
            return MAIN
        draw = random.Random(key * 31 + seat)
        pool = snapshots if draw.random() < share else scripted
        return pool[draw.randrange(len(pool))]

    return mapping


# -- export, snapshots, the training loop -------------------------------------------------------

#: RLlib's default PPO module's tensors -> MaskableActorCriticPolicy's (same shapes).
_EXPORT_NAMES = {
    "encoder.actor_encoder.net.mlp.": "mlp_extractor.policy_net.",
    "encoder.critic_encoder.net.mlp.": "mlp_extractor.value_net.",
    "pi.net.mlp.0.": "action_net.",
    "vf.net.mlp.0.": "value_net.",
}


def export_agent(module: Any, config: RLlibConfig, folder: str | Path) -> Path:
    """Write the RLlib module as a block_env agent folder (agent.json + policy.pth): its
    tensors copied into the MaskableActorCriticPolicy of the same shape, so that
    ``policy:FOLDER`` loads it weights-only like any trained agent."""
    import torch

    rules = config.rules_object
    net_arch = {"pi": list(config.ppo.net_arch), "vf": list(config.ppo.net_arch)}
    policy = build_policy(policy_shape(rules, config.observation, net_arch, config.ppo.activation))
    target = policy.state_dict()
    state = {}
    for name, tensor in module.state_dict().items():
        for prefix, ours in _EXPORT_NAMES.items():
            if name.startswith(prefix):
                state[ours + name[len(prefix) :]] = tensor.detach().cpu()
    missing = sorted(set(target) - set(state))
    if missing:
        raise ValueError(f"the RLlib module does not fill the policy's tensors {missing[:3]}")
    policy.load_state_dict({k: state[k] for k in target})
    with torch.no_grad():
        return save_agent(policy, folder, rules, config.observation, net_arch, config.ppo.activation)


def refresh_snapshot(algorithm: Any, slot: str) -> None:
    """Copy ``main``'s current weights into the frozen module ``slot`` (learner and samplers)."""
    main_state = algorithm.learner_group.get_state(components=f"learner/rl_module/{MAIN}")
    weights = main_state["learner"]["rl_module"][MAIN]
    algorithm.learner_group.set_state({"learner": {"rl_module": {slot: weights}}})
    algorithm.env_runner_group.sync_weights(
        from_worker_or_learner_group=algorithm.learner_group, policies=[slot], inference_only=True, timeout_seconds=60
    )


def train_rllib(
    config: RLlibConfig,
    run: str | Path,
    *,
    address: str | None = None,
    resume: bool = False,
    progress: bool = True,
    evaluate_against: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Train on a local Ray (``address`` None) or the cluster at ``address``; checkpoint
    every ``checkpoint_every`` iterations and at the end (``resume`` continues from it);
    export the agent; with ``evaluate_against``, play it against those specs in the arena
    on ``final_deals`` unseen deals. Returns a summary (also written to training.json)."""
    from block_env.arena.ray import connect

    run = Path(run)
    checkpoint = (run / CHECKPOINT).resolve()
    if run.exists() and (run / "rllib_config.json").exists() and not resume:
        raise ValueError(f"{run} holds an RLlib run: pass --resume to continue it, or choose another --out")
    if resume and not checkpoint.exists():
        raise ValueError(f"nothing to resume: {checkpoint} does not exist")
    for spec in evaluate_against or ():  # a typo fails now, not after the training
        try:
            if parse_spec(spec)[0] == "human":
                raise ValueError("the final arena plays unattended, without a human")
            make_agent(spec, config.rules_object)
        except ValueError as e:
            raise ValueError(f"--evaluate {spec}: {e}") from None
    run.mkdir(parents=True, exist_ok=True)
    connect(address, num_cpus=None)
    algorithm = build_algorithm(config, run)
    start_iteration = start_steps = 0
    if resume:
        algorithm.restore_from_path(str(checkpoint))
        done = json.loads((checkpoint / PROGRESS).read_text())
        start_iteration, start_steps = int(done["iteration"]), int(done["env_steps"])
    # once a resumed checkpoint has loaded: otherwise the run's config stays as it was
    (run / "rllib_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    started = time.time()
    steps = run_iterations(algorithm, config, run, checkpoint, start_iteration, start_steps, progress)
    _checkpoint(algorithm, checkpoint, config.iterations, steps)
    seconds = time.time() - started
    agent = export_agent(algorithm.get_module(MAIN), config, run / EXPORT)
    algorithm.stop()
    summary: dict[str, Any] = {
        "iterations": config.iterations,
        "env_steps": steps,
        "seconds": round(seconds, 1),
        "env_steps_per_second": round((steps - start_steps) / seconds, 1) if seconds else None,  # this session
        "agent": str(agent),
    }
    if evaluate_against:
        summary["arena"] = evaluate_export(agent, config, evaluate_against, run, address, progress)
    (run / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_iterations(
    algorithm: Any, config: RLlibConfig, run: Path, checkpoint: Path, start_iteration: int, steps: int, progress: bool
) -> int:
    """The training iterations from ``start_iteration`` on: TensorBoard scalars, snapshot
    refreshes and checkpoints as the config says. Returns the env steps sampled in all."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(run / "tensorboard"))
    iterations = range(start_iteration, config.iterations)
    bar = _bar(progress, len(iterations))
    try:
        for iteration in iterations:
            result = algorithm.train()
            runners = result.get("env_runners", {})
            steps = int(runners.get("num_env_steps_sampled_lifetime", steps))
            returns = runners.get("module_episode_returns_mean", {}).get(MAIN)
            if returns is not None:
                writer.add_scalar("main/episode_return_mean", returns, iteration + 1)
            writer.add_scalar("env_steps", steps, iteration + 1)
            if config.snapshots and (iteration + 1) % config.snapshot_every == 0:
                slot = f"snapshot_{((iteration + 1) // config.snapshot_every - 1) % config.snapshots}"
                refresh_snapshot(algorithm, slot)
            if config.checkpoint_every and (iteration + 1) % config.checkpoint_every == 0:
                _checkpoint(algorithm, checkpoint, iteration + 1, steps)
            shown = returns if returns is None else round(returns, 3)
            bar(f"iteration {iteration + 1}/{config.iterations}: main return {shown}")
    finally:
        writer.close()
        bar(None)
    return steps


def evaluate_export(
    agent: Path, config: RLlibConfig, opponents: tuple[str, ...], run: Path, address: str | None, progress: bool
) -> str:
    """The exported agent against ``opponents`` on ``final_deals`` unseen deals, on the Ray
    this run joined; the Markdown table (also written to arena.md in the run folder)."""
    from block_env.arena import evaluate, markdown

    report = evaluate(
        [f"policy:{agent}", *opponents],
        config.rules_object,
        deals=config.final_deals,
        seed=derive_seed(config.seed, "rllib_final_arena"),
        progress=progress,
        ray_address=address or "local",
    )
    table = markdown(report)
    (run / "arena.md").write_text(table + "\n")
    return table


def _checkpoint(algorithm: Any, checkpoint: Path, iteration: int, env_steps: int) -> None:
    """RLlib's checkpoint with the iteration and env steps it holds, swapped in whole: a run
    killed while saving resumes from the previous checkpoint, with that checkpoint's count."""
    with replace_folder(checkpoint) as temporary:
        algorithm.save_to_path(str(temporary))
        progress = json.dumps({"iteration": iteration, "env_steps": env_steps}) + "\n"
        (temporary / PROGRESS).write_text(progress)


def _bar(enabled: bool, total: int) -> Any:
    """A tqdm bar advanced once per iteration (``None`` closes it)."""
    from tqdm import tqdm

    bar = tqdm(total=total, disable=not enabled, unit="iter")

    def update(text: str | None) -> None:
        if text is None:
            bar.close()
            return
        bar.set_description(text)
        bar.update()

    return update
