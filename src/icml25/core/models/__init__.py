"""Small shared models and a plain training loop with checkpoint/resume."""

from icml25.core.models.cnn import SmallCNN
from icml25.core.models.mlp import MLP
from icml25.core.models.train import TrainConfig, train

__all__ = ["MLP", "SmallCNN", "TrainConfig", "train"]
