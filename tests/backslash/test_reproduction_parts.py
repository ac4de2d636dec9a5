"""The reproduction's own parts: the text model's initialisation, the selection over seeds,
the paired standard error and the fixed-length size baseline."""

import math

import pytest
import torch

from icml25.backslash import reproduce as R


def _point(lam, val):
    return R.Point(lam, 1.0, 1.0, val, 0.0, 0.0, torch.nn.Linear(1, 1))


def test_text_model_is_initialised_as_language_models_are():
    torch.manual_seed(0)
    m = R.TextTransformer(4000, 6)
    for mod in m.modules():
        if isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)) and mod.weight.numel() > 1000:
            assert mod.weight.std().item() == pytest.approx(0.02, rel=0.1)
        if isinstance(mod, torch.nn.Linear):
            assert torch.count_nonzero(mod.bias) == 0


def test_selection_uses_the_mean_over_seeds():
    normals = [_point(None, 0.80), _point(None, 0.80)]
    # lambda 3: -0.5 and -2.0 points (mean -1.25: out); lambda 2: -1.5 and +0.0 (mean -0.75: in)
    grids = [
        [_point(1.0, 0.80), _point(2.0, 0.785), _point(3.0, 0.795)],
        [_point(1.0, 0.80), _point(2.0, 0.80), _point(3.0, 0.78)],
    ]
    assert R.select(normals, grids) == 1
    # none within 1 point: the smallest lambda
    bad = [[_point(2.0, 0.5), _point(1.0, 0.5)]] * 2
    assert R.select(normals, bad) == 1


def test_paired_se_by_hand():
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])
    a = torch.tensor([0, 1, 0, 0, 1, 1, 0, 1])  # right on 6
    b = torch.tensor([0, 0, 1, 0, 1, 0, 1, 1])  # right on 6
    d = torch.tensor([0, 1, -1, 0, 0, -1, 1, 0], dtype=torch.float)
    want = 100 * math.sqrt(float(((d - d.mean()) ** 2).sum()) / 7) / math.sqrt(8)
    assert R.paired_se(a, b, y) == pytest.approx(want)


def test_fixed_length_bits():
    m = torch.nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[0.0, 0.01, -0.02, 0.05], [0.0, 0.0, 0.0, 0.0]]))
    # symbols -2..5 at delta 0.01: 8 values, 3 bits each
    assert R.fixed_length_bits(m, 0.01) == 3.0
