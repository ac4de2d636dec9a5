"""Bad input at every public entry point: a clear error, never a hang, a NaN or a wrong answer.

One table, one test: each row calls a public function or constructor with one invalid
argument and names the exception type and words the message must contain (the argument's
name, or what was wrong). ``pytest-timeout`` turns a call that never returns into a failure.
The rows are grouped by method; methods keep their own finer tests beside their code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from icml25.core import validate as V

NAN = float("nan")
INF = float("inf")


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[], Any]
    exc: type[BaseException] | tuple[type[BaseException], ...]
    words: str


CASES: list[Case] = []


def case(id: str, exc: Any, words: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def add(fn: Callable[[], Any]) -> Callable[[], Any]:
        CASES.append(Case(id, fn, exc, words))
        return fn

    return add


def many(prefix: str, fn: Callable[..., Any], rows: list[tuple[str, dict, Any, str]]) -> None:
    """Rows of ``(id, kwargs, exception, words)`` for one callable."""
    for rid, kw, exc, words in rows:
        CASES.append(Case(f"{prefix}:{rid}", lambda fn=fn, kw=kw: fn(**kw), exc, words))


# --------------------------------------------------------------------------- core.validate
many(
    "validate.integer",
    V.integer,
    [
        ("bool", {"name": "k", "value": True}, ValueError, "k must be an integer"),
        ("frac", {"name": "k", "value": 1.5}, ValueError, "k must be an integer"),
        ("nan", {"name": "k", "value": NAN}, ValueError, "k must be an integer"),
        ("str", {"name": "k", "value": "3"}, ValueError, "got '3'"),
        ("low", {"name": "k", "value": 0, "low": 1}, ValueError, "k must be an integer >= 1"),
    ],
)
many(
    "validate.number",
    V.number,
    [
        ("nan", {"name": "x", "value": NAN}, ValueError, "x must be a finite number"),
        ("inf", {"name": "x", "value": INF}, ValueError, "x must be a finite number"),
        ("open", {"name": "x", "value": 0.0, "low": 0.0, "low_open": True}, ValueError, "> 0"),
        ("str", {"name": "x", "value": "1"}, ValueError, "got '1'"),
    ],
)
many(
    "validate.finite_array",
    V.finite_array,
    [
        ("nan", {"name": "X", "value": [1.0, NAN]}, ValueError, "X must be finite"),
        ("ndim", {"name": "X", "value": [1.0], "ndim": 2}, ValueError, "X must be a 2-D"),
        ("empty", {"name": "X", "value": np.zeros((0, 2))}, ValueError, "at least 1 rows"),
        ("ragged", {"name": "X", "value": [[1], [1, 2]]}, ValueError, "array of numbers"),
    ],
)
many(
    "validate.class_labels",
    V.class_labels,
    [
        ("frac", {"name": "y", "value": [0, 1.5]}, ValueError, "integer class labels"),
        ("neg", {"name": "y", "value": [0, -1]}, ValueError, ">= 0"),
        ("len", {"name": "y", "value": [0, 1], "n": 3}, ValueError, "must have 3 labels"),
    ],
)

# --------------------------------------------------------------------------- pfl_tradeoff
from icml25 import pfl_tradeoff as pfl  # noqa: E402
from icml25.pfl_tradeoff.flower import make_strategy  # noqa: E402

_rng = np.random.default_rng(0)
_X = _rng.normal(size=(20, 3))
_y = _rng.normal(size=20)


def _ls() -> Any:
    return pfl.LeastSquares(_X, _y)


many(
    "pfl.fedclup",
    lambda **kw: pfl.fedclup([_ls(), _ls()], **{"lam": 1.0, **kw}),
    [
        ("lr_local<0", {"lr_local": -0.5}, ValueError, "lr_local must be a finite number > 0"),
        ("lr_local=nan", {"lr_local": NAN}, ValueError, "lr_local"),
        ("eta_g=0", {"eta_g": 0.0}, ValueError, "eta_g"),
        ("lam<0", {"lam": -1.0}, ValueError, "lam must be a finite number >= 0"),
        ("lam=nan", {"lam": NAN}, ValueError, "lam"),
        ("rounds=0", {"rounds": 0}, ValueError, "rounds must be an integer >= 1"),
        ("rounds=1.5", {"rounds": 1.5}, ValueError, "rounds"),
        ("local_steps=0", {"local_steps": 0}, ValueError, "local_steps"),
        ("tol<0", {"tol": -1.0}, ValueError, "tol"),
        ("w0 dim", {"w0": np.zeros(5)}, ValueError, "w0 must have the model dimension 3"),
        ("w0 nan", {"w0": [NAN, 0, 0]}, ValueError, "w0 must be finite"),
        ("target dim", {"target": np.zeros(2)}, ValueError, "target"),
        ("weights len", {"weights": [1.0]}, ValueError, "one entry per client"),
        ("weights neg", {"weights": [1.0, -1.0]}, ValueError, "weights must be >= 0"),
        ("weights zero", {"weights": [0.0, 0.0]}, ValueError, "positive sum"),
    ],
)
CASES += [
    Case("pfl.fedclup:no clients", lambda: pfl.fedclup([], 1.0), ValueError, "at least one"),
    Case("pfl.server_lr:lam<0", lambda: pfl.server_lr(-1.0, 1.0), ValueError, "lam"),
    Case("pfl.server_lr:L=0", lambda: pfl.server_lr(1.0, 0.0), ValueError, "smoothness"),
    Case("pfl.adaptive_lambda:n=0", lambda: pfl.adaptive_lambda(0.5, 0), ValueError, "n must"),
    Case("pfl.adaptive_lambda:n=2.5", lambda: pfl.adaptive_lambda(0.5, 2.5), ValueError, "n "),
    Case("pfl.adaptive_lambda:r=0", lambda: pfl.adaptive_lambda(0.0, 10), ValueError, "r_est"),
    Case("pfl.adaptive_lambda:r=inf", lambda: pfl.adaptive_lambda(INF, 10), ValueError, "r_est"),
    Case("pfl.pfl_optimum:empty", lambda: pfl.pfl_optimum([], 1.0), ValueError, "at least one"),
    Case(
        "pfl.pfl_optimum:softmax",
        lambda: pfl.pfl_optimum([pfl.SoftmaxRegression(_X, np.arange(20) % 2, 2)], 1.0),
        TypeError,
        "LeastSquares",
    ),
    Case(
        "pfl.LeastSquares:nan y",
        lambda: pfl.LeastSquares(_X, np.r_[_y[:-1], NAN]),
        ValueError,
        "y must be finite",
    ),
    Case("pfl.LeastSquares:1-D X", lambda: pfl.LeastSquares(_y, _y), ValueError, "X must be a 2-D"),
    Case("pfl.LeastSquares:len", lambda: pfl.LeastSquares(_X, _y[:5]), ValueError, "y must be 1-D"),
    Case(
        "pfl.SoftmaxRegression:fractional labels",
        lambda: pfl.SoftmaxRegression(_X, np.full(20, 0.5), 2),
        ValueError,
        "integer class labels",
    ),
    Case(
        "pfl.SoftmaxRegression:label>=K",
        lambda: pfl.SoftmaxRegression(_X, np.arange(20) % 3, 2),
        ValueError,
        "labels must be in",
    ),
    Case(
        "pfl.SoftmaxRegression:K=1",
        lambda: pfl.SoftmaxRegression(_X, np.zeros(20, int), 1),
        ValueError,
        "num_classes",
    ),
    Case(
        "pfl.local_update:steps<0",
        lambda: pfl.local_update(_ls(), np.zeros(3), np.zeros(3), 1.0, -1),
        ValueError,
        "steps",
    ),
    Case(
        "pfl.local_update:lr<0",
        lambda: pfl.local_update(_ls(), np.zeros(3), np.zeros(3), 1.0, 1, lr=-1.0),
        ValueError,
        "lr must",
    ),
    Case(
        "pfl.TorchProblem:smoothness",
        lambda: pfl.TorchProblem(
            nn.Linear(3, 2), torch.zeros(4, 3), torch.zeros(4, dtype=torch.long), smoothness=0
        ),
        ValueError,
        "smoothness",
    ),
    Case(
        "pfl.TorchProblem:nan X",
        lambda: pfl.TorchProblem(
            nn.Linear(3, 2),
            torch.full((4, 3), NAN),
            torch.zeros(4, dtype=torch.long),
            smoothness=1.0,
        ),
        ValueError,
        "X must be finite",
    ),
]
many(
    "pfl.make_strategy",
    lambda **kw: make_strategy(**{"lam": 1.0, "local_steps": 2, "smoothness": 1.0, **kw}),
    [
        ("local_steps=0", {"local_steps": 0}, ValueError, "local_steps must be an integer >= 1"),
        ("smoothness<0", {"smoothness": -1.0}, ValueError, "smoothness"),
        ("lr_local<0", {"lr_local": -1.0}, ValueError, "lr_local"),
        ("lam<0", {"lam": -1.0}, ValueError, "lam"),
    ],
)

# ------------------------------------------------------------------ constrained_clustering
from icml25 import constrained_clustering as ccl  # noqa: E402

_G = np.ones((4, 4)) - np.eye(4)
_H = np.zeros((4, 4))
_H[0, 3] = _H[3, 0] = 1.0
CASES += [
    Case("cc.cut_ratio:3 labels", lambda: ccl.cut_ratio(_G, _H, [0, 1, 2, 0]), ValueError, "0/1"),
    Case("cc.cut_ratio:len", lambda: ccl.cut_ratio(_G, _H, [0, 1]), ValueError, "shape (4,)"),
    Case("cc.cut:G nan", lambda: ccl.constrained_cut(_G * NAN, _H), ValueError, "non-finite"),
    Case("cc.cut:G asym", lambda: ccl.constrained_cut(np.triu(_G), _H), ValueError, "symmetric"),
    Case("cc.cut:G neg", lambda: ccl.constrained_cut(-_G, _H), ValueError, "negative"),
    Case("cc.cut:H size", lambda: ccl.constrained_cut(_G, _H[:3, :3]), ValueError, "same size"),
    Case("cc.cut:H empty", lambda: ccl.constrained_cut(_G, _H * 0), ValueError, "H has no edges"),
    Case("cc.cut:method", lambda: ccl.constrained_cut(_G, _H, method="x"), ValueError, "method"),
    Case("cc.cut:solver", lambda: ccl.constrained_cut(_G, _H, solver="x"), ValueError, "solver"),
    Case("cc.cut:ridge", lambda: ccl.constrained_cut(_G, _H, ridge=0.0), ValueError, "ridge"),
    Case("cc.cut:tol", lambda: ccl.constrained_cut(_G, _H, tol=-1.0), ValueError, "tol"),
    Case("cc.cut:1-D", lambda: ccl.constrained_cut(np.ones(4), _H), ValueError, "2-D"),
    Case("cc.cut:strings", lambda: ccl.constrained_cut(np.full((4, 4), "a"), _H), TypeError, "G"),
    Case(
        "cc.estimator:fit G nan",
        lambda: ccl.ConstrainedSpectralClustering().fit(_G * NAN, _H),
        ValueError,
        "non-finite",
    ),
    Case("cc.brute_force:big", lambda: ccl.brute_force(np.ones((40, 40)), _H), ValueError, ""),
]

# --------------------------------------------------------------------------------- fedgvi
from icml25 import fedgvi  # noqa: E402

_m, _v = np.zeros(2), np.ones(2)
CASES += [
    Case("fedgvi.kl:var<0", lambda: fedgvi.kl(_m, -_v, _m, _v), ValueError, "variance of q"),
    Case("fedgvi.kl:var=0", lambda: fedgvi.kl(_m, _v, _m, 0 * _v), ValueError, "variance of p"),
    Case("fedgvi.kl:mean nan", lambda: fedgvi.kl(_m * NAN, _v, _m, _v), ValueError, "mean of q"),
    Case("fedgvi.kl:shapes", lambda: fedgvi.kl(_m, _v, np.zeros(3), _v), ValueError, "shapes"),
    Case(
        "fedgvi.alpha_renyi:alpha=1",
        lambda: fedgvi.alpha_renyi(_m, _v, _m, _v, 1.0),
        ValueError,
        "alpha",
    ),
    Case(
        "fedgvi.alpha_renyi:alpha=nan",
        lambda: fedgvi.alpha_renyi(_m, _v, _m, _v, NAN),
        ValueError,
        "alpha",
    ),
    Case(
        "fedgvi.alpha_renyi:var<0",
        lambda: fedgvi.alpha_renyi(_m, -_v, _m, _v, 2.0),
        ValueError,
        "variance of q",
    ),
    Case("fedgvi.weighted_kl:w=0", lambda: fedgvi.weighted_kl(_m, _v, _m, _v, 0), ValueError, "w "),
    Case("fedgvi.WeightedKL:w=-1", lambda: fedgvi.WeightedKL(-1.0), ValueError, "w must"),
    Case("fedgvi.AlphaRenyi:1", lambda: fedgvi.AlphaRenyi(1.0), ValueError, "alpha"),
    Case("fedgvi.LocalOptimizer:lr", lambda: fedgvi.LocalOptimizer(lr=INF), ValueError, "lr"),
    Case(
        "fedgvi.LocalOptimizer:steps", lambda: fedgvi.LocalOptimizer(steps=0), ValueError, "steps"
    ),
    Case(
        "fedgvi.LocalOptimizer:method",
        lambda: fedgvi.LocalOptimizer(method="x"),
        ValueError,
        "method",
    ),
    Case(
        "fedgvi.NatGaussian:var<0",
        lambda: fedgvi.NatGaussian.from_moments(_m, -_v),
        ValueError,
        "var must be positive",
    ),
    Case(
        "fedgvi.NatGaussian:cov not PD",
        lambda: fedgvi.NatGaussian.from_moments(_m, -np.eye(2)),
        ValueError,
        "positive definite",
    ),
    Case(
        "fedgvi.sample:n=0",
        lambda: fedgvi.sample(fedgvi.NatGaussian.from_moments(_m, _v), 0),
        ValueError,
        "n must be an integer >= 1",
    ),
    Case(
        "fedgvi.fedgvi:rounds=0",
        lambda: fedgvi.fedgvi(fedgvi.NatGaussian.from_moments(_m, _v), [], 0),
        ValueError,
        "clients",
    ),
    Case(
        "fedgvi.GeneralisedCrossEntropy:b",
        lambda: fedgvi.GeneralisedCrossEntropy(b=0.0),
        ValueError,
        "b must",
    ),
    Case("fedgvi.DensityPowerLoss:beta", lambda: fedgvi.DensityPowerLoss(1.0), ValueError, "beta"),
    Case("fedgvi.GammaLoss:gamma", lambda: fedgvi.GammaLoss(0.5), ValueError, "gamma"),
    Case(
        "fedgvi.GaussianLocation:nan",
        lambda: fedgvi.GaussianLocation(np.array([[NAN, 0.0]])),
        ValueError,
        "finite",
    ),
    Case(
        "fedgvi.LogisticRegression:labels",
        lambda: fedgvi.LogisticRegression(np.zeros((3, 2)), [0, 1, 2]),
        ValueError,
        "",
    ),
]

# ------------------------------------------------------------------------------------ it3
from icml25 import it3  # noqa: E402


def _zz(trained: bool = True) -> Any:
    torch.manual_seed(0)
    z = it3.ZigZag(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), 3)
    if trained:
        z.mark_trained()
    return z


_x_nan = torch.full((2, 4), NAN)
_y3 = torch.tensor([0, 1])
CASES += [
    Case(
        "it3.zigzag_loss:x nan",
        lambda: it3.zigzag_loss(_zz(), _x_nan, _y3),
        ValueError,
        "x must be finite",
    ),
    Case(
        "it3.zigzag_loss:len",
        lambda: it3.zigzag_loss(_zz(), torch.zeros(3, 4), _y3),
        ValueError,
        "one target per sample",
    ),
    Case(
        "it3.zigzag_loss:class",
        lambda: it3.zigzag_loss(_zz(), torch.zeros(2, 4), torch.tensor([0, 5])),
        ValueError,
        "class indices",
    ),
    Case(
        "it3.zigzag_loss:float y",
        lambda: it3.zigzag_loss(_zz(), torch.zeros(2, 4), torch.zeros(2)),
        ValueError,
        "integer",
    ),
    Case(
        "it3.zigzag_loss:variant",
        lambda: it3.zigzag_loss(_zz(), torch.zeros(2, 4), _y3, variant="x"),
        ValueError,
        "variant",
    ),
    Case(
        "it3.zigzag_loss:p_label",
        lambda: it3.zigzag_loss(_zz(), torch.zeros(2, 4), _y3, p_label=2.0),
        ValueError,
        "p_label",
    ),
    Case(
        "it3.idempotence_error:x nan",
        lambda: it3.idempotence_error(_zz(), _x_nan),
        ValueError,
        "x must be finite",
    ),
    Case(
        "it3.idempotence_error:untrained",
        lambda: it3.idempotence_error(_zz(False), torch.zeros(2, 4)),
        ValueError,
        "not trained",
    ),
    Case(
        "it3.idempotence_error:not zigzag",
        lambda: it3.idempotence_error(nn.Linear(4, 3), torch.zeros(2, 4)),
        TypeError,
        "ZigZag",
    ),
    Case(
        "it3.zigzag_recursion:x nan",
        lambda: it3.zigzag_recursion(_zz(), _x_nan),
        ValueError,
        "x must be finite",
    ),
    Case("it3.tent:x nan", lambda: it3.tent(_zz(), _x_nan), ValueError, "x must be finite"),
    Case(
        "it3.tent:steps", lambda: it3.tent(_zz(), torch.zeros(2, 4), steps=-1), ValueError, "steps"
    ),
    Case("it3.tent:lr", lambda: it3.tent(_zz(), torch.zeros(2, 4), lr=0.0), ValueError, "lr"),
    Case(
        "it3.bn_adapt:no BN",
        lambda: it3.bn_adapt(_zz(), torch.zeros(2, 4)),
        ValueError,
        "BatchNorm",
    ),
    Case("it3.IT3:x nan", lambda: it3.IT3(_zz())(_x_nan), ValueError, "x must be finite"),
    Case("it3.IT3:x 1-D", lambda: it3.IT3(_zz())(torch.zeros(4)), ValueError, "batched"),
    Case("it3.IT3:x empty", lambda: it3.IT3(_zz())(torch.zeros(0, 4)), ValueError, "at least one"),
    Case("it3.IT3:steps", lambda: it3.IT3(_zz(), steps=-1), ValueError, "steps"),
    Case("it3.IT3:lr", lambda: it3.IT3(_zz(), lr=NAN), ValueError, "lr"),
    Case("it3.IT3:reset", lambda: it3.IT3(_zz(), reset="x"), ValueError, "reset"),
    Case("it3.IT3:distance", lambda: it3.IT3(_zz(), distance="x"), ValueError, "distance"),
    Case("it3.ZigZag:aux_dim", lambda: it3.ZigZag(nn.Linear(4, 3), 0), ValueError, "aux_dim"),
    Case("it3.ZigZag:task", lambda: it3.ZigZag(nn.Linear(4, 3), 3, task="x"), ValueError, "task"),
]

# ------------------------------------------------------------------------------ backslash
from icml25 import backslash as bs  # noqa: E402

_net = nn.Sequential(nn.Linear(4, 3))
CASES += [
    Case(
        "backslash.step:lr<0",
        lambda: bs.BackSlash(_net, 1.0).step(lr=-0.1),
        ValueError,
        "lr must be a finite number >= 0",
    ),
    Case("backslash.step:no lr", lambda: bs.BackSlash(_net, 1.0).step(), ValueError, "pass lr="),
    Case("backslash.BackSlash:lam", lambda: bs.BackSlash(_net, -1.0), ValueError, "lam"),
    Case("backslash.BackSlash:nu", lambda: bs.BackSlash(_net, 1.0, nu=0), ValueError, "nu"),
    Case(
        "backslash.BackSlash:reduction",
        lambda: bs.BackSlash(_net, 1.0, reduction="x"),
        ValueError,
        "reduction",
    ),
    Case(
        "backslash.BackSlash:nu_every",
        lambda: bs.BackSlash(_net, 1.0, nu_every=0),
        ValueError,
        "nu_every",
    ),
    Case(
        "backslash.BackSlash:no layers",
        lambda: bs.BackSlash(nn.ReLU(), 1.0),
        ValueError,
        "no parameters",
    ),
    Case(
        "backslash.prox_power:t<0",
        lambda: bs.prox_power(torch.ones(3), -1.0, 1.0),
        ValueError,
        "t must",
    ),
    Case(
        "backslash.prox_power:nu",
        lambda: bs.prox_power(torch.ones(3), 1.0, 0.0),
        ValueError,
        "nu must",
    ),
    Case(
        "backslash.gg_shape:nan",
        lambda: bs.gg_shape(torch.tensor([1.0, NAN])),
        ValueError,
        "finite",
    ),
    Case("backslash.gg_shape:empty", lambda: bs.gg_shape(torch.zeros(0)), ValueError, "empty"),
    Case(
        "backslash.gg_shape_pooled:nan",
        lambda: bs.gg_shape_pooled([torch.ones(3), torch.tensor([1.0, NAN])]),
        ValueError,
        "finite",
    ),
    Case(
        "backslash.gg_shape_pooled:empty tensor",
        lambda: bs.gg_shape_pooled([torch.ones(3), torch.zeros(0)]),
        ValueError,
        "non-empty",
    ),
    Case(
        "backslash.gg_rate:reduction",
        lambda: bs.gg_rate([torch.ones(3)], 1.0, "x"),
        ValueError,
        "reduction",
    ),
    Case("backslash.quantize:nan", lambda: bs.quantize(np.array([NAN]), 0.1), ValueError, "finite"),
    Case("backslash.quantize:delta", lambda: bs.quantize(np.ones(2), 0.0), ValueError, "delta"),
    Case(
        "backslash.magnitude_prune:frac",
        lambda: bs.magnitude_prune([torch.ones(2)], 1.5),
        ValueError,
        "fraction",
    ),
    Case(
        "backslash.magnitude_prune:empty", lambda: bs.magnitude_prune([], 0.5), ValueError, "params"
    ),
    Case(
        "backslash.magnitude_prune:scope",
        lambda: bs.magnitude_prune([torch.ones(2)], 0.5, scope="layer"),
        ValueError,
        "scope must be 'tensor' or 'global'",
    ),
    Case("backslash.BackSlash:eps", lambda: bs.BackSlash(_net, 1.0, eps=-0.1), ValueError, "eps"),
    Case(
        "backslash.prox_power:eps",
        lambda: bs.prox_power(torch.ones(3), 1.0, 0.5, eps=NAN),
        ValueError,
        "eps must",
    ),
    Case(
        "backslash.gg_rate:eps",
        lambda: bs.gg_rate([torch.ones(3)], 1.0, eps=-1.0),
        ValueError,
        "eps must",
    ),
    Case(
        "backslash.save:not a module",
        lambda: bs.save_compressed("net", "x.bs", 0.1),
        TypeError,
        "model must be",
    ),
]


@case("backslash.load:bit flip", ValueError, "fails its CRC32")
def _flip(tmp: Any = None) -> None:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.bs"
        bs.save_compressed(nn.Sequential(nn.Linear(8, 8)), p, 0.01)
        raw = bytearray(p.read_bytes())
        raw[-3] ^= 0x10
        p.write_bytes(bytes(raw))
        bs.load_compressed(p, nn.Sequential(nn.Linear(8, 8)))


@case("backslash.load:truncated", ValueError, "truncated")
def _trunc() -> None:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.bs"
        bs.save_compressed(nn.Sequential(nn.Linear(8, 8)), p, 0.01)
        p.write_bytes(p.read_bytes()[:-10])
        bs.load_compressed(p, nn.Sequential(nn.Linear(8, 8)))


# -------------------------------------------------------------------------- cca_attention
from icml25 import cca_attention as cca  # noqa: E402

_q = torch.zeros(1, 2, 16, 4)
_gw = {"group_size": 4, "window": 4}
CASES += [
    Case(
        "cca.TinyLM:ids>=vocab",
        lambda: cca.TinyLM(10)(torch.tensor([[1, 12]])),
        ValueError,
        "token ids must lie in [0, vocab = 10)",
    ),
    Case(
        "cca.TinyLM:ids<0", lambda: cca.TinyLM(10)(torch.tensor([[-1, 2]])), ValueError, "token ids"
    ),
    Case(
        "cca.TinyLM:float ids",
        lambda: cca.TinyLM(10)(torch.zeros(1, 3)),
        ValueError,
        "integer tensor",
    ),
    Case(
        "cca.TinyLM:too long",
        lambda: cca.TinyLM(10, max_len=4)(torch.zeros(1, 5, dtype=torch.long)),
        ValueError,
        "max_len",
    ),
    Case("cca.TinyLM:vocab=0", lambda: cca.TinyLM(0), ValueError, "vocab"),
    Case(
        "cca.TinyLM:group_size",
        lambda: cca.TinyLM(10).set_attention("cca", group_size=0),
        ValueError,
        "group_size",
    ),
    Case(
        "cca.TinyLM:kind",
        lambda: cca.TinyLM(10).set_attention("x"),
        ValueError,
        "attention must be",
    ),
    Case(
        "cca.attention:group 0",
        lambda: cca.cca_attention(_q, _q, _q, group_size=0, window=4),
        ValueError,
        "group_size",
    ),
    Case(
        "cca.attention:window<0",
        lambda: cca.cca_attention(_q, _q, _q, group_size=4, window=-1),
        ValueError,
        "window",
    ),
    Case(
        "cca.attention:3-D",
        lambda: cca.cca_attention(_q[0], _q[0], _q[0], **_gw),
        ValueError,
        "(B, H, L, D)",
    ),
    Case(
        "cca.attention:list",
        lambda: cca.cca_attention([1], _q, _q, **_gw),
        TypeError,
        "query must be a torch.Tensor",
    ),
    Case(
        "cca.attention:gqa",
        lambda: cca.cca_attention(torch.zeros(1, 3, 16, 4), _q, _q, **_gw),
        ValueError,
        "multiple",
    ),
    Case(
        "cca.attention:pool",
        lambda: cca.cca_attention(_q, _q, _q, pool="x", **_gw),
        ValueError,
        "pool",
    ),
    Case(
        "cca.dense:group 0",
        lambda: cca.dense_cca_attention(_q, _q, _q, group_size=0, window=4),
        ValueError,
        "group_size",
    ),
]

# ---------------------------------------------------------------------------- pan_privacy
from icml25 import pan_privacy as pp  # noqa: E402

_keys = pp.keygen()
CASES += [
    Case("pan.encrypt:m<0", lambda: pp.encrypt(-1, _keys.public), ValueError, "m must"),
    Case("pan.encrypt:m=2.5", lambda: pp.encrypt(2.5, _keys.public), ValueError, "m must"),
    Case(
        "pan.decrypt:max_message",
        lambda: pp.decrypt(pp.encrypt(1, _keys.public), _keys.secret, -1),
        ValueError,
        "max_message",
    ),
    Case(
        "pan.decrypt:out of range",
        lambda: pp.decrypt(pp.encrypt(5, _keys.public), _keys.secret, 1),
        pp.DecryptionError,
        "",
    ),
    Case(
        "pan.device:epsilon<0",
        lambda: pp.PanPrivateDevice(_keys.public, -1.0),
        ValueError,
        "epsilon",
    ),
    Case(
        "pan.device:epsilon nan",
        lambda: pp.PanPrivateDevice(_keys.public, NAN),
        ValueError,
        "epsilon",
    ),
    Case("pan.device:public", lambda: pp.PanPrivateDevice("key", 1.0), TypeError, "public"),
    Case("pan.keep_probability:inf", lambda: pp.keep_probability(INF), ValueError, "epsilon"),
    Case("pan.estimate_count:bits", lambda: pp.estimate_count([0, 2], 1.0), ValueError, "bits"),
    Case("pan.estimate_count:empty", lambda: pp.estimate_count([], 1.0), ValueError, ""),
    Case("pan.Server:epsilon", lambda: pp.Server(_keys.secret, 0.0), ValueError, "epsilon"),
    Case(
        "pan.Server:garbage report",
        lambda: pp.Server(_keys.secret, 1.0).decrypt_report(b"x" * 10),
        ValueError,
        "",
    ),
    Case("pan.Ciphertext:bytes", lambda: pp.Ciphertext.from_bytes(b"\x00" * 5), ValueError, ""),
]


@case("pan.Server:tampered ciphertext", (ValueError, pp.DecryptionError), "")
def _tamper() -> None:
    device = pp.PanPrivateDevice(_keys.public, 1.0)
    report = bytearray(device.report())
    report[5] ^= 0x01
    pp.Server(_keys.secret, 1.0).decrypt_report(bytes(report))


# --------------------------------------------------------------------------------- llmscan
from icml25 import llmscan  # noqa: E402

CASES += [
    Case("llmscan.summary_stats:empty", lambda: llmscan.summary_stats([]), ValueError, ""),
    Case(
        "llmscan.summary_stats:nan", lambda: llmscan.summary_stats([1.0, NAN]), ValueError, "finite"
    ),
    Case(
        "llmscan.select:which", lambda: llmscan.select(np.zeros((2, 10)), "x"), ValueError, "which"
    ),
    Case(
        "llmscan.detector:features",
        lambda: llmscan.LLMScanDetector(features="x"),
        ValueError,
        "features",
    ),
    Case(
        "llmscan.detector:classifier",
        lambda: llmscan.LLMScanDetector(classifier="x"),
        ValueError,
        "classifier",
    ),
    Case(
        "llmscan.detector:fit nan",
        lambda: llmscan.LLMScanDetector().fit_features(np.full((4, 10), NAN), [0, 1, 0, 1]),
        ValueError,
        "finite",
    ),
    Case(
        "llmscan.detector:fit len",
        lambda: llmscan.LLMScanDetector().fit_features(np.zeros((4, 10)), [0, 1]),
        ValueError,
        "",
    ),
    Case(
        "llmscan.detector:one class",
        lambda: llmscan.LLMScanDetector().fit_features(np.zeros((4, 10)), [0, 0, 0, 0]),
        ValueError,
        "class",
    ),
    Case(
        "llmscan.detector:unfitted",
        lambda: llmscan.LLMScanDetector().predict_proba_features(np.zeros((2, 10))),
        Exception,
        "fit",
    ),
]

# --------------------------------------------------------------------------------- core.llm
from icml25.core import llm as core_llm  # noqa: E402

CASES += [
    Case("llm.tiny_llama:layers", lambda: core_llm.tiny_llama(layers=0), ValueError, "layers"),
    Case(
        "llm.tiny_llama:heads", lambda: core_llm.tiny_llama(hidden=10, heads=3), ValueError, "heads"
    ),
    Case(
        "llm.OpenAI:url",
        lambda: core_llm.OpenAICompatibleLM("not a url", "m"),
        ValueError,
        "base_url",
    ),
    Case(
        "llm.OpenAI:timeout",
        lambda: core_llm.OpenAICompatibleLM("http://x", "m", timeout=0),
        ValueError,
        "timeout",
    ),
    Case(
        "llm.load:missing path",
        lambda: core_llm.load_causal_lm("/nonexistent/model"),
        (ValueError, FileNotFoundError, OSError),
        "nonexistent",
    ),
]


# ------------------------------------------------------ the remaining public entry points
_Gs = ccl.laplacian(_G) * 0 + __import__("scipy.sparse", fromlist=["csr_matrix"]).csr_matrix(_G)
_prior = fedgvi.NatGaussian.from_moments(_m, _v)
_gl = fedgvi.GaussianLocation(np.zeros((3, 2)))
CASES += [
    Case(
        "pfl.server_update:weights",
        lambda: pfl.server_update(np.zeros(3), [np.zeros(3)], [-1.0], 1.0, 1.0),
        ValueError,
        "weights",
    ),
    Case(
        "pfl.server_update:len",
        lambda: pfl.server_update(np.zeros(3), [np.zeros(3)], [1.0, 1.0], 1.0, 1.0),
        ValueError,
        "one entry per client",
    ),
    Case("cc.laplacian:nan", lambda: ccl.laplacian(_G * NAN), ValueError, "non-finite"),
    Case(
        "cc.signed_laplacian:asym",
        lambda: ccl.signed_laplacian(np.triu(_G)),
        ValueError,
        "symmetric",
    ),
    Case(
        "cc.sweep:x len", lambda: ccl.sweep(_G, _H, np.zeros(3)), ValueError, "one entry per vertex"
    ),
    Case(
        "cc.sweep:x nan", lambda: ccl.sweep(_G, _H, np.full(4, NAN)), ValueError, "x must be finite"
    ),
    Case(
        "cc.signed_eigenpair:tol", lambda: ccl.signed_eigenpair(_G, _H, tol=-1.0), ValueError, "tol"
    ),
    Case(
        "cc.signed_eigenpair:H size",
        lambda: ccl.signed_eigenpair(_G, _H[:3, :3]),
        ValueError,
        "same size",
    ),
    Case(
        "cc.cc_eigenpair:ridge", lambda: ccl.cc_eigenpair(_G, _H, ridge=-1.0), ValueError, "ridge"
    ),
    Case(
        "cc.cc_eigenpair:preconditioner",
        lambda: ccl.cc_eigenpair(_G, _H, preconditioner="x"),
        ValueError,
        "preconditioner",
    ),
    Case("cc.conductance:nan", lambda: ccl.conductance(_G * NAN), ValueError, "non-finite"),
    Case(
        "cc.generalized_cheeger_bound:0",
        lambda: ccl.generalized_cheeger_bound(0.1, 0.0),
        ValueError,
        "conductance_g",
    ),
    Case(
        "cc.generalized_cheeger_bound:nan",
        lambda: ccl.generalized_cheeger_bound(NAN, 0.5),
        ValueError,
        "eigenvalue",
    ),
    Case(
        "cc.signed_bipartiteness:y",
        lambda: ccl.signed_bipartiteness(_G, _H, [0, 2, 0, 0]),
        ValueError,
        "{-1, 0, 1}",
    ),
    Case(
        "cc.signed_threshold_sweep:len",
        lambda: ccl.signed_threshold_sweep(_G, _H, [1.0]),
        ValueError,
        "one entry per vertex",
    ),
    Case(
        "cc.signed_cheeger_constant:big",
        lambda: ccl.signed_cheeger_constant(np.ones((12, 12)), np.ones((12, 12))),
        ValueError,
        "n <= 11",
    ),
    Case(
        "cc.estimator:method",
        lambda: ccl.ConstrainedSpectralClustering(method="x").fit(_G, _H),
        ValueError,
        "method",
    ),
    Case(
        "fedgvi.reverse_kl:var<0",
        lambda: fedgvi.reverse_kl(_m, _v, _m, -_v),
        ValueError,
        "variance",
    ),
    Case("fedgvi.IMQScoreMatching:c", lambda: fedgvi.IMQScoreMatching(c=0.0), ValueError, "c must"),
    Case(
        "fedgvi.MLPClassifier:K",
        lambda: fedgvi.MLPClassifier(np.zeros((3, 2)), [0, 1, 0], 1),
        ValueError,
        "num_classes",
    ),
    Case(
        "fedgvi.MLPClassifier:hidden",
        lambda: fedgvi.MLPClassifier(np.zeros((3, 2)), [0, 1, 0], 2, (0,)),
        ValueError,
        "hidden",
    ),
    Case(
        "fedgvi.MLPClassifier:labels",
        lambda: fedgvi.MLPClassifier(np.zeros((3, 2)), [0, 1, 5], 2),
        ValueError,
        "",
    ),
    Case(
        "fedgvi.client_step:damping",
        lambda: fedgvi.client_step(_prior, fedgvi.NatGaussian.flat(2), _gl, damping=0.0),
        ValueError,
        "damping",
    ),
    Case(
        "fedgvi.client_step:model",
        lambda: fedgvi.client_step(_prior, fedgvi.NatGaussian.flat(2), "model"),
        TypeError,
        "model",
    ),
    Case(
        "fedgvi.local_posterior:dim",
        lambda: fedgvi.local_posterior(fedgvi.NatGaussian.from_moments(np.zeros(3), 1.0), _gl),
        ValueError,
        "dimension",
    ),
    Case(
        "fedgvi.gvi:dim",
        lambda: fedgvi.gvi(fedgvi.NatGaussian.from_moments(np.zeros(3), 1.0), _gl),
        ValueError,
        "dimension",
    ),
    Case("fedgvi.server_step:empty", lambda: fedgvi.server_step(_prior, []), ValueError, "factors"),
    Case(
        "fedgvi.conjugate_update:dim",
        lambda: fedgvi.conjugate_update(
            _gl, fedgvi.NLL(), fedgvi.NatGaussian.from_moments(np.zeros(3), 1.0)
        ),
        ValueError,
        "dimension",
    ),
    Case("fedgvi.Client:model", lambda: fedgvi.Client("model"), TypeError, "model"),
    Case("fedgvi.KL:shapes", lambda: fedgvi.KL()(_m, _v, np.zeros(3), _v), ValueError, "shapes"),
    Case(
        "fedgvi.ReverseKL:var", lambda: fedgvi.ReverseKL()(_m, -_v, _m, _v), ValueError, "variance"
    ),
    Case(
        "fedgvi.NLL:model",
        lambda: fedgvi.NLL().per_point("model", torch.zeros(1, 2)),
        (TypeError, AttributeError),
        "",
    ),
    Case(
        "it3.it3_objective:x nan",
        lambda: it3.it3_objective(_zz(), _zz(), _x_nan, distance=it3.l1_distance),
        ValueError,
        "x must be finite",
    ),
    Case(
        "it3.js_divergence:shape",
        lambda: it3.js_divergence(torch.ones(2, 3) / 3, torch.ones(2, 4) / 4),
        ValueError,
        "shape",
    ),
    Case(
        "it3.js_divergence:not probs",
        lambda: it3.js_divergence(torch.ones(2, 3), torch.ones(2, 3) / 3),
        ValueError,
        "probabilit",
    ),
    Case(
        "it3.l1_distance:shape",
        lambda: it3.l1_distance(torch.ones(2, 3), torch.ones(3, 3)),
        ValueError,
        "shape",
    ),
    Case(
        "backslash.coded_bits:delta", lambda: bs.coded_bits(np.ones(3), -1.0), ValueError, "delta"
    ),
    Case(
        "backslash.default_rate_params:model",
        lambda: bs.default_rate_params("net"),
        TypeError,
        "model",
    ),
    Case("backslash.dequantize:delta", lambda: bs.dequantize(np.ones(3), NAN), ValueError, "delta"),
    Case(
        "backslash.eg_encode:negative", lambda: bs.eg_encode(np.array([-1])), ValueError, "u must"
    ),
    Case(
        "backslash.eg_encode:block",
        lambda: bs.eg_encode(np.arange(3), block=-1),
        ValueError,
        "block",
    ),
    Case(
        "backslash.eg_decode:short",
        lambda: bs.eg_decode(b"", np.zeros(1, np.uint64), 3, 4, 10),
        ValueError,
        "corrupt",
    ),
    Case(
        "backslash.eg_lengths:negative", lambda: bs.eg_lengths(np.array([-3])), ValueError, "u must"
    ),
    Case("backslash.unzigzag:negative", lambda: bs.unzigzag(np.array([-3])), ValueError, "u must"),
    Case("backslash.zigzag:fractional", lambda: bs.zigzag(np.array([0.5])), ValueError, "q must"),
    Case("backslash.gg_rho:nu", lambda: bs.gg_rho(0.0), ValueError, "nu"),
    Case(
        "cca.core_tokens:group",
        lambda: cca.core_tokens(_q, _q, _q, 0, 1.0),
        ValueError,
        "group_size",
    ),
    Case("cca.reach:length", lambda: cca.reach(-1, 4, 4), ValueError, "length"),
    Case("cca.visible_groups:group", lambda: cca.visible_groups(8, 0, 4), ValueError, "group_size"),
    Case(
        "pan.rerandomize:not a ciphertext",
        lambda: pp.rerandomize(b"x", _keys.public),
        TypeError,
        "Ciphertext",
    ),
    Case("pan.add:not a ciphertext", lambda: pp.add(b"x", b"y"), TypeError, "Ciphertext"),
    Case(
        "pan.decrypt:not a key",
        lambda: pp.decrypt(pp.encrypt(1, _keys.public), "key"),
        TypeError,
        "secret",
    ),
    Case(
        "llmscan.skip_blocks:skip",
        lambda: llmscan.skip_blocks([nn.Linear(2, 2)], torch.tensor([3])),
        ValueError,
        "skip",
    ),
]


def _scan(**kw: Any) -> Any:
    model, tok = core_llm.tiny_llama(layers=2, hidden=16, heads=2)
    return llmscan.LLMScan(core_llm.HFLanguageModel(model, tok), **kw)


CASES += [
    Case(
        "llmscan.LLMScan:token_effect", lambda: _scan(token_effect="x"), ValueError, "token_effect"
    ),
    Case("llmscan.LLMScan:positions", lambda: _scan(positions="x"), ValueError, "positions"),
    Case("llmscan.LLMScan:max_batch", lambda: _scan(max_batch=0), ValueError, "max_batch"),
    Case(
        "llmscan.LLMScan:intervention",
        lambda: _scan(intervention_token="ab"),
        ValueError,
        "intervention_token",
    ),
    Case(
        "llmscan.LLMScan:id",
        lambda: _scan(intervention_token=10**6),
        ValueError,
        "intervention_token",
    ),
    Case("llmscan.LLMScan:empty prompt", lambda: _scan().scan(""), ValueError, "prompt"),
    Case(
        "llmscan.LLMScan:not a string", lambda: _scan().scan(3), (TypeError, ValueError), "prompt"
    ),
    Case(
        "llm.HFLanguageModel:model", lambda: core_llm.HFLanguageModel("m", "t"), TypeError, "model"
    ),
]


# ---------------------------------------------------------------------------- mirror_flow
from icml25 import mirror_flow as mf  # noqa: E402

_A2, _y2 = np.eye(2), np.ones(2)
_u, _w = np.ones(3), np.ones(3)
CASES += [
    Case(
        "mirror.WeightDecaySwitch:optimizer",
        lambda: mf.WeightDecaySwitch("sgd", at_step=1),
        TypeError,
        "optimizer",
    ),
    Case(
        "mirror.WeightDecaySwitch:at_step",
        lambda: mf.WeightDecaySwitch(
            torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1, weight_decay=0.1), at_step=-1
        ),
        ValueError,
        "at_step",
    ),
    Case(
        "mirror.WeightDecaySwitch:none",
        lambda: mf.WeightDecaySwitch(
            torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1, weight_decay=0.1)
        ),
        ValueError,
        "at_step",
    ),
    Case(
        "mirror.balancedness:shapes",
        lambda: mf.balancedness(np.ones((3, 2)), np.ones((3, 4))),
        ValueError,
        "same number of columns",
    ),
    Case(
        "mirror.balancedness_prediction:lr",
        lambda: mf.balancedness_prediction(np.eye(2), -1.0, 0.1, 3),
        ValueError,
        "lr",
    ),
    Case(
        "mirror.balancedness_error:steps",
        lambda: mf.balancedness_error([np.eye(2)], np.eye(2), 0.1, 0.1, [1, 2]),
        ValueError,
        "steps",
    ),
    Case(
        "mirror.balancedness_gd_step:G",
        lambda: mf.balancedness_gd_step(
            np.ones((3, 2)), np.ones((4, 2)), np.ones((2, 2)), 0.1, 0.1
        ),
        ValueError,
        "G",
    ),
    Case("mirror.c_flow:alpha", lambda: mf.c_flow(1.0, -1.0, 1.0), ValueError, "alpha"),
    Case("mirror.c_gd:steps", lambda: mf.c_gd(1.0, 0.1, 0.1, -1), ValueError, "steps"),
    Case(
        "mirror.c_gd_step:lr",
        lambda: mf.c_gd_step(np.ones(2), np.ones(2), NAN, 0.1),
        ValueError,
        "lr",
    ),
    Case("mirror.collapse_time:p", lambda: mf.collapse_time(1.0, 2.0), ValueError, "p"),
    Case("mirror.dual_interval_width:p", lambda: mf.dual_interval_width(1.0, 2.0), ValueError, "p"),
    Case(
        "mirror.implicit_bias_solution:shapes",
        lambda: mf.implicit_bias_solution(_A2, np.ones(3), 1.0),
        ValueError,
        "y",
    ),
    Case(
        "mirror.implicit_bias_solution:c",
        lambda: mf.implicit_bias_solution(_A2, _y2, -1.0),
        ValueError,
        "c",
    ),
    Case(
        "mirror.implicit_bias_solution:max_iter",
        lambda: mf.implicit_bias_solution(_A2, _y2, 1.0, max_iter=0),
        ValueError,
        "max_iter",
    ),
    Case("mirror.legendre:c", lambda: mf.legendre(np.ones(2), 0.0), ValueError, "c"),
    Case(
        "mirror.legendre_grad:nan", lambda: mf.legendre_grad(np.array([NAN]), 1.0), ValueError, "x"
    ),
    Case("mirror.mirror_inverse:c", lambda: mf.mirror_inverse(np.ones(2), -1.0), ValueError, "c"),
    Case("mirror.power_dual:p", lambda: mf.power_dual(_u, _w, 2.0), ValueError, "p"),
    Case(
        "mirror.power_gd:p",
        lambda: mf.power_gd(_A2, _y2, p=0.5, lr=0.1, alpha=0.1, off=[1], steps=2),
        ValueError,
        "p",
    ),
    Case(
        "mirror.power_gd:steps",
        lambda: mf.power_gd(_A2, _y2, p=1.5, lr=0.1, alpha=0.1, off=[1], steps=-1),
        ValueError,
        "steps",
    ),
    Case(
        "mirror.power_gd:lr",
        lambda: mf.power_gd(_A2, _y2, p=1.5, lr=0.0, alpha=0.1, off=[1], steps=2),
        ValueError,
        "lr",
    ),
    Case("mirror.power_invariant:neg", lambda: mf.power_invariant(-_u, _w, 1.5), ValueError, "u"),
    Case(
        "mirror.power_regularizer:shape",
        lambda: mf.power_regularizer(_u, np.ones(2), 4.0),
        ValueError,
        "shape",
    ),
    Case("mirror.power_x:p", lambda: mf.power_x(_u, _w, NAN), ValueError, "p"),
    Case(
        "mirror.predicted_invariant:p",
        lambda: mf.predicted_invariant(1.0, 2.0, 0.1),
        ValueError,
        "p",
    ),
]

# --------------------------------------------------------------------------- signsgd_risk
from icml25 import signsgd_risk as sg  # noqa: E402

_K = np.ones(4)
_t0, _ts = np.ones(4), np.zeros(4)
CASES += [
    Case(
        "signsgd.SignSGD:lr",
        lambda: sg.SignSGD([nn.Parameter(torch.ones(1))], lr=-1.0),
        ValueError,
        "learning rate",
    ),
    Case(
        "signsgd.SignSGD:momentum",
        lambda: sg.SignSGD([nn.Parameter(torch.ones(1))], momentum=1.5),
        ValueError,
        "momentum",
    ),
    Case("signsgd.stationary_risk:d", lambda: sg.stationary_risk(_K, d=-8), ValueError, "d"),
    Case(
        "signsgd.sign_gradient_moments:chunk",
        lambda: sg.sign_gradient_moments(_K, _t0, chunk=0),
        ValueError,
        "chunk",
    ),
    Case(
        "signsgd.sign_gradient_moments:n",
        lambda: sg.sign_gradient_moments(_K, _t0, n_samples=0),
        ValueError,
        "n_samples",
    ),
    Case("signsgd.risk_ode:K", lambda: sg.risk_ode(-_K, _t0, _ts, t_max=1.0), ValueError, "K"),
    Case(
        "signsgd.risk_ode:t_max", lambda: sg.risk_ode(_K, _t0, _ts, t_max=-1.0), ValueError, "t_max"
    ),
    Case(
        "signsgd.risk_ode:theta",
        lambda: sg.risk_ode(_K, np.ones(3), _ts, t_max=1.0),
        ValueError,
        "theta0",
    ),
    Case(
        "signsgd.risk_ode:optimizer",
        lambda: sg.risk_ode(_K, _t0, _ts, optimizer="adam", t_max=1.0),
        ValueError,
        "optimizer",
    ),
    Case(
        "signsgd.simulate:lr",
        lambda: sg.simulate(_K, _t0, _ts, lr=0.0, t_max=1.0),
        ValueError,
        "lr",
    ),
    Case(
        "signsgd.simulate:chunk",
        lambda: sg.simulate(_K, _t0, _ts, chunk=0, t_max=1.0),
        ValueError,
        "chunk",
    ),
    Case(
        "signsgd.simulate:nan theta",
        lambda: sg.simulate(_K, _t0 * NAN, _ts, t_max=1.0),
        ValueError,
        "theta0",
    ),
    Case(
        "signsgd.simulate_adam:beta2",
        lambda: sg.simulate_adam(_K, _t0, _ts, beta2=1.0, t_max=1.0),
        ValueError,
        "beta2",
    ),
    Case(
        "signsgd.adam_ode:beta1",
        lambda: sg.adam_ode(_K, _t0, _ts, beta1=-0.1, t_max=1.0),
        ValueError,
        "beta1",
    ),
    Case(
        "signsgd.adam_coefficients:n_chains",
        lambda: sg.adam_coefficients([1.0], beta1=0.0, beta2=0.5, n_chains=0),
        ValueError,
        "n_chains",
    ),
    Case("signsgd.phi:risk", lambda: sg.phi(-1.0), ValueError, "risk"),
    Case(
        "signsgd.preconditioned_drift:K",
        lambda: sg.preconditioned_drift(np.ones((2, 3))),
        ValueError,
        "K",
    ),
    Case(
        "signsgd.sign_noise_covariance:K",
        lambda: sg.sign_noise_covariance(np.array([[1.0, 2.0], [2.0, 1.0]])),
        ValueError,
        "K",
    ),
    Case("signsgd.GaussianNoise:std", lambda: sg.GaussianNoise(-1.0), ValueError, "std"),
    Case("signsgd.CauchyNoise:gamma", lambda: sg.CauchyNoise(0.0), ValueError, "gamma"),
    Case("signsgd.StudentTNoise:df", lambda: sg.StudentTNoise(0.0), ValueError, "df"),
    Case(
        "signsgd.ScipyNoise:dist", lambda: sg.ScipyNoise("normal"), (TypeError, ValueError), "dist"
    ),
    Case(
        "signsgd.CustomNoise:exp_moment",
        lambda: sg.CustomNoise(3.0),
        (TypeError, ValueError),
        "exp_moment",
    ),
]


# ------------------------------------------------------------------------- pointwise_info
from icml25 import pointwise_info as pw  # noqa: E402

_P = np.full((4, 3), 1 / 3)
_yc = np.array([0, 1, 2, 0])
_conf, _corr = np.linspace(0, 1, 4), np.array([True, False, True, False])


def _fitted_pvi() -> Any:
    X = np.random.default_rng(0).normal(size=(60, 5)).astype(np.float32)
    y = np.arange(60) % 3
    return pw.PVI(epochs=1, null_epochs=1).fit(X, y)


CASES += [
    Case(
        "pw.nll:temperature=0", lambda: pw.nll(_P, _yc, temperature=0.0), ValueError, "temperature"
    ),
    Case(
        "pw.softmax:temperature nan",
        lambda: pw.softmax(_P, temperature=NAN),
        ValueError,
        "temperature",
    ),
    Case("pw.softmax:nan scores", lambda: pw.softmax(_P * NAN), ValueError, "finite"),
    Case(
        "pw.fit_temperature:labels", lambda: pw.fit_temperature(_P, [0, 1, 5, 0]), ValueError, "y"
    ),
    Case("pw.auroc:one class", lambda: pw.auroc(_conf, np.ones(4, bool)), ValueError, ""),
    Case("pw.auroc:len", lambda: pw.auroc(_conf, _corr[:3]), ValueError, ""),
    Case("pw.auroc:nan", lambda: pw.auroc(_conf * NAN, _corr), ValueError, "finite"),
    Case("pw.aupr_error:len", lambda: pw.aupr_error(_conf, _corr[:2]), ValueError, ""),
    Case("pw.fpr_at_95tpr:tpr", lambda: pw.fpr_at_95tpr(_conf, _corr, tpr=1.5), ValueError, "tpr"),
    Case("pw.aurc:empty", lambda: pw.aurc([], []), ValueError, ""),
    Case("pw.eaurc:nan", lambda: pw.eaurc(_conf * NAN, _corr), ValueError, "finite"),
    Case("pw.risk_coverage:len", lambda: pw.risk_coverage(_conf, _corr[:1]), ValueError, ""),
    Case("pw.failure_metrics:len", lambda: pw.failure_metrics(_conf, _corr[:1]), ValueError, ""),
    Case("pw.ece:bins", lambda: pw.ece(_conf, _corr, n_bins=0), ValueError, "n_bins"),
    Case(
        "pw.reliability_diagram:bins",
        lambda: pw.reliability_diagram(_conf, _corr, n_bins=-1),
        ValueError,
        "n_bins",
    ),
    Case("pw.sce:not probs", lambda: pw.sce(_P * 2, _yc), ValueError, "probs"),
    Case("pw.cc_sce:labels", lambda: pw.cc_sce(_P, [0, 1, 2]), ValueError, ""),
    Case("pw.adaptive_sce:bins", lambda: pw.adaptive_sce(_P, _yc, n_bins=0), ValueError, "n_bins"),
    Case("pw.rms_sce:nan", lambda: pw.rms_sce(_P * NAN, _yc), ValueError, ""),
    Case("pw.msp:1-D", lambda: pw.msp(np.ones(3)), ValueError, ""),
    Case("pw.margin:one class", lambda: pw.margin(np.ones((3, 1))), ValueError, ""),
    Case("pw.neg_entropy:nan", lambda: pw.neg_entropy(_P * NAN), ValueError, ""),
    Case("pw.doctor:not probs", lambda: pw.doctor(-_P), ValueError, ""),
    Case(
        "pw.critic_loss:objective",
        lambda: pw.critic_loss(torch.zeros(2, 2), "x"),
        ValueError,
        "objective",
    ),
    Case(
        "pw.predict_logits:batch_size",
        lambda: pw.predict_logits(nn.Linear(3, 2), np.zeros((4, 3)), batch_size=0),
        ValueError,
        "batch_size",
    ),
    Case(
        "pw.FeatureExtractor:layer",
        lambda: pw.FeatureExtractor(nn.Sequential(nn.Linear(3, 2)), "nope"),
        ValueError,
        "layer",
    ),
    Case(
        "pw.FeatureExtractor:batch_size",
        lambda: pw.FeatureExtractor(nn.Sequential(nn.Linear(3, 2)), "0", batch_size=0),
        ValueError,
        "batch_size",
    ),
    Case("pw.SeparableCritic:hidden", lambda: pw.SeparableCritic(3, 2, 0, 4), ValueError, "hidden"),
    Case("pw.ConcatCritic:classes", lambda: pw.ConcatCritic(3, 1, 4), ValueError, "num_classes"),
    Case(
        "pw.PVI:epochs",
        lambda: pw.PVI(epochs=0).fit(np.zeros((6, 2)), [0, 1] * 3),
        ValueError,
        "epochs",
    ),
    Case(
        "pw.PVI:batch_size",
        lambda: pw.PVI(batch_size=0).fit(np.zeros((6, 2)), [0, 1] * 3),
        ValueError,
        "batch_size",
    ),
    Case(
        "pw.PVI:fractional labels",
        lambda: pw.PVI().fit(np.zeros((6, 2)), [0.5] * 6),
        ValueError,
        "y",
    ),
    Case(
        "pw.PVI:nan X", lambda: pw.PVI().fit(np.full((6, 2), NAN), [0, 1] * 3), ValueError, "finite"
    ),
    Case(
        "pw.PVI:width",
        lambda: _fitted_pvi().predict_proba(np.zeros((2, 7), np.float32)),
        ValueError,
        "samples of shape (5,)",
    ),
    Case("pw.PVI:unfitted", lambda: pw.PVI().predict_proba(np.zeros((2, 5))), Exception, "fit"),
    Case(
        "pw.PMI:critic",
        lambda: pw.PMI(critic="x").fit(np.zeros((6, 2)), [0, 1] * 3),
        ValueError,
        "critic",
    ),
    Case(
        "pw.PMI:batch_size",
        lambda: pw.PMI(batch_size=1).fit(np.zeros((6, 2)), [0, 1] * 3),
        ValueError,
        "batch_size",
    ),
    Case(
        "pw.PSI:n_bins",
        lambda: pw.PSI(n_bins=0).fit(np.zeros((6, 2)), [0, 1] * 3),
        ValueError,
        "n_bins",
    ),
    Case(
        "pw.PSI:n_slices",
        lambda: pw.PSI(n_slices=0).fit(np.zeros((6, 2)), [0, 1] * 3),
        ValueError,
        "n_slices",
    ),
    Case("pw.PSI:one class", lambda: pw.PSI().fit(np.zeros((6, 2)), [0] * 6), ValueError, "class"),
]


CASES += [
    Case(
        "fedgvi.NatGaussian:shapes",
        lambda: fedgvi.NatGaussian(np.zeros(2), np.ones(3)),
        ValueError,
        "",
    ),
    Case(
        "fedgvi.NatGaussian:nan",
        lambda: fedgvi.NatGaussian(np.zeros(2), np.full(2, NAN)),
        ValueError,
        "",
    ),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_a_clear_error(c: Case) -> None:
    with pytest.raises(c.exc, match=None) as info:
        c.call()
    assert c.words.lower() in str(info.value).lower(), str(info.value)


NOT_ENTRY_POINTS = {
    # results and records the library returns, constants, protocols and a module
    "CompressionStats",
    "ConstrainedCut",
    "ClientUpdate",
    "FedGVIResult",
    "STAT_NAMES",
    "ScanResult",
    "PowerTrajectory",
    "Estimate",
    "KeyPair",
    "FedCLUPResult",
    "CONFIDENCE_SCORES",
    "AdamCoefficients",
    "AdamCurve",
    "LabelNoise",
    "RiskCurve",
    "Simulation",
    "effects",
    "DecryptionError",
    # an error and a warning class (raised, not called): BackSlash's file refusals are tested
    # in tests/backslash/test_file_safety.py, its collapse warning in test_rate_collapse.py
    "BackSlashFileError",
    "RateCollapseWarning",
}


def test_the_table_covers_every_public_entry_point() -> None:
    """Every name a method exports is called in a row above (or in its own bad-input file),
    or is a result type/constant."""
    import importlib
    import re
    from pathlib import Path

    from icml25.methods import load_all

    # This table, plus a method's own ``tests/<method>/test_bad_input*.py`` where it keeps them.
    here = Path(__file__).parent
    source = "\n".join(
        f.read_text() for f in [Path(__file__), *sorted(here.glob("*/test_bad_input*.py"))]
    )
    # A method's own file lists its result types and constants on a line
    # ``# not entry points: Name, Other``.
    exempt = set(NOT_ENTRY_POINTS)
    for line in re.findall(r"#\s*not entry points:(.*)", source):
        exempt.update(n.strip() for n in line.split(",") if n.strip())
    methods = load_all()
    assert len(methods) >= 11
    missing = {}
    for slug in methods:
        module = importlib.import_module(f"icml25.{slug}")
        names = [
            n
            for n in module.__all__
            if n not in exempt and not re.search(rf"\b{re.escape(n)}[.(]", source)
        ]
        if names:
            missing[slug] = names
    assert not missing, missing
