"""Bad input for the entry points added by issue 22 (latent feedback, BatchNorm modes)."""

import pytest
import torch
from torch import nn

from icml25 import it3


def _body_head():
    return nn.Linear(4, 6), nn.Linear(6, 3 + 6)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: it3.LatentZigZag("body", nn.Linear(6, 9), 3, 6), "model must be"),
        (lambda: it3.LatentZigZag(nn.Linear(4, 6), "head", 3, 6), "head must be"),
        (lambda: it3.LatentZigZag(*_body_head(), 3, 0), "latent_dim"),
        (lambda: it3.LatentZigZag(*_body_head(), 0, 6), "aux_dim"),
    ],
)
def test_latent_zigzag_bad_construction(make, match):
    with pytest.raises((TypeError, ValueError), match=match):
        make()


def test_latent_zigzag_bad_head_output():
    zz = it3.LatentZigZag(nn.Linear(4, 6), nn.Linear(6, 5), 3, 6)
    with pytest.raises(ValueError, match="head must return"):
        zz(torch.zeros(2, 4))


def test_batch_statistics_leaves_models_without_batchnorm_alone():
    lin = nn.Linear(3, 2)
    assert it3.batch_statistics(lin) is lin
    bn = it3.batch_statistics(nn.BatchNorm1d(3))
    assert bn.running_mean is None and not bn.track_running_stats
