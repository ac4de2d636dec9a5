"""The BackSlash file against bad files and failing writes (issue 70, area 3): every refusal is
a BackSlashFileError (a ValueError) naming the file and what is wrong, raised before anything
large is allocated and before any parameter of the model is written; a write that fails leaves
the previous file as it was."""

from __future__ import annotations

import builtins
import errno
import io
import json
import math
import struct
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from icml25.backslash import BackSlashFileError, load_compressed, save_compressed

CODECS = ["eg", "rans"]


class Net(nn.Module):
    """Coded weights (an embedding, two Linear layers) and raw state (biases, a BatchNorm's
    parameters and buffers, an int64 counter among them)."""

    def __init__(self, hidden: int = 16, extra: bool = False) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.fc = nn.Linear(8, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.out = nn.Linear(hidden, 3)
        if extra:
            self.head = nn.Linear(3, 2)


def saved(tmp_path: Path, codec: str = "eg", name: str = "net.bs") -> Path:
    torch.manual_seed(0)
    path = tmp_path / name
    save_compressed(Net(), path, 0.01, codec=codec)
    return path


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def assert_untouched(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), f"{k} was written before the refusal"


def rewrite_header(path: Path, edit: Any) -> None:
    """Edit the JSON header in place and store it with a recomputed CRC32: the checksums stay
    valid, so only the reader's own checks can refuse the file."""
    raw = path.read_bytes()
    (hlen,) = struct.unpack("<I", raw[8:12])
    header = json.loads(raw[16 : 16 + hlen])
    edit(header)
    head = json.dumps(header).encode()
    path.write_bytes(
        raw[:8] + struct.pack("<II", len(head), zlib.crc32(head)) + head + raw[16 + hlen :]
    )


def huge(header: dict[str, Any], shape: list[int]) -> None:
    """The first coded tensor (the embedding) given ``shape``, the count to match."""
    header["coded"][0]["shape"] = shape
    header["count"] = sum(math.prod(e["shape"]) for e in header["coded"])


def refused(path: Path, model: nn.Module, words: str) -> None:
    """``load_compressed`` refuses ``path`` with a BackSlashFileError naming it and saying
    ``words``, leaves ``model`` as it was, and allocates no more than 32 MiB on the way."""
    before = snapshot(model)
    tracemalloc.start()
    try:
        with pytest.raises(BackSlashFileError, match=words) as info:
            load_compressed(path, model)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)
    assert peak < 32 << 20, f"{peak / 2**20:.0f} MiB allocated before the refusal"
    assert_untouched(model, before)


@pytest.mark.parametrize("codec", CODECS)
def test_a_file_cut_anywhere_is_refused_by_name(tmp_path, codec):
    good = saved(tmp_path, codec).read_bytes()
    cut = tmp_path / "cut.bs"
    model = Net()
    # every cut through the preamble and the header's start, then every 13th byte and the
    # last 16 (test_backslash.py cuts at every byte, with the errors' words)
    for n in sorted({*range(64), *range(64, len(good), 13), *range(len(good) - 16, len(good))}):
        cut.write_bytes(good[:n])
        before = snapshot(model)
        with pytest.raises(BackSlashFileError, match=r"cut\.bs"):
            load_compressed(cut, model)
        assert_untouched(model, before)


def test_an_empty_file_and_a_directory_are_refused_by_name(tmp_path):
    empty = tmp_path / "empty.bs"
    empty.write_bytes(b"")
    refused(empty, Net(), "empty")
    folder = tmp_path / "folder.bs"
    folder.mkdir()
    refused(folder, Net(), "is a directory")
    with pytest.raises(BackSlashFileError, match="is a directory"):
        save_compressed(Net(), folder, 0.01)


@pytest.mark.parametrize("codec", CODECS)
def test_a_file_of_another_model_is_refused_before_any_weight_is_written(tmp_path, codec):
    path = saved(tmp_path, codec)
    refused(path, Net(hidden=12), r"fc\.weight \[16, 8\] does not fit the model's \[12, 8\]")


@pytest.mark.parametrize("codec", CODECS)
def test_extra_or_missing_tensors_are_refused_before_any_weight_is_written(tmp_path, codec):
    """The model with a tensor the file lacks used to have all the others overwritten before
    load_state_dict's strict check raised (a RuntimeError)."""
    path = saved(tmp_path, codec)
    refused(path, Net(extra=True), r"the model has 2 tensors the file lacks: \['head\.weight'")
    fewer = Net()
    del fewer.out
    refused(path, fewer, r"the file has 2 tensors the model lacks: \['out\.weight'")


@pytest.mark.parametrize("codec", CODECS)
def test_a_dtype_the_files_values_do_not_fit_is_refused(tmp_path, codec):
    path = saved(tmp_path, codec)
    refused(path, Net().half(), r"emb\.weight is torch\.float32, the model's is torch\.float16")
    wide = Net().double()  # float32 values fit float64: loaded
    load_compressed(path, wide)
    assert wide.fc.weight.dtype == torch.float64


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        # 2^32 weights in one tensor, blocks so large that one offset covers them (the reader
        # used to allocate 16 GiB for the decoded symbols before reading the stream)
        (lambda h: (huge(h, [2**16, 2**16]), h.update(block=2**32)), "block 4294967296"),
        # the same with the writers' block size: 2^24 block offsets that the body cannot hold
        (lambda h: huge(h, [2**17, 2**16]), "cannot hold"),
        # a count that disagrees with the tensors' shapes
        (lambda h: h.update(count=h["count"] + 1), "the header's count is"),
        # a raw tensor placed past the end of the body
        (
            lambda h: h["raw"][0].update(offset=h["body_bytes"]),
            r"raw tensor fc\.bias .* lies past the end",
        ),
        (lambda h: h["raw"][0].update(dtype="object"), "not a number type"),
        (lambda h: h.update(version=3), "version 3"),
        (lambda h: h.pop("coded"), "coded must be a list"),
        (lambda h: h.update(chunk=0), "chunk must be"),
        (lambda h: h["tied"].update({"out.weight": "nowhere"}), "more than once"),
    ],
    ids=[
        "2^32-weights",
        "2^33-weights",
        "count",
        "raw-past-body",
        "dtype",
        "version",
        "no-coded",
        "chunk",
        "tied",
    ],
)
def test_a_crafted_header_with_valid_checksums_is_refused_before_allocating(tmp_path, edit, words):
    path = saved(tmp_path, "eg")
    rewrite_header(path, edit)
    refused(path, Net(), words)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda h: huge(h, [2**16, 2**16]), r"emb\.weight \[65536, 65536\] does not fit"),
        (lambda h: h.update(tables=[*h["tables"], 3]), "symbol tables for"),
        (lambda h: h["raw"][-1].update(offset=10**12), "lies past the end"),
    ],
    ids=["2^32-weights", "tables", "raw-past-body"],
)
def test_a_crafted_rans_header_is_refused_before_allocating(tmp_path, edit, words):
    """A rANS tensor of one distinct value costs no bits, so a small file may rightly describe a
    huge one: it is refused because the model has no such tensor, before decoding."""
    path = saved(tmp_path, "rans")
    rewrite_header(path, edit)
    refused(path, Net(), words)


class _DiskFills:
    """A writable file that takes ``room`` bytes and then fails as a full disk does."""

    def __init__(self, f: Any, room: int) -> None:
        self.f, self.room = f, room

    def write(self, data: Any) -> int:
        data = bytes(data)
        n = min(len(data), self.room)
        self.f.write(data[:n])
        self.room -= n
        if n < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        return n

    def __enter__(self) -> _DiskFills:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.f.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.f, name)


@pytest.mark.parametrize("room", [0, 100, 2000])
def test_a_write_that_fails_midway_leaves_the_previous_file_intact(tmp_path, monkeypatch, room):
    """Whatever opens the file for writing (the builtin or io.open, which pathlib uses) gets a
    disk that fills after ``room`` bytes: the previous file is unchanged and loads, and no
    temporary is left in the folder."""
    path = saved(tmp_path)
    previous = path.read_bytes()
    real_open = io.open

    def full_disk_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        f = real_open(file, mode, *args, **kwargs)
        return _DiskFills(f, room) if ("w" in mode or "x" in mode) else f

    monkeypatch.setattr(builtins, "open", full_disk_open)
    monkeypatch.setattr(io, "open", full_disk_open)
    torch.manual_seed(1)
    with pytest.raises(OSError, match="No space left"):
        save_compressed(Net(), path, 0.01)
    monkeypatch.undo()
    assert path.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.bs"]
    load_compressed(path, Net())


def test_a_failing_fsync_or_rename_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    from icml25.backslash import coding

    path = saved(tmp_path)
    previous = path.read_bytes()
    for name in ("fsync", "replace"):
        with monkeypatch.context() as m:

            def fail(*_args: Any, _name: str = name) -> None:
                raise OSError(errno.EIO, f"{_name} failed")

            m.setattr(coding.os, name, fail)
            with pytest.raises(OSError, match=f"{name} failed"):
                save_compressed(Net(hidden=4), path, 0.01)
        assert path.read_bytes() == previous
        assert sorted(p.name for p in tmp_path.iterdir()) == ["net.bs"]


def test_a_successful_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = saved(tmp_path)
    torch.manual_seed(5)
    net = Net(hidden=4)
    stats = save_compressed(net, path, 0.01)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.bs"]
    assert stats.file_bytes == path.stat().st_size
    back = Net(hidden=4)
    load_compressed(path, back)
    assert torch.equal(back.bn.running_var, net.bn.running_var)
