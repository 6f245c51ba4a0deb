"""The batched vector env as a stable-baselines3 ``VecEnv``, for sb3-contrib's MaskablePPO.

``BlockDominoesVecEnv(vector_env)`` adapts a :class:`block_env.vector_env.BlockDominoesVectorEnv`
(build one with ``block_env.agents.make_vector_env`` or ``gymnasium.make_vec``). The masks
reach MaskablePPO in one batched call: ``env_method("action_masks")`` returns every game's row
from one ``action_masks()`` of the batched core, not one call per env. Finished games carry
``infos[i]["terminal_observation"]`` as SB3 expects. Needs the ``train`` extra.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from block_env.vector_env import BlockDominoesVectorEnv


class BlockDominoesVecEnv(VecEnv):
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
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        obs, _ = self.vector_env.reset(seed=seed)
        self._reset_seeds()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        assert self._actions is not None, "step_async() first"
        obs, rewards, terminated, truncated, info = self.vector_env.step(np.asarray(self._actions).astype(np.int64))
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

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if attr_name == "action_masks":  # sb3-contrib probes for the method this way
            return [self.action_masks for _ in self._indices(indices)]
        value = getattr(self.vector_env, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if indices is not None and len(list(self._indices(indices))) != self.num_envs:
            raise ValueError("the batched env shares its attributes: set them for every game at once")
        setattr(self.vector_env, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """``action_masks`` returns each game's row from one batched call; ``set_opponents``
        swaps the shared pool once; other methods of the vector env run once, for all."""
        games = list(self._indices(indices))
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in games]
        result = getattr(self.vector_env, method_name)(*method_args, **method_kwargs)
        return [result for _ in games]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs

    def _indices(self, indices: VecEnvIndices) -> Iterable[int]:
        return self._get_indices(indices)
