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


def test_objective_and_tuple_inputs():
    """``objective`` replaces ``loss_fn(model(x), y)``; tuple inputs are indexed together."""
    X, y = _data()
    model_a, opt_a = _fresh()
    train(model_a, opt_a, X, y, TrainConfig(epochs=2, batch_size=32))
    model_b, opt_b = _fresh()
    objective = lambda m, xb, yb: torch.nn.functional.cross_entropy(m(*xb), yb)  # noqa: E731
    train(model_b, opt_b, (X,), y, TrainConfig(epochs=2, batch_size=32), objective=objective)
    for pa, pb in zip(model_a.parameters(), model_b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)

    class TwoInputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(5, 2)

        def forward(self, a, b):
            return self.lin(a * b)

    seen = []
    two = TwoInputs()
    train(
        two,
        torch.optim.SGD(two.parameters(), lr=0.1),
        (X, torch.ones_like(X)),
        y,
        TrainConfig(epochs=1, batch_size=50),
        objective=lambda m, xb, yb: seen.append(len(xb)) or m(*xb).logsumexp(-1).mean(),
    )
    assert seen == [2, 2, 2, 2]
    with pytest.raises(ValueError, match="same length"):
        train(two, torch.optim.SGD(two.parameters(), lr=0.1), (X, X[:10]), y, TrainConfig())


def test_small_cnn_shapes_and_errors():
    from icml25.core.models import SmallCNN

    net = SmallCNN(7, width=4, hidden=8)
    assert net(torch.randn(3, 1, 28, 28)).shape == (3, 7)
    assert net(torch.randn(3, 784)).shape == (3, 7)  # flat images are reshaped
    assert SmallCNN(2, in_channels=3, image_size=32)(torch.randn(2, 3, 32, 32)).shape == (2, 2)
    with pytest.raises(ValueError, match="num_classes"):
        SmallCNN(0)
    with pytest.raises(ValueError, match="image_size"):
        SmallCNN(3, image_size=8)
