"""lander: a Hydra-configured experiment runner for reinforcement learning."""

__version__ = "0.1.0"
