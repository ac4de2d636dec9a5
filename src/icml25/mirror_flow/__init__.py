"""Mirror flow with explicit regularization (Jacobs, Zhou & Burkholz, ICML 2025).

Library: the time-dependent Legendre function of ``x = u * v`` (:func:`legendre`,
:func:`legendre_grad`, :func:`mirror_inverse`), the evolution of its parameter under weight
decay (:func:`c_flow`, :func:`c_gd`, :func:`c_gd_step`), the implicit-bias solution
(:func:`implicit_bias_solution`), :class:`WeightDecaySwitch`, a weight-decay schedule for any
torch optimizer, the power parametrization ``x = u**p - v**p`` and its range shrinking
(:mod:`icml25.mirror_flow.power`), and the balancedness of factorised matrices under GD with
weight decay (:mod:`icml25.mirror_flow.balancedness`). Reproduction:
``icml25 reproduce mirror_flow``.
"""

from icml25.core.registry import register
from icml25.mirror_flow.balancedness import (
    balancedness,
    balancedness_error,
    balancedness_gd_step,
    balancedness_prediction,
    balancedness_switch_step,
)
from icml25.mirror_flow.legendre import (
    c_flow,
    c_gd,
    c_gd_step,
    implicit_bias_solution,
    legendre,
    legendre_grad,
    mirror_inverse,
)
from icml25.mirror_flow.power import (
    PowerTrajectory,
    collapse_time,
    dual_interval_width,
    power_dual,
    power_gd,
    power_invariant,
    power_regularizer,
    power_x,
    predicted_invariant,
)
from icml25.mirror_flow.schedule import WeightDecaySwitch

__all__ = [
    "PowerTrajectory",
    "WeightDecaySwitch",
    "balancedness",
    "balancedness_error",
    "balancedness_gd_step",
    "balancedness_prediction",
    "balancedness_switch_step",
    "c_flow",
    "c_gd",
    "c_gd_step",
    "collapse_time",
    "dual_interval_width",
    "implicit_bias_solution",
    "legendre",
    "legendre_grad",
    "mirror_inverse",
    "power_dual",
    "power_gd",
    "power_invariant",
    "power_regularizer",
    "power_x",
    "predicted_invariant",
]

register(
    slug="mirror_flow",
    title="Mirror, Mirror of the Flow: How Does Regularization Shape Implicit Bias?",
    authors="Tom Jacobs, Chao Zhou, Rebekka Burkholz",
    venue="ICML 2025 (arXiv:2504.12883)",
    url="https://arxiv.org/abs/2504.12883",
    summary="Weight decay only moves the Legendre parameter of the implicit bias; switching it "
    "off keeps a sparser/low-rank bias and still interpolates.",
    quick_seconds=50,  # measured: 50 s CPU on one thread (issue 57)
    module="icml25.mirror_flow.reproduce",
)
