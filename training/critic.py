"""An asymmetric actor-critic for MaskablePPO (PerfectDou's idea): during training the value
network reads the learner's observation plus every hidden hand (the vector env's
``privileged=True`` observation), while the policy reads only the observation's first
``actor_size`` values. A better value estimate lowers the variance of the advantages; the
policy never sees a hidden tile, and only the policy is deployed (:func:`export_actor`).
"""

from __future__ import annotations

from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor

from block_env.agents.policy import ACTOR_KEYS, CRITIC_KEYS, build_policy


class SplitMlpExtractor(MlpExtractor):
    """SB3's MlpExtractor whose policy network reads only the first ``actor_size`` features."""

    def __init__(self, feature_dim: int, net_arch: Any, activation_fn: type, device: Any, actor_size: int) -> None:
        super().__init__(feature_dim, net_arch, activation_fn, device)
        self.actor_size = actor_size
        # The same policy network, built for the observation's width alone.
        self.policy_net = MlpExtractor(actor_size, net_arch, activation_fn, device).policy_net

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy_net(features[..., : self.actor_size])


class AsymmetricActorCriticPolicy(MaskableActorCriticPolicy):
    """MaskableActorCriticPolicy over privileged observations (``actor_size`` observation
    values, then the hidden hands): the actor reads the first part, the critic all of it."""

    def __init__(self, *args: Any, actor_size: int, **kwargs: Any) -> None:
        self.actor_size = actor_size  # read by _build_mlp_extractor during super().__init__
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SplitMlpExtractor(
            self.features_dim, self.net_arch, self.activation_fn, self.device, actor_size=self.actor_size
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "actor_size": self.actor_size}


def export_actor(policy: AsymmetricActorCriticPolicy, metadata: dict[str, Any]) -> MaskableActorCriticPolicy:
    """The deployable policy: a plain MaskableActorCriticPolicy shaped as ``metadata``
    describes (agent.json's keys) over the observation alone, holding this policy's actor.
    Its value head is zero: the trained critic read hidden hands and is not deployed."""
    plain = build_policy(metadata)
    state = plain.state_dict()
    for key, tensor in policy.state_dict().items():
        if key.startswith(ACTOR_KEYS):
            state[key] = tensor.clone()
    for key in state:
        if key.startswith(CRITIC_KEYS):
            state[key] = torch.zeros_like(state[key])
    plain.load_state_dict(state)
    return plain
