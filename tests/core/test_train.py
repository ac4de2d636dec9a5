import pytest
import torch

from icml25.core.models import MLP, TrainConfig, train


def _data():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(200, 5, generator=g)
    y = (X[:, 0] + X[:, 1] > 0).long()
    return X, y


def _fresh():
    torch.manual_seed(0)
    model = MLP(5, [16], 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def test_training_reduces_loss():
    X, y = _data()
    model, opt = _fresh()
    losses = train(model, opt, X, y, TrainConfig(epochs=15, batch_size=32))
    assert losses[-1] < 0.5 * losses[0]


def test_resume_equals_uninterrupted(tmp_path):
    X, y = _data()
    model_a, opt_a = _fresh()
    train(model_a, opt_a, X, y, TrainConfig(epochs=6, batch_size=32))

    ckpt = tmp_path / "ckpt.pt"
    model_b, opt_b = _fresh()
    train(model_b, opt_b, X, y, TrainConfig(epochs=3, batch_size=32, checkpoint=ckpt))
    model_c, opt_c = _fresh()  # a new process: fresh objects, state from the checkpoint
    train(model_c, opt_c, X, y, TrainConfig(epochs=6, batch_size=32, checkpoint=ckpt))
    for pa, pc in zip(model_a.parameters(), model_c.parameters(), strict=True):
        torch.testing.assert_close(pa, pc, rtol=0, atol=0)


def test_bad_config_and_data():
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="layer sizes"):
        MLP(5, [0], 2)
    model, opt = _fresh()
    with pytest.raises(ValueError, match="same length"):
        train(model, opt, torch.zeros(3, 5), torch.zeros(2).long(), TrainConfig())
