"""The batched vector env as a stable-baselines3 ``VecEnv``, for sb3-contrib's MaskablePPO.

``BlockDominoesVecEnv(vector_env)`` adapts a :class:`block_env.vector_env.BlockDominoesVectorEnv`
(build one with ``block_env.agents.make_vector_env`` or ``gymnasium.make_vec``). The masks
reach MaskablePPO in one batched call: ``env_method("action_masks")`` returns every game's row
from one ``action_masks()`` of the batched core, not one call per env. Finished games carry
``infos[i]["terminal_observation"]`` as SB3 expects. ``ShardedVecEnv`` runs several of them in
processes of their own, as one VecEnv (the ``env_processes`` training key). Needs the ``train``
extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from block_env.vector_env import BlockDominoesVectorEnv


class _BatchedGamesVecEnv(VecEnv):
    """What every VecEnv over batched games shares: the games' attributes and methods are the
    batch's (set for all at once), the masks come from one batched call, and sb3-contrib's
    probe for ``action_masks`` finds the batched method. Subclasses say where an attribute or
    a method's result lives (:meth:`_per_game_attr`, :meth:`_per_game_call`)."""

    def action_masks(self) -> np.ndarray:
        raise NotImplementedError

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if attr_name == "action_masks":  # sb3-contrib probes for the method this way
            return [self.action_masks for _ in self._get_indices(indices)]
        every = self._per_game_attr(attr_name)
        return [every[i] for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if indices is not None and len(list(self._get_indices(indices))) != self.num_envs:
            raise ValueError("the batched env shares its attributes: set them for every game at once")
        self._set_shared_attr(attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """``action_masks`` returns each game's row from one batched call; other methods (such
        as ``set_opponents``, which swaps the shared pool) run once for the whole batch."""
        if method_name == "action_masks":
            every = list(self.action_masks())
        else:
            every = self._per_game_call(method_name, method_args, method_kwargs)
        return [every[i] for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs

    def _reset_seed(self) -> int | None:
        """The seed ``seed()`` asked for the next reset (None: go on unseeded); clears it."""
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        self._reset_seeds()
        return seed

    def _per_game_attr(self, attr_name: str) -> list[Any]:
        raise NotImplementedError

    def _set_shared_attr(self, attr_name: str, value: Any) -> None:
        raise NotImplementedError

    def _per_game_call(self, method_name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        raise NotImplementedError


class BlockDominoesVecEnv(_BatchedGamesVecEnv):
    """SB3's VecEnv interface over one batched vector env (N games, one process).

    Examples:
        >>> from block_env.agents import make_vector_env
        >>> vec_env = BlockDominoesVecEnv(make_vector_env(4, "standard", opponents=["greedy"]))
        >>> vec_env.reset().shape, vec_env.action_masks().shape
        ((4, 121), (4, 57))
    """

    def __init__(self, vector_env: BlockDominoesVectorEnv) -> None:
        self.vector_env = vector_env
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, vector_env.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs, _ = self.vector_env.reset(seed=self._reset_seed())
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        assert self._actions is not None, "step_async() first"
        # As SB3 gave them: the vector env's check refuses non-integers rather than truncating.
        obs, rewards, terminated, truncated, info = self.vector_env.step(np.asarray(self._actions))
        self._actions = None
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{"learner_seat": int(seat)} for seat in info["learner_seat"]]
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            final = info["final_info"]
            infos[i]["learner_seat"] = int(final["learner_seat"][i])
            if "illegal_action" in final and final["illegal_action"][i]:
                infos[i]["illegal_action"] = True
        return obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """(N, 2T+1) bool: every game's legal actions in one call."""
        return self.vector_env.action_masks()

    def close(self) -> None:
        self.vector_env.close()

    def _per_game_attr(self, attr_name: str) -> list[Any]:
        return [getattr(self.vector_env, attr_name)] * self.num_envs

    def _set_shared_attr(self, attr_name: str, value: Any) -> None:
        setattr(self.vector_env, attr_name, value)

    def _per_game_call(self, method_name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        return [getattr(self.vector_env, method_name)(*args, **kwargs)] * self.num_envs


def _serve_shard(remote: Any, parent_remote: Any, build: Any) -> None:
    """A shard's process: builds its batched env, then answers the parent's commands, each
    with ("ok", result) or ("error", the traceback) for the parent to raise."""
    import signal
    import traceback

    import torch
    from threadpoolctl import threadpool_limits

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it saves, then closes us
    parent_remote.close()
    torch.set_num_threads(1)  # one core per shard: its opponents' forward passes are small
    with threadpool_limits(1, user_api="blas"):
        env: BlockDominoesVecEnv | None = None
        while True:
            try:
                command, data = remote.recv()
            except EOFError:  # the parent went away
                break
            try:
                if env is None:  # built at the first command, so that a failure is answered too
                    env = cast(BlockDominoesVecEnv, build.var())
                if command == "close":
                    env.close()
                    remote.send(("ok", None))
                    break
                remote.send(("ok", _shard_answer(env, command, data)))
            except Exception:
                remote.send(("error", traceback.format_exc()))


def _shard_answer(env: BlockDominoesVecEnv, command: str, data: Any) -> Any:
    """What a shard's env answers to one command of the parent."""
    if command == "step":
        env.step_async(data)
        return (*env.step_wait(), env.action_masks())
    if command == "reset":
        env.seed(data)
        return env.reset(), env.action_masks()
    if command == "spaces":
        return env.num_envs, env.observation_space, env.action_space
    if command == "env_method":
        name, args, kwargs = data
        return env.env_method(name, *args, **kwargs)
    if command == "get_attr":
        return env.get_attr(data)
    if command == "set_attr":
        return env.set_attr(*data)
    raise ValueError(f"unknown shard command {command!r}")


class ShardedVecEnv(_BatchedGamesVecEnv):
    """Several :class:`BlockDominoesVecEnv` in processes of their own, as one SB3 VecEnv: the
    games are split into shards that step side by side, one core each. Pays when the
    opponents' moves cost more than the learner's (a search at the other seats); with
    scripted opponents one process is faster (the batched engine is already compiled).

    ``builders`` make each shard's env in its process (picklable callables, each returning a
    BlockDominoesVecEnv). Game ``i`` of shard ``k`` is game ``k * shard_size + i`` here; shard
    ``k`` is seeded with ``derive_seed(seed, "shard", k)``, so a run is reproducible for a
    given number of shards. Each step's masks come back with the step (one round trip).
    """

    def __init__(self, builders: Sequence[Any]) -> None:
        import multiprocessing

        from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper

        context = multiprocessing.get_context("spawn")  # no forked torch or numba state
        self._remotes, self._processes = [], []
        for build in builders:
            remote, child = context.Pipe()
            process = context.Process(target=_serve_shard, args=(child, remote, CloudpickleWrapper(build)), daemon=True)
            process.start()
            child.close()
            self._remotes.append(remote)
            self._processes.append(process)
        shapes = self._call("spaces", None)  # (games, observation space, action space) per shard
        self._sizes = [games for games, _, _ in shapes]
        super().__init__(sum(self._sizes), shapes[0][1], shapes[0][2])
        self._masks: np.ndarray | None = None
        self._closed = False

    def reset(self) -> np.ndarray:
        from block_env.seeding import derive_seed

        seed = self._reset_seed()
        for k, remote in enumerate(self._remotes):
            remote.send(("reset", None if seed is None else derive_seed(seed, "shard", k)))
        obs, masks = zip(*self._receive())
        self._masks = np.concatenate(masks)
        return np.concatenate(obs)

    def step_async(self, actions: np.ndarray) -> None:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one per game; got {actions.shape}")
        splits = np.split(actions, np.cumsum(self._sizes)[:-1])
        for remote, part in zip(self._remotes, splits):
            remote.send(("step", part))

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos, masks = zip(*self._receive())
        self._masks = np.concatenate(masks)
        return np.concatenate(obs), np.concatenate(rewards), np.concatenate(dones), [i for part in infos for i in part]

    def action_masks(self) -> np.ndarray:
        """(N, 2T+1) bool: every game's legal actions (they came back with the last step)."""
        if self._masks is None:
            raise RuntimeError("the sharded env has no masks before its first reset()")
        return self._masks

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for remote in self._remotes:
            try:
                remote.send(("close", None))
                remote.recv()
            except (EOFError, OSError):  # that shard is gone already
                pass
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()

    def _per_game_attr(self, attr_name: str) -> list[Any]:
        return [x for part in self._call("get_attr", attr_name) for x in part]

    def _set_shared_attr(self, attr_name: str, value: Any) -> None:
        self._call("set_attr", (attr_name, value))

    def _per_game_call(self, method_name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """On every shard (``set_opponents`` swaps every shard's pool); each game's result
        comes from its shard."""
        return [x for part in self._call("env_method", (method_name, args, kwargs)) for x in part]

    def _call(self, command: str, data: Any) -> list[Any]:
        for remote in self._remotes:
            remote.send((command, data))
        return self._receive()

    def _receive(self) -> list[Any]:
        """Every shard's answer, in order; a shard's error is raised here with its traceback."""
        answers = []
        for remote in self._remotes:  # every answer is read, so that the pipes stay in step
            try:
                answers.append(remote.recv())
            except (EOFError, OSError):  # the pipe closed or was reset: the shard is gone
                answers.append(("error", "its process exited unexpectedly"))
        for k, (status, result) in enumerate(answers):
            if status == "error":
                raise RuntimeError(f"shard {k} of the sharded env failed:\n{result}")
        return [result for _, result in answers]
