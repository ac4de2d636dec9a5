"""The three pointwise information estimators, post hoc on a trained classifier.

Each estimator follows scikit-learn's shape: ``__init__`` stores parameters, ``fit(X, y)``
returns ``self``, ``score_samples(X)`` returns an ``(n, K)`` array of scores *in bits*, one per
candidate class ``k``. The score of the classifier's predicted class ``y_hat`` is its confidence
(:meth:`confidence`); ``predict_proba`` turns the scores into probabilities the way the paper
calibrates them, ``p_k = softmax_k(s_k(x))``. ``X`` may be a NumPy array or a tensor.

- :class:`PVI` -- pointwise V-information (Ethayarajh et al., 2022),
  ``pvi(x -> k) = -log2 g[0](k) + log2 g'[x](k)``. ``g[0]`` is the *null model*: the same
  architecture trained on all-zero inputs with the true labels (it learns the label marginal),
  or the exact class priors. ``g'`` is a separately trained model of the same architecture (the
  paper's choice), or any trained model you pass (e.g. the classifier itself). Optionally both
  are temperature-scaled on validation data (the official code's calibrated variant).
- :class:`PMI` -- pointwise mutual information ``log p(x, k) / (p(x) p(k))`` between features
  (the penultimate layer by default, see :class:`FeatureExtractor`) and the one-hot label, from
  a neural critic trained with one of three variational objectives.
- :class:`PSI` -- pointwise sliced mutual information: the mean over random unit directions
  ``theta`` of the PMI between ``theta^T x`` and ``k``, from per-class histograms (bin masses).

References
----------
Wongso, Ghosh & Motani, "Pointwise Information Measures as Confidence Estimators in Deep Neural
Networks: A Comparative Study", ICML 2025. Ethayarajh, Choi & Swayamdipta, "Understanding
Dataset Difficulty with V-Usable Information", ICML 2022. Goldfeld & Greenewald, "Sliced
Mutual Information", NeurIPS 2021.

Long by design: PVI, PMI and PSI share the feature extraction, device handling and scikit-learn
plumbing of one base class (_PointwiseScores); they are kept together so their differences read
side by side.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import nn
from torch.nn import functional as F

from icml25.core import validate as V
from icml25.core.metrics import check_labels
from icml25.core.models import MLP, TrainConfig, train
from icml25.core.validate import module_device
from icml25.pointwise_info.confidence import fit_temperature, softmax

LN2 = math.log(2.0)


# ------------------------------------------------------------------------------------- helpers


def as_tensor(X: Any, name: str = "X") -> torch.Tensor:
    """``X`` as a float32 tensor with at least one sample, all finite (clear error otherwise)."""
    if isinstance(X, torch.Tensor):
        t = X.detach()
    else:
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be an array of numbers, got dtype {arr.dtype}")
        t = torch.as_tensor(arr)
    if t.dim() < 2 or t.shape[0] == 0:
        raise ValueError(f"{name} must be a (n_samples, ...) array, got shape {tuple(t.shape)}")
    if not (t.dtype.is_floating_point or t.dtype in (torch.uint8, torch.int32, torch.int64)):
        raise TypeError(f"{name} must be numeric, got dtype {t.dtype}")
    t = t.to(torch.float32)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite, got {int((~torch.isfinite(t)).sum())} NaN/inf")
    return t


def _module(name: str, value: Any) -> nn.Module:
    if not isinstance(value, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    return value


def _callable_or_none(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable (or None), got {type(value).__name__}")


def _seed(value: Any) -> int:
    return V.integer("random_state", value, low=0)


def _num_classes(value: Any) -> int | None:
    return None if value is None else V.integer("num_classes", value, low=2)


def _apply(model: nn.Module, x: torch.Tensor, name: str, what: str = "model") -> torch.Tensor:
    """``model(x)``, with a clear error when the model cannot take ``x`` (wrong feature count,
    wrong image shape)."""
    try:
        out: torch.Tensor = model(x.to(module_device(model)))
    except RuntimeError as exc:
        raise ValueError(
            f"{what} cannot be applied to {name} of shape {tuple(x.shape)} (samples of shape "
            f"{tuple(x.shape[1:])}); does {name} have the features the model was built for? "
            f"({exc})"
        ) from exc
    return out


def _labels(y: Any, n: int, num_classes: int | None) -> tuple[np.ndarray, int]:
    arr = np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"y must be a non-empty 1-D array of class indices, got {arr.shape}")
    if num_classes is None:
        if arr.dtype.kind not in "iub":
            raise ValueError(f"y must hold integer class indices, got dtype {arr.dtype}")
        num_classes = max(int(arr.max()) + 1, 2)
    return check_labels(arr, n, num_classes), num_classes


def predict_logits(model: nn.Module, X: Any, batch_size: int = 1024) -> np.ndarray:
    """``model(X)`` in eval mode and in batches, as a float64 NumPy array (mode restored)."""
    return _logits(model, X, batch_size, "model")


@torch.no_grad()
def _logits(model: nn.Module, X: Any, batch_size: int, what: str) -> np.ndarray:
    _module(what, model)
    batch_size = V.integer("batch_size", batch_size, low=1)
    x = as_tensor(X)
    was_training = model.training
    model.eval()
    try:
        out = torch.cat(
            [_apply(model, x[i : i + batch_size], "X", what) for i in range(0, len(x), batch_size)]
        )
    finally:
        model.train(was_training)
    if out.dim() != 2:
        raise ValueError(f"{what} must return (batch, n_classes) logits, got {tuple(out.shape)}")
    return out.double().cpu().numpy()


@torch.no_grad()
def null_model_logits(model: nn.Module, zeros: torch.Tensor) -> np.ndarray:
    """The (constant) logits of a model trained on all-zero inputs, read as it was trained.

    Dropout is off, but BatchNorm layers use the statistics of the zero batch, as in training:
    their running statistics are degenerate for a constant input (its variance is 0, and the
    running mean lags the conv bias that Adam keeps moving), and in eval mode they turn the
    learnt label marginal into a near one-hot vector. The model itself is not modified.
    """
    probe = copy.deepcopy(model).eval()
    for m in probe.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.train()
    out = probe(zeros.to(module_device(probe))).double().mean(dim=0)
    return out.cpu().numpy()


class FeatureExtractor:
    """Callable that returns a submodule's output (flattened) when ``model`` runs on ``X``.

    ``FeatureExtractor(cnn, "act")(X)`` gives the penultimate activations of
    :class:`~icml25.core.models.SmallCNN`; pass it as ``feature_extractor=`` to :class:`PMI` or
    :class:`PSI`. The model runs in eval mode, in batches, without gradients.
    """

    def __init__(self, model: nn.Module, layer: str, *, batch_size: int = 1024) -> None:
        names = dict(_module("model", model).named_modules())
        if layer not in names:
            shown = ", ".join(n for n in names if n)[:300]
            raise ValueError(
                f"layer must name a submodule of model (one of: {shown}), got {layer!r}"
            )
        self.model, self.layer = model, layer
        self.batch_size = V.integer("batch_size", batch_size, low=1)
        self._module = names[layer]

    @torch.no_grad()
    def __call__(self, X: Any) -> np.ndarray:
        x = as_tensor(X)
        grabbed: list[torch.Tensor] = []
        handle = self._module.register_forward_hook(
            lambda _m, _i, out: grabbed.append(out.detach().flatten(1).cpu())
        )
        was_training = self.model.training
        self.model.eval()
        try:
            for i in range(0, len(x), self.batch_size):
                _apply(self.model, x[i : i + self.batch_size], "X")
        finally:
            handle.remove()
            self.model.train(was_training)
        if len(grabbed) != math.ceil(len(x) / self.batch_size):
            raise RuntimeError(f"layer {self.layer!r} must run exactly once per forward pass")
        return torch.cat(grabbed).double().numpy()


def _check_positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_positive(name: str, value: Any) -> None:
    if not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
        raise ValueError(f"{name} must be a positive number, got {value!r}")


class _PointwiseScores(BaseEstimator):
    """``predict_proba`` and ``confidence`` from ``score_samples``; scikit-learn's estimator
    conventions (``get_params`` / ``set_params``, ``clone``, the parameter ``repr``) from
    ``BaseEstimator``: every ``__init__`` argument is stored unchanged under its own name."""

    n_classes_: int
    SCALES = ("softmax", "raw")

    def score_samples(self, X: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fitted(self) -> None:
        if not hasattr(self, "n_classes_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit(X, y) first")

    def predict_proba(self, X: Any, *, base: float = math.e) -> np.ndarray:
        """``base ** s_k(x) / sum_j base ** s_j(x)`` with ``s`` in bits.

        ``base=e`` (the default) is the authors' code: NumPy's ``exp`` applied to the scores in
        bits, ``softmax_k(s_k(x))``. For :class:`PVI` with ``g'`` the classifier and exact
        uniform priors it is temperature scaling of the logits with ``T = ln 2``: it sharpens
        ``g'`` by ``1 / ln 2``. ``base=2`` undoes the bits: for PVI it gives
        ``g'(k|x) / g0(k)`` normalised over ``k`` (``g'`` itself under a uniform null).
        """
        return softmax(self.score_samples(X), base=base)

    def confidence(
        self, X: Any, y_pred: Any, *, scale: str = "softmax", base: float = math.e
    ) -> np.ndarray:
        """Confidence in the predicted class ``y_pred`` (never the true label) per sample.

        ``scale="softmax"`` (default, as the authors' failure-prediction and
        selective-prediction notebooks do): ``softmax_k(s_k(x))[y_pred]``, the probability
        :meth:`predict_proba` gives the prediction. ``scale="raw"``: the score ``s_{y_pred}(x)``
        in bits (a diagnostic). For PVI the raw score adds the per-class constant
        ``-log2 g0(y_pred)`` of the null model, which shifts every sample predicted as a class
        by the same amount, so the raw ranking mixes confidence with the prior of the predicted
        class; in the softmax the offsets of all classes enter each sample's normalisation.
        ``base`` is the softmax's base (see :meth:`predict_proba`).
        """
        if scale not in self.SCALES:
            raise ValueError(f"scale must be one of {self.SCALES}, got {scale!r}")
        V.number("base", base, low=1.0, low_open=True)
        s = self.score_samples(X)
        pred = check_labels(y_pred, len(s), s.shape[1], name="y_pred")
        rows = np.arange(len(s))
        return s[rows, pred] if scale == "raw" else softmax(s, base=base)[rows, pred]


def _features(extractor: Callable[[Any], Any] | None, X: Any) -> torch.Tensor:
    return as_tensor(X if extractor is None else extractor(X), name="features")


# ----------------------------------------------------------------------------------------- PVI


class PVI(_PointwiseScores):
    """Pointwise V-information ``pvi(x -> k) = -log2 g[0](k) + log2 g'[x](k)`` in bits.

    Parameters
    ----------
    model_fn
        Builds a fresh, untrained model of the classifier's architecture (``X`` -> logits). Used
        for ``g'`` when ``g_prime="train"`` and for the null model when ``null="train"``.
        Default: an :class:`~icml25.core.models.MLP` with ``hidden`` units (for feature inputs).
    g_prime
        ``"train"`` (default, the paper's choice): train ``model_fn()`` on ``(X, y)``. Or a
        trained ``nn.Module`` returning logits, used as is (e.g. the classifier itself).
    null
        ``"train"`` (default, the paper's): train ``model_fn()`` (or a re-initialised copy of
        ``g_prime``) on all-zero inputs with the true labels, for at most ``null_epochs``
        epochs, stopping when the training loss has not improved by ``null_min_delta`` for
        ``null_patience`` epochs and keeping the best epoch's weights (the official code's
        Keras early stopping). ``"prior"``: the empirical class frequencies of ``y``. An
        array of ``K`` class probabilities. Or a null model already trained on zeros.
    calibrate
        Temperature-scale ``g'`` and the null model on ``(X_val, y_val)`` (passed to ``fit``).
    epochs, batch_size, lr
        Adam training of ``g'`` and the null model.
    random_state
        Seeds model initialisation and shuffling.
    device
        Where ``g'`` and the null model train and score (``"cpu"``, ``"cuda"``,
        ``"cuda:1"``, a ``torch.device``); a ``g_prime`` or null model you pass is used where it
        lives. Scores come back as NumPy arrays either way.
    progress
        Called with one line per training epoch (``print`` shows them); ``None``: silent.
    """

    def __init__(
        self,
        model_fn: Callable[[], nn.Module] | None = None,
        *,
        g_prime: str | nn.Module = "train",
        null: str | Any = "train",
        calibrate: bool = False,
        epochs: int = 10,
        null_epochs: int = 50,
        null_patience: int = 5,
        null_min_delta: float = 1e-3,
        batch_size: int = 128,
        lr: float = 1e-3,
        hidden: tuple[int, ...] = (256,),
        random_state: int = 0,
        device: str | torch.device = "cpu",
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.model_fn, self.g_prime, self.null, self.calibrate = model_fn, g_prime, null, calibrate
        self.device = device
        self.epochs, self.null_epochs, self.batch_size, self.lr = (
            epochs,
            null_epochs,
            batch_size,
            lr,
        )
        self.null_patience, self.null_min_delta = null_patience, null_min_delta
        self.hidden, self.random_state, self.progress = hidden, random_state, progress

    _null_shortcut = True  # forward one copy of the zero batch (tests compare with False)

    def _validate(self) -> None:
        if not (self.g_prime == "train" or isinstance(self.g_prime, nn.Module)):
            raise ValueError(
                f"g_prime must be 'train' or a trained nn.Module, got {self.g_prime!r}"
            )
        if isinstance(self.null, str) and self.null not in ("train", "prior"):
            raise ValueError(
                f"null must be 'train', 'prior', K class priors or a trained null model, got "
                f"{self.null!r}"
            )
        for name in ("epochs", "null_epochs", "null_patience"):
            _check_positive_int(name, getattr(self, name))
        V.number("null_min_delta", self.null_min_delta, low=0.0)
        if not isinstance(self.calibrate, (bool, np.bool_)):
            raise ValueError(f"calibrate must be True or False, got {self.calibrate!r}")
        _seed(self.random_state)
        self.device_ = V.device("device", self.device)
        _callable_or_none("progress", self.progress)
        _check_positive_int("batch_size", self.batch_size)
        _check_positive("lr", self.lr)
        hidden = self.hidden
        if not (
            isinstance(hidden, (tuple, list))
            and hidden
            and all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden)
        ):
            raise ValueError(
                f"hidden must be a non-empty sequence of positive integers, got {hidden!r}"
            )
        if self.model_fn is not None and not callable(self.model_fn):
            raise TypeError(f"model_fn must build a fresh nn.Module, got {self.model_fn!r}")

    def _new_model(self, x: torch.Tensor, k: int) -> nn.Module:
        if self.model_fn is not None:
            built = self.model_fn()
            if not isinstance(built, nn.Module):
                raise TypeError(
                    f"model_fn must return a fresh nn.Module, got {type(built).__name__}"
                )
            return built.to(self.device_)
        if isinstance(self.g_prime, nn.Module):
            fresh = copy.deepcopy(self.g_prime)
            for m in fresh.modules():
                reset = getattr(m, "reset_parameters", None)
                if callable(reset):
                    reset()
            return fresh.to(self.device_)
        if x.dim() != 2:
            raise ValueError(
                f"X has shape {tuple(x.shape)}: pass model_fn= to build the architecture "
                "(the default MLP is for (n_samples, n_features) inputs)"
            )
        return MLP(x.shape[1], self.hidden, k).to(self.device_)

    def _train(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
        opt = torch.optim.Adam(model.parameters(), lr=self.lr)
        say = self.progress
        train(
            model,
            opt,
            x,
            y,
            TrainConfig(epochs=self.epochs, batch_size=self.batch_size, seed=self.random_state),
            progress=None if say is None else lambda e, loss: say(f"PVI g' epoch {e}: {loss:.4f}"),
        )
        model.eval()

    def _train_null(self, model: nn.Module, zeros: torch.Tensor, y: torch.Tensor) -> None:
        """Adam on zero inputs, one epoch at a time, with the official early stopping.

        Every sample of a batch of zeros has the same output (BatchNorm's batch statistics of
        identical samples are those of one sample), so unless the model has dropout the loss of
        a batch is the cross-entropy of that one output against the batch's labels: two zero
        samples are forwarded instead of the whole batch. The loss as a function of the weights
        is the same, so are its gradients (up to rounding); only the time changes.
        """
        opt = torch.optim.Adam(model.parameters(), lr=self.lr)
        best, best_state, waited = math.inf, copy.deepcopy(model.state_dict()), 0
        self.null_losses_: list[float] = []
        stochastic = any(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules())

        def one_output(m: nn.Module, xb: tuple[torch.Tensor, ...], yb: torch.Tensor) -> Any:
            out = m(xb[0][:2])[:1]
            return F.cross_entropy(out.expand(len(yb), -1), yb)

        for epoch in range(self.null_epochs):
            seed = self.random_state * 1000 + epoch
            cfg = TrainConfig(epochs=1, batch_size=self.batch_size, seed=seed)
            shortcut = self._null_shortcut and not stochastic and len(zeros) >= 2
            objective = one_output if shortcut else None
            loss = train(model, opt, zeros, y, cfg, objective=objective)[0]
            self.null_losses_.append(loss)
            if self.progress is not None:
                self.progress(f"PVI null model epoch {epoch + 1}: {loss:.4f}")
            if loss < best - self.null_min_delta:
                best, best_state, waited = loss, copy.deepcopy(model.state_dict()), 0
            else:
                waited += 1
                if waited >= self.null_patience:
                    break
        model.load_state_dict(best_state)
        model.eval()

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> PVI:
        """Train (or take) ``g'`` and the null model; fit temperatures if ``calibrate``."""
        self._validate()
        x = as_tensor(X)
        k_hint = None
        if isinstance(self.g_prime, nn.Module):
            k_hint = _logits(self.g_prime, x[:1], 1, "g_prime").shape[1]
        labels, k = _labels(y, len(x), k_hint)
        yt = torch.as_tensor(labels)
        torch.manual_seed(self.random_state)
        if isinstance(self.g_prime, nn.Module):
            g = self.g_prime
        else:
            g = self._new_model(x, k)
            _logits(g, x[:2], 2, "the model built by model_fn")  # fails here, clearly
            dev = module_device(g)
            self._train(g, x.to(dev), yt.to(dev))
        out_k = predict_logits(g, x[:1]).shape[1]
        if out_k != k:
            raise ValueError(f"g' returns {out_k} logits but y has {k} classes")
        self.g_prime_, self.n_classes_ = g, k
        self.sample_shape_ = tuple(x.shape[1:])
        self.null_model_: nn.Module | None = None
        zeros = torch.zeros_like(x[: min(len(x), 256)])
        if isinstance(self.null, nn.Module):
            self.null_model_ = self.null
            try:
                null_logits = null_model_logits(self.null, zeros)
            except RuntimeError as exc:
                raise ValueError(
                    f"the null model cannot be applied to zero inputs shaped like X "
                    f"{tuple(x.shape[1:])} ({exc})"
                ) from exc
        elif isinstance(self.null, str) and self.null == "train":
            n0 = self._new_model(x, k)
            dev = module_device(n0)
            self._train_null(n0, torch.zeros_like(x, device=dev), yt.to(dev))
            self.null_model_ = n0
            null_logits = null_model_logits(n0, zeros)
        else:
            if isinstance(self.null, str):  # "prior"
                priors = np.bincount(labels, minlength=k) / len(labels)
            else:
                try:
                    priors = np.asarray(self.null, dtype=np.float64)
                except (TypeError, ValueError) as exc:
                    raise ValueError(
                        f"null priors must be {k} probabilities summing to 1, got {self.null!r}"
                    ) from exc
                if (
                    priors.shape != (k,)
                    or not np.all(np.isfinite(priors))
                    or priors.min() < 0
                    or abs(priors.sum() - 1) > 1e-6
                ):
                    raise ValueError(
                        f"null priors must be {k} finite probabilities summing to 1, got "
                        f"{self.null!r}"
                    )
            if priors.min() <= 0:
                raise ValueError("null priors must be > 0 for every class (a class has none)")
            null_logits = np.log(priors)
        if np.shape(null_logits) != (k,):
            raise ValueError(f"the null model returns {np.shape(null_logits)} logits, expected {k}")
        self.temperature_, self.null_temperature_ = 1.0, 1.0
        if self.calibrate:
            if X_val is None or y_val is None:
                raise ValueError("calibrate=True needs X_val and y_val passed to fit")
            xv = as_tensor(X_val, "X_val")
            if tuple(xv.shape[1:]) != tuple(x.shape[1:]):
                raise ValueError(
                    f"X_val must have samples of shape {tuple(x.shape[1:])} (as X), got "
                    f"{tuple(xv.shape[1:])}"
                )
            yv, _ = _labels(y_val, len(xv), k)
            self.temperature_ = fit_temperature(predict_logits(g, xv), yv)
            if self.null_model_ is not None:
                self.null_temperature_ = fit_temperature(np.tile(null_logits, (len(yv), 1)), yv)
        z0 = null_logits / self.null_temperature_
        self.null_log2_ = (z0 - np.logaddexp.reduce(z0)) / LN2
        return self

    def score_samples(self, X: Any) -> np.ndarray:
        """``(n, K)`` PVI in bits for every candidate class."""
        self._fitted()
        x = as_tensor(X)
        if tuple(x.shape[1:]) != self.sample_shape_:
            raise ValueError(
                f"X must have samples of shape {self.sample_shape_} (as in fit), got "
                f"{tuple(x.shape[1:])}"
            )
        z = predict_logits(self.g_prime_, x) / self.temperature_
        log2_g = (z - np.logaddexp.reduce(z, axis=1, keepdims=True)) / LN2
        return log2_g - self.null_log2_


# ----------------------------------------------------------------------------------------- PMI


def _check_critic(dim_x: int, num_classes: int, hidden: int, embed_dim: int) -> None:
    V.integer("dim_x", dim_x, low=1)
    V.integer("num_classes", num_classes, low=2)
    V.integer("hidden", hidden, low=1)
    V.integer("embed_dim", embed_dim, low=1)


class SeparableCritic(nn.Module):
    """``f(x, y) = g(x)^T h(y)``; ``g``, ``h``: one-hidden-layer ReLU MLPs."""

    def __init__(self, dim_x: int, num_classes: int, hidden: int, embed_dim: int) -> None:
        super().__init__()
        _check_critic(dim_x, num_classes, hidden, embed_dim)
        self.dim_x, self.num_classes = int(dim_x), int(num_classes)
        self.g = MLP(dim_x, (hidden,), embed_dim)
        self.h = MLP(num_classes, (hidden,), embed_dim)

    def forward(self, x: torch.Tensor, y_onehot: torch.Tensor) -> torch.Tensor:
        """``(len(x), len(y))`` scores ``f(x_i, y_j)``."""
        _check_pairs(x, y_onehot, self.dim_x, self.num_classes)
        return self.g(x) @ self.h(y_onehot).T


class ConcatCritic(nn.Module):
    """``f(x, y) = MLP([x, y])`` on every pair."""

    def __init__(self, dim_x: int, num_classes: int, hidden: int) -> None:
        super().__init__()
        _check_critic(dim_x, num_classes, hidden, 1)
        self.dim_x, self.num_classes = int(dim_x), int(num_classes)
        self.f = MLP(dim_x + num_classes, (hidden,), 1)

    def forward(self, x: torch.Tensor, y_onehot: torch.Tensor) -> torch.Tensor:
        """``(len(x), len(y))`` scores ``f(x_i, y_j)``."""
        _check_pairs(x, y_onehot, self.dim_x, self.num_classes)
        nx, ny = len(x), len(y_onehot)
        pairs = torch.cat(
            [x[:, None, :].expand(nx, ny, -1), y_onehot[None, :, :].expand(nx, ny, -1)], dim=2
        )
        return self.f(pairs.reshape(nx * ny, -1)).reshape(nx, ny)


def _check_pairs(x: Any, y_onehot: Any, dim_x: int, num_classes: int) -> None:
    for name, t, width in (("x", x, dim_x), ("y_onehot", y_onehot, num_classes)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2 or t.shape[1] != width:
            raise ValueError(f"{name} must have shape (n, {width}), got {tuple(t.shape)}")


def _offdiag_mean(m: torch.Tensor) -> torch.Tensor:
    b = m.shape[0]
    return (m.sum() - m.diagonal().sum()) / (b * (b - 1))


def critic_loss(scores: torch.Tensor, objective: str) -> torch.Tensor:
    """Loss (to minimise) of a ``(B, B)`` score matrix whose diagonal holds the joint pairs.

    - ``probabilistic_classifier``: binary cross-entropy, diagonal = 1, off-diagonal = 0;
      optimum ``sigmoid(s) / (1 - sigmoid(s)) = p / ((B - 1) q)``.
    - ``density_ratio``: least-squares density-ratio fitting, ``-(E_p[s] - E_q[s^2] / 2)``;
      optimum ``s = p / q``.
    - ``js``: the Jensen-Shannon f-GAN bound, ``E_p[softplus(-s)] + E_q[softplus(s)]``;
      optimum ``s = log p / q``.
    """
    if not isinstance(scores, torch.Tensor):
        raise TypeError(f"scores must be a torch.Tensor, got {type(scores).__name__}")
    if scores.dim() != 2 or scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
        raise ValueError(f"scores must be a (B, B) matrix with B >= 2, got {tuple(scores.shape)}")
    diag = scores.diagonal()
    if objective == "probabilistic_classifier":
        eye = torch.eye(len(scores), dtype=scores.dtype)
        return F.binary_cross_entropy_with_logits(scores, eye)
    if objective == "density_ratio":
        return -(diag.mean() - 0.5 * _offdiag_mean(scores**2))
    if objective == "js":
        return F.softplus(-diag).mean() + _offdiag_mean(F.softplus(scores))
    raise ValueError(f"objective must be one of {PMI.OBJECTIVES}, got {objective!r}")


class PMI(_PointwiseScores):
    """Pointwise mutual information ``log2 p(x, k) / (p(x) p(k))`` from a neural critic.

    The critic is trained on ``(features(X), one_hot(y))``: in a batch of ``B`` pairs, the ``B``
    matched pairs are samples of the joint and the ``B (B - 1)`` mismatched ones of the product
    of marginals. The PMI read from a trained critic score ``s`` is
    ``log((B - 1) sigmoid(s) / (1 - sigmoid(s)))`` (probabilistic classifier, ``B`` the training
    batch size), ``log max(s, 1e-4)`` (density-ratio fitting) or ``s`` (JS), in bits.

    Parameters
    ----------
    critic
        ``"separable"`` (default) or ``"concat"``.
    objective
        ``"probabilistic_classifier"`` (default), ``"density_ratio"`` or ``"js"``.
    hidden, embed_dim
        Width of the critic MLPs' hidden layer (512) and of the separable embedding (128).
    epochs, batch_size, lr
        Adam training of the critic.
    feature_extractor
        Maps ``X`` to features (e.g. :class:`FeatureExtractor`); ``None`` uses ``X`` itself.
    device
        Where the critic trains and scores (``"cpu"``, ``"cuda"``, a ``torch.device``).
    progress
        Called with one line per training epoch (``print`` shows them); ``None``: silent.
    """

    CRITICS = ("separable", "concat")
    OBJECTIVES = ("probabilistic_classifier", "density_ratio", "js")

    def __init__(
        self,
        *,
        critic: str = "separable",
        objective: str = "probabilistic_classifier",
        hidden: int = 512,
        embed_dim: int = 128,
        epochs: int = 50,
        batch_size: int = 128,
        lr: float = 1e-3,
        feature_extractor: Callable[[Any], Any] | None = None,
        num_classes: int | None = None,
        random_state: int = 0,
        device: str | torch.device = "cpu",
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.device = device
        self.critic, self.objective, self.hidden, self.embed_dim = (
            critic,
            objective,
            hidden,
            embed_dim,
        )
        self.epochs, self.batch_size, self.lr = epochs, batch_size, lr
        self.feature_extractor, self.num_classes = feature_extractor, num_classes
        self.random_state, self.progress = random_state, progress

    def fit(self, X: Any, y: Any) -> PMI:
        """Train the critic on features of ``X`` with the true labels ``y``."""
        if self.critic not in self.CRITICS:
            raise ValueError(f"critic must be one of {self.CRITICS}, got {self.critic!r}")
        if self.objective not in self.OBJECTIVES:
            raise ValueError(f"objective must be one of {self.OBJECTIVES}, got {self.objective!r}")
        for name in ("hidden", "embed_dim", "epochs"):
            _check_positive_int(name, getattr(self, name))
        _check_positive_int("batch_size", self.batch_size)
        if self.batch_size < 2:
            raise ValueError(
                f"batch_size must be >= 2 (pairs need negatives), got {self.batch_size}"
            )
        _check_positive("lr", self.lr)
        _callable_or_none("feature_extractor", self.feature_extractor)
        _callable_or_none("progress", self.progress)
        seed = _seed(self.random_state)
        dev = self.device_ = V.device("device", self.device)
        feats = _features(self.feature_extractor, X)
        if feats.dim() != 2:
            raise ValueError(f"features must be 2-D (n, d), got shape {tuple(feats.shape)}")
        labels, k = _labels(y, len(feats), _num_classes(self.num_classes))
        if len(feats) < 2:
            raise ValueError("PMI needs at least 2 samples")
        torch.manual_seed(seed)
        net: nn.Module = (
            SeparableCritic(feats.shape[1], k, self.hidden, self.embed_dim)
            if self.critic == "separable"
            else ConcatCritic(feats.shape[1], k, self.hidden)
        ).to(dev)
        onehot = F.one_hot(torch.as_tensor(labels), k).float().to(dev)
        objective = self.objective

        def loss(model: nn.Module, xb: tuple[torch.Tensor, ...], yb: torch.Tensor) -> torch.Tensor:
            if len(yb) < 2:  # a final batch of one has no negative pair
                return model(xb[0], yb).sum() * 0.0
            return critic_loss(model(xb[0], yb), objective)

        say = self.progress
        train(
            net,
            torch.optim.Adam(net.parameters(), lr=self.lr),
            feats.to(dev),
            onehot,
            TrainConfig(epochs=self.epochs, batch_size=self.batch_size, seed=self.random_state),
            objective=loss,
            progress=None if say is None else lambda e, v: say(f"PMI critic epoch {e}: {v:.4f}"),
        )
        net.eval()
        self.critic_, self.n_classes_ = net, k
        self.n_features_ = int(feats.shape[1])
        self.train_batch_size_ = min(self.batch_size, len(feats))
        return self

    @torch.no_grad()
    def score_samples(self, X: Any) -> np.ndarray:
        """``(n, K)`` PMI in bits for every candidate class."""
        self._fitted()
        feats = _features(self.feature_extractor, X)
        if feats.dim() != 2 or feats.shape[1] != self.n_features_:
            raise ValueError(
                f"features must be (n, {self.n_features_}) like the fitted ones, got "
                f"{tuple(feats.shape)}"
            )
        dev = module_device(self.critic_)
        feats, eye = feats.to(dev), torch.eye(self.n_classes_, device=dev)
        s = torch.cat([self.critic_(feats[i : i + 4096], eye) for i in range(0, len(feats), 4096)])
        s = s.double().cpu()
        if self.objective == "probabilistic_classifier":
            nats = math.log(self.train_batch_size_ - 1) + s
        elif self.objective == "density_ratio":
            nats = torch.log(torch.clamp(s, min=1e-4))
        else:
            nats = s
        return (nats / LN2).numpy()


# ----------------------------------------------------------------------------------------- PSI


class PSI(_PointwiseScores):
    """Pointwise sliced mutual information with per-class histograms, in bits.

    ``psi(x; k) = mean_theta [log2 p(theta^T x | k) - log2 sum_j pi_j p(theta^T x | j)]`` over
    ``n_slices`` directions drawn uniformly on the unit sphere. As in the authors' code, each
    class's ``p(t | k)`` along a slice is the *mass* of the histogram bin ``t`` falls in
    (count / n_k, not divided by the bin width), with ``n_bins`` equal bins over that class's
    own range; a projection outside the range is counted in the nearest edge bin. Masses and
    the mixture are floored at ``floor`` before the log.

    Parameters
    ----------
    n_slices, n_bins, floor
        100, 30 and 1e-5 as in the paper's code.
    feature_extractor
        Maps ``X`` to features; ``None`` uses ``X`` itself.
    """

    def __init__(
        self,
        *,
        n_slices: int = 100,
        n_bins: int = 30,
        floor: float = 1e-5,
        feature_extractor: Callable[[Any], Any] | None = None,
        num_classes: int | None = None,
        random_state: int = 0,
    ) -> None:
        self.n_slices, self.n_bins, self.floor = n_slices, n_bins, floor
        self.feature_extractor, self.num_classes = feature_extractor, num_classes
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> PSI:
        """Draw the slices and fit the per-class histograms on features of ``X``."""
        _check_positive_int("n_slices", self.n_slices)
        _check_positive_int("n_bins", self.n_bins)
        V.number("floor", self.floor, low=0.0, high=1.0, low_open=True, high_open=True)
        _callable_or_none("feature_extractor", self.feature_extractor)
        seed = _seed(self.random_state)
        feats = _features(self.feature_extractor, X).double().numpy()
        if feats.ndim != 2:
            raise ValueError(f"features must be 2-D (n, d), got shape {feats.shape}")
        labels, k = _labels(y, len(feats), _num_classes(self.num_classes))
        counts = np.bincount(labels, minlength=k)
        if counts.min() == 0:
            raise ValueError(f"every class needs training samples; class counts are {counts}")
        rng = np.random.default_rng(seed)
        theta = rng.standard_normal((self.n_slices, feats.shape[1]))
        theta /= np.linalg.norm(theta, axis=1, keepdims=True)
        proj = feats @ theta.T  # (n, S)
        edges = np.empty((self.n_slices, k, self.n_bins + 1))
        mass = np.empty((self.n_slices, k, self.n_bins))
        for s in range(self.n_slices):
            for c in range(k):
                count, edges[s, c] = np.histogram(proj[labels == c, s], bins=self.n_bins)
                mass[s, c] = count / counts[c]
        self.thetas_, self.edges_, self.masses_ = theta, edges, mass
        self.priors_, self.n_classes_ = counts / counts.sum(), k
        return self

    def slice_masses(self, X: Any) -> np.ndarray:
        """``(n, S, K)``: per slice and class, the mass of the bin each sample falls in."""
        self._fitted()
        feats = _features(self.feature_extractor, X).double().numpy()
        if feats.ndim != 2 or feats.shape[1] != self.thetas_.shape[1]:
            raise ValueError(
                f"features must be (n, {self.thetas_.shape[1]}) like the fitted ones, got "
                f"{feats.shape}"
            )
        proj = feats @ self.thetas_.T
        out = np.zeros((len(feats), self.n_slices, self.n_classes_))
        for s in range(self.n_slices):
            for c in range(self.n_classes_):
                e = self.edges_[s, c]
                # bins [e_i, e_{i+1}), the last closed; outside the range: the edge bins
                i = np.clip(np.searchsorted(e, proj[:, s], side="right") - 1, 0, self.n_bins - 1)
                out[:, s, c] = self.masses_[s, c, i]
        return out

    def score_samples(self, X: Any) -> np.ndarray:
        """``(n, K)`` PSI in bits for every candidate class."""
        p = self.slice_masses(X)
        mix = p @ self.priors_  # (n, S)
        pmi = np.log2(np.maximum(p, self.floor)) - np.log2(np.maximum(mix, self.floor))[..., None]
        return pmi.mean(axis=1)
