"""Suite-wide settings.

The Debian data sets (Fashion-MNIST, fortunes) are hidden from every test (``ICML25_DATA=
fallback``), so that the suite measures the same thing on every machine, with or without them
installed; the Debian code paths are tested on small copies made here (the ``debian_data``
fixture), which sets the variables back for one test.
"""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest

os.environ["ICML25_DATA"] = "fallback"

# hypothesis: derandomized in CI (the same examples on every run, so a red CI is reproducible),
# random locally (so that local runs keep exploring); no deadline (2 shared cores)
from hypothesis import settings as _hypothesis_settings

_hypothesis_settings.register_profile("ci", derandomize=True, deadline=None)
_hypothesis_settings.register_profile("dev", deadline=None)
_hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``@pytest.mark.cuda`` skip, saying why, where torch sees no CUDA device:
    none of them may pass silently without a GPU."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(
        reason="no CUDA device on this machine: the module's CPU and meta-device checks run "
        "instead (make gpu-check runs this test on a GPU)"
    )
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


def write_idx(path: Path, arr: np.ndarray) -> None:
    """An IDX file (uint8 arrays only), gzip-compressed when ``path`` ends in ``.gz``."""
    assert arr.dtype == np.uint8
    header = bytes([0, 0, 0x08, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(header + arr.tobytes())


@pytest.fixture(scope="session")
def debian_data_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small stand-ins laid out as Debian installs them: a Fashion-MNIST folder (MNIST-5k's
    images in IDX files: 4,000 train, 1,000 test, every class in both) and a fortunes folder
    (standard-library docstrings as the six categories BackSlash reads)."""
    from icml25.core.data import load_image_benchmark, load_stdlib_docstrings

    root = tmp_path_factory.mktemp("debian")
    fashion, fortunes = root / "fashion-mnist", root / "fortunes"
    fashion.mkdir()
    fortunes.mkdir()
    X, y, Xt, yt, _ = load_image_benchmark(mnist_test=1000, source="mnist-5k")
    for prefix, images, labels in (("train", X, y), ("t10k", Xt, yt)):
        pixels = np.round(images * 255).astype(np.uint8).reshape(-1, 28, 28)
        write_idx(fashion / f"{prefix}-images-idx3-ubyte.gz", pixels)
        write_idx(fashion / f"{prefix}-labels-idx1-ubyte.gz", labels.astype(np.uint8))
    from icml25.backslash.experiments import CATEGORIES

    texts, labels = load_stdlib_docstrings()
    for i, cat in enumerate(CATEGORIES):
        entries = [t for t, lab in zip(texts, labels, strict=True) if lab == i]
        (fortunes / cat).write_text("\n%\n".join(entries) + "\n%\n")
    return {"fashion": fashion, "fortunes": fortunes}


@pytest.fixture
def debian_data(debian_data_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the Debian code paths see the stand-ins for one test."""
    monkeypatch.setenv("ICML25_DATA", "auto")
    monkeypatch.setenv("ICML25_FASHION_MNIST_DIR", str(debian_data_dirs["fashion"]))
    monkeypatch.setenv("ICML25_FORTUNES_DIR", str(debian_data_dirs["fortunes"]))


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory):
    """``tiny_run(slug)``: the method's tiny reproduction on seed 0, run once per test session
    and shared by the tests that only read it: ``(entry, out_dir)``. Tests must not change
    the entry or the folder."""
    from icml25.core.runner import run_method
    from icml25.methods import load_all

    done: dict[str, tuple[dict, Path]] = {}

    def get(slug: str) -> tuple[dict, Path]:
        if slug not in done:
            out = tmp_path_factory.mktemp(f"tiny-{slug}")
            entry = run_method(load_all()[slug], budget="tiny", seeds=[0], out_dir=out)
            done[slug] = (entry, out)
        return done[slug]

    return get
