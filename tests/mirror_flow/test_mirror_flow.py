import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from icml25.mirror_flow import (
    WeightDecaySwitch,
    c_flow,
    c_gd,
    c_gd_step,
    implicit_bias_solution,
    legendre,
    legendre_grad,
    mirror_inverse,
)
from icml25.mirror_flow.reproduce import sparse_gd

seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_legendre_gradient_matches_autograd_and_inverse(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(7) * 3
    c = rng.uniform(1e-3, 5, 7)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ct = torch.tensor(c, dtype=torch.float64)
    R = 0.5 * torch.sum(xt * torch.asinh(2 * xt / ct) - torch.sqrt(xt**2 + ct**2 / 4))
    R.backward()
    assert float(R.detach()) == pytest.approx(legendre(x, c), rel=1e-12)
    np.testing.assert_allclose(legendre_grad(x, c), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(mirror_inverse(legendre_grad(x, c), c), x, rtol=1e-9, atol=1e-12)


def test_c_evolution_closed_forms():
    # exact one-step identity on (u, v)
    rng = np.random.default_rng(0)
    u, v, g = rng.standard_normal(5), rng.standard_normal(5), rng.standard_normal(5)
    lr, alpha = 0.1, 0.3
    u2, v2 = u - lr * (v * g + alpha * u), v - lr * (u * g + alpha * v)
    np.testing.assert_allclose(u2**2 - v2**2, c_gd_step(u**2 - v**2, g, lr, alpha), rtol=1e-12)
    # flow: small steps of GD converge to c0 exp(-2 alpha t)
    assert c_gd(2.0, 1e-5, 0.7, 100_000) == pytest.approx(float(c_flow(2.0, 0.7, 1.0)), rel=1e-5)
    assert float(c_flow(1.0, 0.0, 10.0)) == 1.0


def test_gd_without_decay_keeps_c_and_matches_mirror_flow_limit():
    """GD with small steps from x0 = 0 converges to argmin_{Ax=y} R_{c0}."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((6, 15)) / np.sqrt(6)
    y = A @ rng.standard_normal(15)
    X, _, c_end = sparse_gd(A, y, np.ones(15), np.zeros(15), 0.02, 0.0, [0], 60_000)
    # discrete GD changes c by the O(eta^2 g^2) term only
    assert np.abs(c_end - 1).max() < 0.02
    np.testing.assert_allclose(X[0], implicit_bias_solution(A, y, c_end[0]), atol=2e-3)


@pytest.mark.parametrize("c", [10.0, 1.0, 1e-2, 1e-4])
def test_implicit_bias_solution_matches_generic_solver(c):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((4, 9))
    y = rng.standard_normal(4)
    x = implicit_bias_solution(A, y, c)
    ref = minimize(
        lambda z: legendre(z, c),
        np.linalg.pinv(A) @ y,
        jac=lambda z: legendre_grad(z, c),
        constraints=[{"type": "eq", "fun": lambda z: A @ z - y, "jac": lambda z: A}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    np.testing.assert_allclose(A @ x, y, atol=1e-8)
    assert legendre(x, c) <= legendre(ref.x, c) + 1e-9
    np.testing.assert_allclose(x, ref.x, atol=1e-4 * max(1.0, np.abs(x).max()))


def test_implicit_bias_limits_l2_and_l1():
    from scipy.optimize import linprog

    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 12))
    y = rng.standard_normal(5)
    x_big = implicit_bias_solution(A, y, 1e5)  # large c: l2-like
    np.testing.assert_allclose(x_big, np.linalg.pinv(A) @ y, atol=1e-6)
    l1 = linprog(np.ones(24), A_eq=np.hstack([A, -A]), b_eq=y, bounds=(0, None)).fun
    norms = [np.abs(implicit_bias_solution(A, y, c)).sum() for c in (1.0, 1e-3, 1e-8, 1e-14)]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(norms))
    assert norms[-1] == pytest.approx(l1, rel=2e-2)  # tiny c (no overflow) approaches min-l1


def test_positional_linear_term():
    """With x0 given, the optimality condition is grad R_c(x) - grad R_c0(x0) in row(A)."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((3, 8))
    y = rng.standard_normal(3)
    x0, c0, c = rng.standard_normal(8), np.full(8, 0.7), np.full(8, 0.2)
    x = implicit_bias_solution(A, y, c, x0=x0, c0=c0)
    w = legendre_grad(x, c) - legendre_grad(x0, c0)
    P = A.T @ np.linalg.pinv(A.T)  # projector on row(A)
    np.testing.assert_allclose(P @ w, w, atol=1e-8)
    np.testing.assert_allclose(A @ x, y, atol=1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="c must be positive"):
        legendre(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="c must be positive"):
        implicit_bias_solution(np.eye(2), np.ones(2), -1.0)
    with pytest.raises(ValueError, match="A must be"):
        implicit_bias_solution(np.eye(2), np.ones(3), 1.0)
    with pytest.raises(ValueError, match="alpha"):
        c_flow(1.0, -0.1, 1.0)
    with pytest.raises(RuntimeError, match="feasible"):
        implicit_bias_solution(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([1.0, 2.0]), 1.0)


# ---- the weight-decay schedule ----------------------------------------------------------------


def _opt(wd=0.1):
    p = torch.nn.Parameter(torch.ones(3))
    return p, torch.optim.SGD([p], lr=0.1, weight_decay=wd)


def test_switch_at_step_and_gd_equivalence():
    """SGD(weight_decay=a) + switch equals hand-written GD with decay for the first T steps."""
    p, opt = _opt(0.5)
    sched = WeightDecaySwitch(opt, at_step=3)
    ref = torch.ones(3)
    for k in range(6):
        opt.zero_grad()
        (0.5 * (p**2).sum() * 0.0 + (p - 2.0).pow(2).sum() / 2).backward()
        opt.step()
        sched.step()
        a = 0.5 if k < 3 else 0.0
        ref = ref - 0.1 * ((ref - 2.0) + a * ref)
        torch.testing.assert_close(p.detach(), ref)
    assert sched.switched_at == 3 and opt.param_groups[0]["weight_decay"] == 0.0


def test_switch_on_criterion_and_state_dict():
    _, opt = _opt()
    sched = WeightDecaySwitch(opt, criterion=lambda loss: loss < 0.5, after=0.01)
    for loss in (2.0, 1.0, 0.4, 0.1):
        sched.step(loss)
    assert sched.switched_at == 3 and opt.param_groups[0]["weight_decay"] == 0.01
    _, opt2 = _opt()
    s2 = WeightDecaySwitch(opt2, criterion=lambda loss: False)
    s2.load_state_dict(sched.state_dict())
    assert opt2.param_groups[0]["weight_decay"] == 0.01 and s2.steps == 4
    # a switched schedule never switches back
    sched.step(10.0)
    assert opt.param_groups[0]["weight_decay"] == 0.01


def test_switch_with_adamw():
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.AdamW([p], lr=0.1, weight_decay=0.2)
    WeightDecaySwitch(opt, at_step=0)
    assert opt.param_groups[0]["weight_decay"] == 0.0


def test_switch_bad_input():
    p, opt = _opt()
    with pytest.raises(ValueError, match="at_step, criterion"):
        WeightDecaySwitch(opt)
    with pytest.raises(ValueError, match="Invalid at_step"):
        WeightDecaySwitch(opt, at_step=-1)
    with pytest.raises(ValueError, match="Invalid weight decay"):
        WeightDecaySwitch(opt, at_step=1, after=-0.1)
    with pytest.raises(TypeError, match="Optimizer"):
        WeightDecaySwitch([p], at_step=1)  # type: ignore[arg-type]
