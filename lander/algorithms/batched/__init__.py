"""Several seeds of one PPO or A2C configuration trained side by side in one process (``seeds_per_process: K``):
the batched engine.

Each seed is a whole SB3 ``PPO`` or ``A2C`` of its own (:class:`SideBySidePPO`, :class:`SideBySideA2C`): its own
envs, rollout buffer, callbacks, logger, evaluations, checkpoints, ``model.zip`` (plain SB3, loadable by
``stable_baselines3.PPO.load`` or ``A2C.load``). What the seeds share is the arithmetic of their networks: SB3
spends most of a small MLP's CPU on the overhead of one torch call per layer per minibatch, so here the K networks
are one flat parameter tensor ``[K, P]`` and each layer of all K is one batched matrix product
(:class:`StackedPolicy`), one optimizer updates all K (Adam, RMSprop and ``RMSpropTFLike`` are elementwise: that
is K independent optimizers, each with its own step count, learning rate and moments: :class:`StackedAdam`,
:class:`StackedRMSprop`), and gradient clipping and ``target_kl`` stay per seed. The losses and their gradients
are written out in NumPy, on the CPU (:class:`NumpyLoss`: a minibatch is a few dozen tiny array operations,
cheaper without autograd's bookkeeping): the one implementation on the training path. Its oracles, the same
losses differentiated by torch's autograd and SB3's own updates, are in the tests
(``tests/unit/test_side_by_side.py``); a GPU device or an activation other than Tanh, ReLU or Identity is refused
before a run starts (:func:`lander.config.checks.check_side_by_side`).

The seeds run as greenlets (:class:`lander.execution.lockstep.Lockstep`, the execution layer's): each seed's whole
training (lander's ``train``, SB3's ``learn`` and its callbacks) runs on its own stack, and where SB3 calls the policy
for the rollout's actions, or ``train()``, the seed hands the work to the lockstep (:func:`request`) and waits; once
every seed waits, the lockstep does the work of all of them in one batched call (:class:`SeedStack`) and gives each
its part. Nothing runs in parallel: one thread, so signals, logging and SB3 behave as in a single run.

The update is SB3's ``PPO.train`` term by term (GAE from SB3's own buffer, advantage normalisation per minibatch,
clipped surrogate, value clipping, entropy bonus, gradient clipping, ``target_kl``, schedules), or ``A2C.train`` (one
step over the whole rollout, its optimizer and schedule), each seed with its own random streams (actions: a
``torch.Generator``; minibatch order: a NumPy generator, both seeded from the seed). Batched kernels round
differently from SB3's, so results are statistically equivalent to SB3's, not identical (BENCHMARKS.md); the
default, one seed per process, is SB3 itself.

The package, read top to bottom:

- :mod:`.stacked`: K policies as one tensor ``[K, P]`` and their batched forward (the rollouts' actions, the
  evaluations);
- :mod:`.loss`: the PPO and A2C losses and their gradients in NumPy (:class:`~.loss.NumpyLoss`) and the K
  optimizers (:class:`~.loss.StackedAdam`, :class:`~.loss.StackedRMSprop`): the numerics alone, no SB3 model in
  them;
- :mod:`.model`: SB3's side (:class:`~.model.SideBySide`, a seed's model: :class:`~.model.SideBySidePPO`,
  :class:`~.model.SideBySideA2C`) and the seeds' shared work (:class:`~.model.SeedStack`, the batched work of
  every waiting seed).
"""

from lander.algorithms.batched.model import SeedStack, SideBySide, SideBySideA2C, SideBySidePPO, in_lockstep, request
from lander.algorithms.batched.stacked import ACTIVATION_NAMES

__all__ = ["ACTIVATION_NAMES", "SeedStack", "SideBySide", "SideBySideA2C", "SideBySidePPO", "in_lockstep", "request"]
