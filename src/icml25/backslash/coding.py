"""A real compressed model format: uniform quantisation and Exp-Golomb codes in a bitstream.

Each coded weight goes through three steps (the paper's "parameter entropy encoding"):

1. It is quantised, ``q = round(theta / delta)``.
2. ``q`` is mapped to an unsigned ``u`` by zig-zag: ``q > 0 -> 2q - 1``, ``q <= 0 -> -2q``.
3. ``u`` is written as an order-0 Exp-Golomb codeword: ``floor(log2(u + 1))`` zeros, then
   ``u + 1`` in binary. That is ``2 floor(log2(u + 1)) + 1`` bits; a zero costs 1 bit.

The codewords are concatenated MSB-first into one bitstream. So that decoding can be
vectorised, the stream is cut into blocks of ``block`` codewords, and the bit offset of every
block is stored (64 bits per block, counted in the size). The decoder then reads codeword
``j`` of all blocks at once (the NumPy path; the compiled path,
:mod:`icml25.backslash.kernels`, reads block by block, writing the same stream). Nothing in
either direction is a Python loop per weight.

File layout (``save_compressed``, format 2):
- the magic bytes ``ICML25B2``;
- a little-endian ``uint32`` header length, the header's CRC32 (``uint32``), and a JSON header
  (delta, block, tensor names, shapes, dtypes, the body's length and one CRC32 per
  ``CHUNK`` bytes of the body);
- the body: the block offsets (``uint64``), the packed bitstream, and the uncoded tensors
  (biases, norms, buffers) as raw bytes.

``load_compressed`` checks the header's CRC, the body's length (truncation) and every chunk's
CRC, then the header's fields and sections against the file's length and the file's tensors
against the model (names, shapes, dtypes), all before decoding or writing a parameter; a
refusal is a :class:`BackSlashFileError` naming the file and the failing part. A flipped bit
anywhere is caught. ``save_compressed`` writes a temporary file beside the target, fsyncs it and
renames it over the target, so a failed write leaves the previous file intact.

``load_compressed`` restores a model whose coded weights equal ``dequantize(quantize(w))``
exactly.

``codec="rans"`` replaces step 3 by an entropy coder: the quantised symbols of each tensor are
coded with interleaved rANS (:mod:`icml25.backslash.rans`: up to 32,768 lanes, compiled loops or
whole-array NumPy with one step per round of lanes, the same stream) under that tensor's own
order-0 model, the counts of its distinct symbols, which the file stores (the values as
differences and the counts, zlib-compressed, counted in the size); the header holds each
tensor's word width, precision, lanes and stream length. The coded size is within 1% of the
empirical order-0 entropy (under 0.7% by construction), where Exp-Golomb is close to it only for
sharply peaked weights. Files written with ``codec="rans"`` by the first coder (constriction's
``AnsCoder``, one stream; their header has no ``rans_layout``) are still read through
constriction. The header says which codec wrote the file; both are read, and files written
before the option (Exp-Golomb) still load.

Long by design: the file format is one unit: quantisation, both entropy coders (Exp-Golomb and
rANS), the header with its checksums and the reader that verifies them are read together, and
splitting the writer from the reader would separate two halves of one format.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import secrets
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.backslash import kernels
from icml25.backslash import rans as R
from icml25.backslash.rate import default_rate_params
from icml25.core import validate as V

MAGIC = b"ICML25B2"
OLD_MAGIC = b"ICML25BS"
"""Format 1 (no checksums), refused with a clear error."""
CHUNK = 1 << 20
"""Bytes of the body covered by one CRC32."""
MAX_Q = 2**30
"""Quantised magnitudes must stay below this (codewords of at most 63 bits)."""


def _check_delta(delta: float) -> float:
    if not isinstance(delta, (int, float)) or not (delta > 0 and math.isfinite(delta)):
        raise ValueError(f"delta must be a finite number > 0, got {delta!r}")
    return float(delta)


QUANT_CHUNK = 1 << 16
"""Weights per slice of :func:`quantize`: its float64 temporaries stay in the CPU's cache."""


def quantize(theta: Any, delta: float) -> np.ndarray:
    """``round(theta / delta)`` as int64 (round half to even), with a clear error on NaN/inf
    or on values too large for the coder. Elementwise, in slices of :data:`QUANT_CHUNK`."""
    delta = _check_delta(delta)
    if isinstance(theta, torch.Tensor):
        t = theta.detach().cpu()
        # NumPy has no bfloat16: widen it (exactly) to float32
        x = (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    else:
        x = theta
    x = np.asarray(x)
    if x.dtype.kind not in "iuf":  # NumPy would turn the string "0.1" into a number
        raise ValueError(f"weights must be numbers (a tensor or an array), got dtype {x.dtype}")
    flat = x.reshape(-1)
    out = np.empty(flat.shape, dtype=np.int64)
    buf = np.empty(min(QUANT_CHUNK, flat.size), dtype=np.float64)
    for a in range(0, flat.size, QUANT_CHUNK):
        part = flat[a : a + QUANT_CHUNK]
        q = buf[: len(part)]
        np.divide(part.astype(np.float64, copy=False), delta, out=q)  # as float64(theta) / delta
        np.rint(q, out=q)
        if not np.abs(q).max() < MAX_Q:  # NaN and inf fail too
            _quantize_error(x, delta)
        out[a : a + len(part)] = q
    return out.reshape(x.shape)


def _quantize_error(x: np.ndarray, delta: float) -> None:
    """The clear error for weights :func:`quantize` cannot code (NaN/inf, or too large)."""
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"weights must be finite to be coded, got {int(np.sum(~np.isfinite(x)))} NaN/inf"
        )
    q = np.abs(np.rint(x / delta))
    raise ValueError(
        f"|theta| / delta reaches {q.max():.3g}, above the coder's limit {MAX_Q}: "
        f"use a larger delta (largest |theta| is {np.abs(x).max():.3g})"
    )


def dequantize(q: np.ndarray, delta: float) -> np.ndarray:
    """``q * delta`` as float32 (the decoded weights)."""
    return (np.asarray(q, dtype=np.float64) * _check_delta(delta)).astype(np.float32)


def _integers(name: str, x: Any, signed: bool = False) -> np.ndarray:
    """``x`` as int64 (``signed``) or uint64 codes: integral values only, and for unsigned
    codes none negative or at or above ``2^62`` (no codeword of the format is longer)."""
    arr = np.asarray(x)
    if arr.dtype.kind == "u":
        ok = True
    elif arr.dtype.kind in "ib":
        ok = signed or not (arr < 0).any()
    elif arr.dtype.kind == "f":
        ok = bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
        ok = ok and (signed or not (arr < 0).any())
    else:
        ok = False
    kind = "integers" if signed else "integers >= 0"
    if not ok:
        raise ValueError(f"{name} must hold {kind}, got dtype {arr.dtype} {arr.ravel()[:5]}")
    out = arr.astype(np.int64 if signed else np.uint64, copy=False)
    if not signed and out.size and int(out.max()) >= 2**62:
        raise ValueError(f"{name} must hold codes below 2^62, got {int(out.max())}")
    return out


def zigzag(q: np.ndarray) -> np.ndarray:
    """Signed to unsigned: ``q > 0 -> 2q - 1``, ``q <= 0 -> -2q`` (0, 1, -1, 2 -> 0, 1, 2, 3)."""
    q = np.ascontiguousarray(_integers("q", q, signed=True))
    if kernels.AVAILABLE:
        out = np.empty(q.shape, dtype=np.uint64)
        kernels.zigzag(q.reshape(-1), out.reshape(-1))
        return out
    return (2 * np.abs(q) - (q > 0)).astype(np.uint64)


def unzigzag(u: np.ndarray) -> np.ndarray:
    """Inverse of :func:`zigzag`."""
    u = _integers("u", u).astype(np.int64)
    h = (u + 1) >> 1  # |q|
    m = (u & 1) - 1  # 0 for odd u (q > 0), -1 for even (q <= 0): (h ^ m) - m is h or -h
    return (h ^ m) - m


def eg_lengths(u: np.ndarray) -> np.ndarray:
    """Order-0 Exp-Golomb code lengths ``2 floor(log2(u + 1)) + 1`` (exact for ``u < 2^52``)."""
    return _eg_lengths(_integers("u", u)).astype(np.int64)


def _eg_lengths(u: np.ndarray) -> np.ndarray:
    """:func:`eg_lengths` as ``uint8`` without the input check: ``floor(log2(u + 1))`` is the
    exponent field of ``u + 1`` in float64 (exact below ``2^52``)."""
    e = (u.astype(np.float64) + 1.0).view(np.uint64) >> np.uint64(52)
    return (2 * (e.astype(np.int16) - 1023) + 1).astype(np.uint8)


def coded_bits(theta: Any, delta: float) -> int:
    """Bits of the Exp-Golomb codewords of ``theta`` at step ``delta`` (without block offsets)."""
    return int(eg_lengths(zigzag(quantize(theta, delta))).sum())


def _block_size(n: int) -> int:
    """Codewords a block: a decoding iteration per codeword of a block, a 64-bit offset per
    block (at most 0.25 bits a weight; 0.0625 from a million weights on)."""
    return int(min(1024, max(256, math.isqrt(max(n, 1)) + 1)))


ENCODE_CHUNK = 1 << 15
"""Codewords per pass of :func:`eg_encode` (whole blocks): its temporaries (about ten arrays of
this length) stay in the CPU's cache, and its memory stays near one byte per codeword beyond
the stream, however large the model."""


def eg_encode(u: np.ndarray, block: int | None = None) -> tuple[bytes, np.ndarray, int, int]:
    """Encode unsigned integers below ``2^32 - 1`` (codewords of at most 63 bits). Returns
    ``(stream, block_offsets, total_bits, block)``."""
    u = _integers("u", u).ravel()
    if u.size and int(u.max()) >= 2**32 - 1:
        raise ValueError(f"u must be below 2^32 - 1 (63-bit codewords), got {int(u.max())}")
    n = len(u)
    block = _block_size(n) if block is None else V.integer("block", block, low=1)
    if kernels.AVAILABLE:  # two compiled passes: the size, then the stream (the same bytes)
        u = np.ascontiguousarray(u)
        total = int(kernels.eg_bits(u))
        words, offsets = kernels.eg_encode(u, block, (total + 63) // 64 + 1)
        return words.astype(">u8").tobytes()[: (total + 7) // 8], offsets, total, block
    lengths = _eg_lengths(u)  # one byte per codeword, computed once
    # passes over whole blocks: each pass's first bit from the sums of the lengths before it,
    # then the codewords of each pass written at their global bit positions
    step = max(block, ENCODE_CHUNK // block * block)
    cuts = np.arange(0, n, step)
    sums = np.add.reduceat(lengths, cuts, dtype=np.int64) if n else np.zeros(0, np.int64)
    bases = np.concatenate([[0], np.cumsum(sums)]).astype(np.int64)
    total = int(bases[-1])
    words = np.zeros((total + 63) // 64 + 1, dtype=np.uint64)
    offsets = np.zeros(-(-n // block), dtype=np.uint64)
    one, b64, b128 = np.uint64(1), np.uint64(64), np.uint64(128)
    for i, a in enumerate(cuts.tolist()):
        lg = lengths[a : a + step].astype(np.int64)
        starts = np.cumsum(lg) - lg + bases[i]
        offsets[a // block : (a + len(lg) - 1) // block + 1] = starts[::block]
        # each codeword (the integer u + 1 in `length` bits) lands in one or two 64-bit words;
        # the pieces are disjoint bits, so a word is the OR of its pieces (reduceat over runs)
        v = u[a : a + step] + one
        off = (starts & 63).astype(np.uint64)
        w0 = starts >> 6
        end = off + lg.astype(np.uint64)
        fits = end <= b64
        first = (v << np.where(fits, b64 - end, 0)) >> np.where(fits, 0, end - b64)
        at = np.flatnonzero(np.diff(w0, prepend=-1))  # runs of equal (sorted) word index
        words[w0[at]] |= np.bitwise_or.reduceat(first, at)
        spill = np.flatnonzero(~fits)
        if len(spill):  # at most one spill per word: no runs to reduce
            words[w0[spill] + 1] |= v[spill] << (b128 - end[spill])
    stream = words.astype(">u8").tobytes()[: (total + 7) // 8]
    return stream, offsets, total, block


def eg_decode(
    stream: bytes, offsets: np.ndarray, count: int, block: int, total_bits: int
) -> np.ndarray:
    """Decode ``count`` codewords (``uint64``). The blocks are read in parallel, one codeword
    per block per iteration, through 64-bit windows of the stream; a corrupt stream raises
    ``ValueError``."""
    flat = _eg_decode_plus_one(stream, offsets, count, block, total_bits)
    return _mapped(flat, lambda v: v.astype(np.uint64) - np.uint64(1), np.uint64)


def _eg_decode_plus_one(
    stream: bytes, offsets: np.ndarray, count: int, block: int, total_bits: int
) -> np.ndarray:
    """``u + 1`` of each codeword as ``uint32`` in stream order (exact: codewords of at most 63
    bits hold ``u + 1 < 2^32``): compiled (:mod:`~icml25.backslash.kernels`, block by block)
    where Numba is there, else whole-array NumPy, all blocks at once:

    Iteration ``j`` reads codeword ``j`` of every block: ``p`` its bit position, the window
    ``w`` the 64 bits from ``p`` (word ``p >> 6`` shifted left by ``p & 63``, or-ed with the next
    word's top bits). The codeword has ``z`` leading zeros and ``2z + 1`` bits: with ``f`` the
    float64 exponent field of ``w >> 11`` (exact below ``2^53``), ``z = 1075 - f``, so ``z > 31``
    (corrupt) is ``f < 1044``, and ``u + 1 = w >> (64 - 2z - 1) = w >> (2f - 2087)``. Codeword
    ``j`` of all blocks is written as one row (contiguous), and the rows are transposed at the
    end (torch's transpose, about twice NumPy's speed here)."""
    if count == 0:
        return np.zeros(0, dtype=np.uint32)
    data = np.frombuffer(stream, dtype=np.uint8)
    if len(data) * 8 < total_bits:
        raise ValueError("corrupt stream: shorter than its header says")
    nblocks = len(offsets)
    if nblocks != -(-count // block):
        raise ValueError("corrupt stream: block index does not match the count")
    padded = np.zeros(-(-len(data) // 8) * 8 + 16, dtype=np.uint8)  # two zero words after
    padded[: len(data)] = data
    words = padded.view(">u8").astype(np.uint64)
    nxt = words[1:] >> np.uint64(1)  # pre-shifted by one: a shift by 64 - r is never needed
    pos = offsets.astype(np.int64)
    if nblocks and (pos.min() < 0 or pos.max() > total_bits):
        raise ValueError("corrupt stream: a block starts outside the stream")
    if kernels.AVAILABLE:
        flat, err = kernels.eg_decode(words, offsets, count, block, total_bits)
        if err == kernels.TOO_LONG:
            raise ValueError("corrupt stream: a codeword longer than 63 bits")
        if err != kernels.OK:
            raise ValueError("corrupt stream: codewords do not end at the block boundaries")
        return flat
    rows = np.zeros((block, nblocks), dtype=np.uint32)
    last_len = count - (nblocks - 1) * block
    b11, b52, b63, last = np.uint64(11), np.uint64(52), np.uint64(63), len(nxt) - 1
    for j in range(block):
        p = pos if j < last_len else pos[: nblocks - 1]  # a view: updated in place
        if not len(p):
            break
        i = np.minimum(p >> 6, last)  # a corrupt stream may run past its end
        r = (p & 63).view(np.uint64)
        w = (words[i] << r) | (nxt[i] >> (b63 - r))
        f = ((w >> b11).astype(np.float64).view(np.uint64) >> b52).view(np.int64)
        if f.min() < 1044:
            raise ValueError("corrupt stream: a codeword longer than 63 bits")
        f2 = 2 * f
        rows[j, : len(p)] = w >> (f2 - 2087).view(np.uint64)
        p += 2151 - f2  # the codeword's length, 2z + 1
    ends = np.r_[offsets[1:].astype(np.int64), total_bits]
    if not np.array_equal(pos, ends):
        raise ValueError("corrupt stream: codewords do not end at the block boundaries")
    flat = torch.from_numpy(rows.view(np.int32)).T.contiguous().numpy().view(np.uint32)
    return flat.reshape(-1)[:count]


def _mapped(flat: np.ndarray, fn: Any, dtype: Any) -> np.ndarray:
    """``fn`` of ``flat`` as ``dtype``, in slices that stay in cache."""
    count = len(flat)
    out = np.empty(count, dtype=dtype)
    for a in range(0, count, QUANT_CHUNK):
        out[a : a + QUANT_CHUNK] = fn(flat[a : a + QUANT_CHUNK])
    return out


def _eg_values(v: np.ndarray, delta: float) -> np.ndarray:
    """``dequantize(unzigzag(v - 1), delta)`` from ``v = u + 1``: ``|q| = v >> 1``, negative
    (or zero) where ``v`` is odd."""
    x = v.astype(np.int64)
    m = -(x & 1)  # -1 where q <= 0
    return (((x >> 1) ^ m) - m) * delta  # float64 product, cast to float32 by the caller


@dataclass(frozen=True)
class CompressionStats:
    """Sizes of a compressed model (bits counted in the actual file)."""

    coded_params: int
    """Weights that were quantised and Exp-Golomb coded."""
    raw_params: int
    """Other state (biases, norms, buffers) stored uncompressed."""
    codeword_bits: int
    """Bits of the coded symbols: the Exp-Golomb codewords, or the rANS stream."""
    stream_bits: int
    """The coded symbols plus their side information (Exp-Golomb: 64-bit block offsets and the
    last byte's padding; rANS: the per-tensor symbol tables)."""
    file_bytes: int
    """The whole file, header and raw tensors included."""

    @property
    def bits_per_coded_param(self) -> float:
        """Coded stream bits (offsets included) per coded weight."""
        return self.stream_bits / max(self.coded_params, 1)

    @property
    def ratio_vs_fp32(self) -> float:
        """Coded stream size over 32 bits per coded weight."""
        return self.bits_per_coded_param / 32.0


CODECS = ("eg", "rans")


def symbol_table(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of integer symbols ``q`` (sorted), their counts, and each symbol's
    index among them: one bincount over the value range (a sort where the range is huge)."""
    q = np.asarray(q, dtype=np.int64).ravel()
    if q.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int32)
    lo, hi = int(q.min()), int(q.max())
    if hi - lo < 1 << 24:
        # in slices that stay in cache: one bincount each, then the dense index of each value
        counts = np.zeros(hi - lo + 1, dtype=np.int64)
        for a in range(0, q.size, QUANT_CHUNK):
            counts += np.bincount(q[a : a + QUANT_CHUNK] - lo, minlength=len(counts))
        values = np.flatnonzero(counts)
        lut = np.zeros(len(counts), dtype=np.int32)
        lut[values] = np.arange(len(values), dtype=np.int32)
        index = np.empty(q.size, dtype=np.int32)
        for a in range(0, q.size, QUANT_CHUNK):
            np.take(lut, q[a : a + QUANT_CHUNK] - lo, out=index[a : a + QUANT_CHUNK])
        return values + lo, counts[values].astype(np.uint32), index
    values, inverse, counts = np.unique(q, return_inverse=True, return_counts=True)
    return values, counts.astype(np.uint32), inverse.astype(np.int32)


def order0_entropy_bits(counts: np.ndarray) -> float:
    """``sum_i c_i log2(N / c_i)``: the empirical order-0 entropy of symbols with these
    counts, in bits (the size no order-0 code of them can beat)."""
    c = np.asarray(counts, dtype=np.float64)
    c = c[c > 0]
    if c.size == 0:
        return 0.0
    return float((c * np.log2(c.sum() / c)).sum())


def constriction_categorical(counts: np.ndarray) -> Any:
    """constriction's categorical model for symbols ``0 .. len(counts) - 1`` with these counts
    (the same float64 probabilities on both sides, so the same fixed-point model)."""
    import constriction

    p = np.asarray(counts, dtype=np.float64)
    return constriction.stream.model.Categorical(p / p.sum(), perfect=False)


def _pack_tables(tables: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    """The symbol tables as one zlib blob: each table's values as differences (mostly 1: the
    distinct quantised values are nearly contiguous), then all counts."""
    if not tables:
        return zlib.compress(b"", 9)
    steps = np.concatenate([np.diff(v, prepend=np.int64(0)) for v, _ in tables]).astype("<i8")
    counts = np.concatenate([c for _, c in tables]).astype("<u4")
    return zlib.compress(steps.tobytes() + counts.tobytes(), 9)


def _unpack_tables(blob: bytes, sizes: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    total = sum(sizes)
    try:  # at most the 12 bytes a value the header announces (no zlib bomb), plus one
        inflate = zlib.decompressobj()
        data = inflate.decompress(blob, 12 * total + 1)
    except zlib.error as exc:
        raise ValueError(f"corrupt symbol tables: {exc}") from exc
    if len(data) != 12 * total or not inflate.eof:
        raise ValueError("corrupt symbol tables: their length does not match the header")
    steps = np.frombuffer(data[: 8 * total], dtype="<i8").astype(np.int64)
    counts = np.frombuffer(data[8 * total :], dtype="<u4").astype(np.uint32)
    out, at = [], 0
    for k in sizes:
        out.append((np.cumsum(steps[at : at + k]), counts[at : at + k]))
        at += k
    return out


def _word_dtype(width: int) -> str:
    return "<u2" if width == 16 else "<u4"


def rans_encode(
    tensors: list[np.ndarray],
) -> tuple[bytes, list[tuple[np.ndarray, np.ndarray]], list[list[int]]]:
    """Code each tensor's integer symbols under its own order-0 model with the interleaved
    rANS of :mod:`icml25.backslash.rans`. Returns the streams (one after another), each
    tensor's ``(values, counts)`` and its layout ``[width, precision, lanes, stream bytes]``
    (zeros for a tensor of at most one distinct value, which costs no bits)."""

    def one(q: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], list[int], bytes]:
        values, counts, index = symbol_table(q)
        if len(values) <= 1:
            return (values, counts), [0, 0, 0, 0], b""
        p = R.plan(counts, order0_entropy_bits(counts))
        data = R.encode(index, p).astype(_word_dtype(p.width)).tobytes()
        return (values, counts), [p.width, p.precision, p.lanes, len(data)], data

    done = [one(q) for q in tensors]  # two threads measured no faster (README, Cost)
    return b"".join(d for *_, d in done), [t for t, *_ in done], [m for _, m, _ in done]


def rans_decode(
    stream: bytes, tables: list[tuple[np.ndarray, np.ndarray]], layout: list[list[int]]
) -> list[np.ndarray]:
    """Each tensor's symbols from :func:`rans_encode`'s streams, tables ``(values, counts)`` and
    layout: ``values[index]``, so ``values`` may be the integers or anything they map to (their
    dequantised floats); a corrupt stream raises ``ValueError``."""
    if len(layout) != len(tables):
        raise ValueError("corrupt header: the rANS layout does not match the symbol tables")
    jobs: list[tuple[Any, ...]] = []
    at = 0
    for (values, counts), (width, precision, lanes, size) in zip(tables, layout, strict=True):
        if len(values) > 1:
            if width not in (16, 32) or not 2 <= precision <= width or lanes < 1 or size < 0:
                raise ValueError("corrupt header: an impossible rANS layout")
            jobs.append((values, counts, (width, precision, lanes), stream[at : at + size]))
            at += size
        else:
            jobs.append((values, counts, None, b""))
    if at != len(stream):
        raise ValueError("corrupt stream: rANS data left over after the last tensor")

    def one(job: tuple[Any, ...]) -> np.ndarray:
        values, counts, shape, data = job
        n = int(counts.sum())
        if shape is None:
            return np.full(n, values[0] if len(values) else 0, dtype=values.dtype)
        width, precision, lanes = shape
        p = R.Plan(width, precision, R.quantise_counts(counts, precision), lanes)
        return R.decode(np.frombuffer(data, dtype=_word_dtype(width)), n, p, values)

    return [one(job) for job in jobs]


def _rans_decode_constriction(
    words: np.ndarray, tables: list[tuple[np.ndarray, np.ndarray]]
) -> list[np.ndarray]:
    """Files written with ``codec="rans"`` before the interleaved coder (one constriction
    ``AnsCoder`` stream for all tensors, no ``rans_layout`` in the header): read, never written."""
    import constriction

    coder = constriction.stream.stack.AnsCoder(np.ascontiguousarray(words, dtype=np.uint32))
    out = []
    for values, counts in tables:
        n = int(counts.sum())
        if len(values) > 1:
            index = coder.decode(constriction_categorical(counts), n)
            out.append(values[index])
        else:
            out.append(np.full(n, values[0] if len(values) else 0, dtype=values.dtype))
    if not coder.is_empty():
        raise ValueError("corrupt stream: rANS data left over after the last tensor")
    return out


def _coded_names(model: nn.Module, coded: Any) -> list[str]:
    if coded is None:
        return [n for n, _ in default_rate_params(model)]
    names = list(coded)
    state = model.state_dict()
    missing = [n for n in names if n not in state]
    if missing:
        raise ValueError(f"coded names not in the model's state_dict: {missing[:5]}")
    return names


class BackSlashFileError(ValueError):
    """A file that :func:`load_compressed` refuses (not a BackSlash file, truncated, corrupt,
    inconsistent, or not the model's), or a path :func:`save_compressed` cannot write to; the
    message names the file and what is wrong. A ``ValueError``."""


def save_compressed(
    model: nn.Module, path: str | Path, delta: float, *, coded: Any = None, codec: str = "eg"
) -> CompressionStats:
    """Write ``model``'s state to ``path``: the weights named in ``coded`` (default: every
    Linear/Embedding weight) quantised with ``delta`` and entropy coded, the rest raw.
    ``codec="eg"`` (default): order-0 Exp-Golomb codewords, no model stored; ``"rans"``: rANS
    under each tensor's own symbol counts (stored), within a fraction of a percent of the
    order-0 entropy (see the module docstring).

    The file is written under a temporary name in the same folder, flushed to disk (fsync) and
    then renamed over ``path`` (``os.replace``, atomic): a write that fails (a full disk, an
    interruption) leaves any previous file at ``path`` as it was, and the temporary is removed.
    """
    delta = _check_delta(delta)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if codec not in CODECS:
        raise ValueError(f"codec must be one of {CODECS}, got {codec!r}")
    path = Path(path)
    if path.is_dir():
        raise BackSlashFileError(f"{path} is a directory: pass the path of the file to write")
    state = model.state_dict()
    names = _coded_names(model, coded)
    # a tensor shared under several names (tied embeddings) is stored once: later names are
    # written as aliases of the first
    first: dict[tuple[int, tuple[int, ...], tuple[int, ...], str], str] = {}
    tied: dict[str, str] = {}
    for name in [*names, *(n for n in state if n not in names)]:
        t = state[name]
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype))
        if t.numel() and key in first:
            tied[name] = first[key]
        else:
            first.setdefault(key, name)
    names = [n for n in names if n not in tied]
    count = sum(state[n].numel() for n in names)
    tables_meta: list[int] = []
    layout: list[list[int]] = []
    if codec == "rans":
        stream, tables, layout = rans_encode([quantize(state[n], delta).ravel() for n in names])
        prefix = _pack_tables(tables)
        tables_meta = [len(v) for v, _ in tables]
        total_bits, block = 8 * len(stream), 0
        side_bits = 8 * len(prefix)
    else:
        # one uint64 array of codes, filled tensor by tensor (no list of int64 copies beside it)
        u = np.empty(count, dtype=np.uint64)
        at = 0
        for n in names:
            k = state[n].numel()
            u[at : at + k] = zigzag(quantize(state[n], delta).ravel())
            at += k
        stream, offsets, total_bits, block = eg_encode(u)
        prefix = offsets.astype("<u8").tobytes()
        side_bits = 64 * len(offsets)
    raw_parts: list[bytes] = []
    raw_meta: list[dict[str, Any]] = []
    at = 0
    for name, t in state.items():
        if name in names or name in tied:
            continue
        tc = t.detach().cpu().contiguous()
        # bytes through torch (NumPy has no bfloat16); the dtype in NumPy's spelling where it
        # has one (as files before bfloat16 support wrote it), torch's otherwise
        buf = tc.reshape(-1).view(torch.uint8).numpy().tobytes() if tc.numel() else b""
        spelled = "torch.bfloat16" if tc.dtype == torch.bfloat16 else str(tc.numpy().dtype)
        raw_meta.append({"name": name, "shape": list(tc.shape), "dtype": spelled, "offset": at})
        raw_parts.append(buf)
        at += len(buf)
    body = prefix + stream + b"".join(raw_parts)
    header = {
        "version": 2,
        "codec": codec,
        "delta": delta,
        "block": block,
        "tables": tables_meta,
        "table_bytes": len(prefix) if codec == "rans" else 0,
        "rans_layout": layout,
        "count": count,
        "total_bits": total_bits,
        "coded": [
            {"name": n, "shape": list(state[n].shape), "dtype": str(state[n].dtype)} for n in names
        ],
        "raw": raw_meta,
        "tied": tied,
        "stream_bytes": len(stream),
        "body_bytes": len(body),
        "chunk": CHUNK,
        "crc32": [zlib.crc32(body[i : i + CHUNK]) for i in range(0, len(body), CHUNK)],
    }
    head = json.dumps(header).encode()
    preamble = MAGIC + struct.pack("<II", len(head), zlib.crc32(head))
    _write_atomically(path, (preamble, head, body))
    return CompressionStats(
        coded_params=count,
        raw_params=sum(math.prod(m["shape"]) for m in raw_meta),
        codeword_bits=total_bits,
        stream_bits=8 * len(stream) + side_bits,
        file_bytes=len(preamble) + len(head) + len(body),
    )


def _write_atomically(path: Path, parts: tuple[bytes, ...]) -> None:
    """``parts`` into ``path`` through a temporary file in the same folder: written, flushed,
    fsync-ed, then renamed over ``path``; on any failure the temporary is removed and the error
    raised, ``path`` untouched."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "xb") as f:
            for part in parts:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError, AttributeError):  # the rename itself, to disk (POSIX)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_checked(raw: bytes, path: str | Path) -> tuple[dict[str, Any], int]:
    """The header of a format-2 file and where its body starts, after checking the magic
    bytes, the header's CRC and fields, the body's length and every body chunk's CRC."""
    if not raw:
        raise BackSlashFileError(f"{path} is empty (0 bytes), not a BackSlash file")
    if raw[:8] == OLD_MAGIC:
        raise BackSlashFileError(
            f"{path} is a format-1 BackSlash file (no checksums, written by an older icml25): "
            "save the model again with save_compressed"
        )
    if raw[:8] != MAGIC:
        if MAGIC.startswith(raw[:8]):
            raise BackSlashFileError(f"{path} is truncated: {len(raw)} bytes, inside the magic")
        raise BackSlashFileError(f"{path} is not an icml25 BackSlash file (bad magic bytes)")
    if len(raw) < 16:
        raise BackSlashFileError(
            f"{path} is truncated: {len(raw)} bytes, shorter than the preamble"
        )
    hlen, head_crc = struct.unpack("<II", raw[8:16])
    if 16 + hlen > len(raw):
        raise BackSlashFileError(
            f"{path} is truncated: the header needs {hlen} bytes, the file ends first"
        )
    head = raw[16 : 16 + hlen]
    if zlib.crc32(head) != head_crc:
        raise BackSlashFileError(f"{path} is corrupt: the header fails its CRC32 check")
    try:
        header = json.loads(head)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackSlashFileError(f"{path} is corrupt: its header is not JSON ({exc})") from exc
    _check_fields(header, path)
    body = raw[16 + hlen :]
    if len(body) != header["body_bytes"]:
        what = "truncated" if len(body) < header["body_bytes"] else "corrupt (trailing bytes)"
        raise BackSlashFileError(
            f"{path} is {what}: the body has {len(body)} bytes, its header says "
            f"{header['body_bytes']}"
        )
    chunk = header["chunk"]
    if len(header["crc32"]) != -(-len(body) // chunk):
        raise BackSlashFileError(
            f"{path} is corrupt: {len(header['crc32'])} body CRC32s for "
            f"{-(-len(body) // chunk)} chunks"
        )
    for k, crc in enumerate(header["crc32"]):
        if zlib.crc32(body[k * chunk : (k + 1) * chunk]) != crc:
            end = min((k + 1) * chunk, len(body))
            raise BackSlashFileError(
                f"{path} is corrupt: body chunk {k} (bytes {k * chunk}..{end} after the header) "
                "fails its CRC32 check"
            )
    return header, 16 + hlen


def _is_int(x: Any, low: int = 0) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= low


def _check_fields(header: Any, path: str | Path) -> None:
    """Every header field the reader uses, with the type and range it must have (a header with
    a valid CRC may still have been written by something else)."""

    def bad(what: str) -> BackSlashFileError:
        return BackSlashFileError(f"{path} has an invalid header: {what}")

    if not isinstance(header, dict):
        raise bad("not a JSON object")
    if header.get("version") != 2:
        raise bad(f"version {header.get('version')!r}, this icml25 reads version 2")
    if header.setdefault("codec", "eg") not in CODECS:  # files before the option: Exp-Golomb
        raise BackSlashFileError(
            f"{path} uses codec {header['codec']!r}, which this icml25 cannot read"
        )
    for key in ("block", "count", "total_bits", "stream_bytes", "body_bytes"):
        if not _is_int(header.get(key)):
            raise bad(f"{key} must be an integer >= 0, got {header.get(key)!r}")
    if not _is_int(header.get("chunk"), 1):
        raise bad(f"chunk must be an integer >= 1, got {header.get('chunk')!r}")
    delta = header.get("delta")
    if not (isinstance(delta, (int, float)) and not isinstance(delta, bool)) or not (
        math.isfinite(delta) and delta > 0
    ):
        raise bad(f"delta must be a finite number > 0, got {delta!r}")
    crcs = header.get("crc32")
    if not isinstance(crcs, list) or not all(_is_int(c) for c in crcs):
        raise bad("crc32 must be a list of integers")
    for key in ("coded", "raw"):
        entries = header.get(key)
        if not isinstance(entries, list):
            raise bad(f"{key} must be a list of tensors")
        for e in entries:
            ok = (
                isinstance(e, dict)
                and isinstance(e.get("name"), str)
                and isinstance(e.get("dtype"), str)
                and isinstance(e.get("shape"), list)
                and all(_is_int(d) for d in e["shape"])
                and (key == "coded" or _is_int(e.get("offset")))
            )
            if not ok:
                raise bad(f"{key} holds an entry without a name, shape, dtype or offset: {e!r}")
    tied = header.setdefault("tied", {})
    if not isinstance(tied, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tied.items()
    ):
        raise bad("tied must map names to names")
    if header["codec"] == "rans":
        sizes, nbytes = header.get("tables"), header.get("table_bytes")
        if not isinstance(sizes, list) or not all(_is_int(k) for k in sizes):
            raise bad("tables must be a list of integers")
        if not _is_int(nbytes):
            raise bad(f"table_bytes must be an integer >= 0, got {nbytes!r}")
        layout = header.get("rans_layout")
        if layout is not None and not (
            isinstance(layout, list)
            and all(
                isinstance(m, list) and len(m) == 4 and all(_is_int(v) for v in m) for m in layout
            )
        ):
            raise bad("rans_layout must be a list of [width, precision, lanes, bytes]")


def _dtype_of(name: str) -> torch.dtype | None:
    """The torch dtype a header names (``"torch.float32"`` or NumPy's ``"float32"``), or
    ``None`` for a name that is neither (or not a number type)."""
    if name.startswith("torch."):
        dt = getattr(torch, name[6:], None)
        return dt if isinstance(dt, torch.dtype) else None
    try:
        np_dt = np.dtype(name)
    except TypeError:
        return None
    if np_dt.kind not in "biuf":
        return None
    return torch.from_numpy(np.zeros(0, dtype=np_dt)).dtype


def _widens(src: torch.dtype, dst: torch.dtype) -> bool:
    """Whether every value of ``src`` is a value of ``dst`` (the same dtype, or a wider one of
    the same kind: float16 -> float32, int32 -> int64; not float16 <-> bfloat16)."""
    if src == dst:
        return True
    if src.is_floating_point and dst.is_floating_point:
        a, b = torch.finfo(src), torch.finfo(dst)
        return b.max >= a.max and b.eps <= a.eps and b.tiny <= a.tiny
    if src == torch.bool or dst == torch.bool or src.is_floating_point or dst.is_floating_point:
        return False
    if src.is_complex or dst.is_complex:
        return False
    i, j = torch.iinfo(src), torch.iinfo(dst)
    return j.min <= i.min and j.max >= i.max


def _plan(header: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """The body's sections (where each starts and how long it is) from the header, checked
    against the body's length and against each other, so that nothing is allocated for a
    tensor the body cannot hold: the coded tensors' sizes add up to ``count``, every codeword
    takes at least one bit of the stream, each raw tensor lies inside the raw section."""

    def bad(what: str) -> BackSlashFileError:
        return BackSlashFileError(f"{path} is corrupt: {what}")

    count, body = header["count"], header["body_bytes"]
    sizes = [math.prod(e["shape"]) for e in header["coded"]]
    if sum(sizes) != count:
        raise bad(f"its coded tensors hold {sum(sizes)} weights, the header's count is {count}")
    if header["codec"] == "rans":
        side = header["table_bytes"]
        if len(header["tables"]) != len(sizes):
            raise bad(f"{len(header['tables'])} symbol tables for {len(sizes)} coded tensors")
        if any(k > n for k, n in zip(header["tables"], sizes, strict=True)):
            raise bad("a symbol table has more distinct values than its tensor has weights")
        layout = header.get("rans_layout")
        if layout is not None:
            if len(layout) != len(sizes):
                raise bad(f"{len(layout)} rANS layouts for {len(sizes)} coded tensors")
            if sum(m[3] for m in layout) != header["stream_bytes"]:
                raise bad("the rANS streams' lengths do not add up to the stream's")
            if any(m[2] > R.MAX_LANES for m in layout):
                raise bad(f"a rANS layout has more than {R.MAX_LANES} lanes")
    else:
        block, bits = header["block"], header["total_bits"]
        if count and not 1 <= block <= 1 << 16:
            raise bad(f"block {block} (the writers use 1 to 65,536 codewords)")
        side = 8 * (-(-count // block)) if count else 0
        if not count <= bits <= 63 * count:  # a codeword takes 1 to 63 bits
            raise bad(f"{bits} stream bits cannot hold {count} Exp-Golomb codewords")
        if header["stream_bytes"] != -(-bits // 8):
            raise bad(f"{header['stream_bytes']} stream bytes for {bits} bits")
    raw_at = side + header["stream_bytes"]
    if raw_at > body:
        raise bad(f"its coded sections need {raw_at} bytes, the body has {body}")
    raw_len = body - raw_at
    for e in header["raw"]:
        dt = _dtype_of(e["dtype"])
        if dt is None:
            raise bad(f"the raw tensor {e['name']} has dtype {e['dtype']!r}, not a number type")
        nbytes = math.prod(e["shape"]) * torch.empty(0, dtype=dt).element_size()
        e["_bytes"] = nbytes
        if e["offset"] + nbytes > raw_len:
            raise bad(
                f"the raw tensor {e['name']} ({nbytes} bytes at {e['offset']}) lies past the end "
                f"of the body's raw section ({raw_len} bytes)"
            )
    return {"side": side, "raw_at": raw_at}


def _check_fits(header: dict[str, Any], model: nn.Module, path: str | Path) -> None:
    """Every tensor of the file against ``model.state_dict()`` (names both ways, shapes,
    dtypes), before anything is decoded or written into the model."""
    state = model.state_dict()
    entries = [*header["coded"], *header["raw"]]
    names = [e["name"] for e in entries] + list(header["tied"])
    dup = sorted(n for n, k in collections.Counter(names).items() if k > 1)
    if dup:
        raise BackSlashFileError(f"{path} is corrupt: it names {dup[:5]} more than once")
    extra = [n for n in names if n not in state]
    missing = [n for n in state if n not in set(names)]
    if extra or missing:
        parts = []
        if extra:
            parts.append(f"the file has {len(extra)} tensors the model lacks: {extra[:5]}")
        if missing:
            parts.append(f"the model has {len(missing)} tensors the file lacks: {missing[:5]}")
        raise BackSlashFileError(f"{path} does not fit the model: " + "; ".join(parts))
    shapes = {e["name"]: tuple(e["shape"]) for e in entries}
    for n, source in header["tied"].items():
        if source not in shapes:
            raise BackSlashFileError(
                f"{path} is corrupt: its tied tensor {n} (= {source}) has no source"
            )
        shapes[n] = shapes[source]
    dtypes = {e["name"]: e["dtype"] for e in entries}
    for n, shape in shapes.items():
        if tuple(state[n].shape) != shape:
            raise BackSlashFileError(
                f"{path} does not fit the model: the file's tensor {n} {list(shape)} does not "
                f"fit the model's {list(state[n].shape)}"
            )
        src = _dtype_of(dtypes.get(n) or dtypes[header["tied"][n]])
        if src is None or not _widens(src, state[n].dtype):
            raise BackSlashFileError(
                f"{path} does not fit the model: the file's tensor {n} is "
                f"{dtypes.get(n) or dtypes[header['tied'][n]]}, the model's is "
                f"{state[n].dtype} (cast the model to the file's dtype first)"
            )


def load_compressed(path: str | Path, model: nn.Module) -> CompressionStats:
    """Decode ``path`` into ``model`` (in place).

    Before anything is decoded or any parameter written, the file is checked (magic bytes,
    CRC32s, the header's fields, the body's sections against its length) and matched against
    ``model.state_dict()``: the same names (none extra, none missing), shapes, and dtypes the
    file's values fit without loss. A refusal is a :class:`BackSlashFileError` (a
    ``ValueError``) naming the file and what is wrong, and leaves ``model`` untouched."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if Path(path).is_dir():
        raise BackSlashFileError(f"{path} is a directory, not a BackSlash file")
    raw = Path(path).read_bytes()
    header, at = _read_checked(raw, path)
    plan = _plan(header, path)
    _check_fits(header, model, path)
    try:
        values, stream, side_bits = _decode(raw, at, header)
    except ValueError as exc:
        raise BackSlashFileError(f"{path} is corrupt: {exc}") from exc
    state = model.state_dict()
    new: dict[str, torch.Tensor] = {}
    i = 0
    for meta in header["coded"]:
        n, shape = meta["name"], tuple(meta["shape"])
        size = math.prod(shape)
        new[n] = torch.from_numpy(values[i : i + size].reshape(shape).copy()).to(state[n].dtype)
        i += size
    raw_at = at + plan["raw_at"]
    for meta in header["raw"]:
        n, shape = meta["name"], tuple(meta["shape"])
        dt = _dtype_of(meta["dtype"])  # checked against the model above
        assert dt is not None
        start = raw_at + meta["offset"]
        chunk = bytearray(raw[start : start + meta["_bytes"]])
        t = torch.frombuffer(chunk, dtype=dt) if chunk else torch.zeros(0, dtype=dt)
        new[n] = t.reshape(shape).to(state[n].dtype)
    for n, source in header["tied"].items():
        new[n] = new[source]
    model.load_state_dict(new, strict=True)
    return CompressionStats(
        coded_params=header["count"],
        raw_params=sum(math.prod(m["shape"]) for m in header["raw"]),
        codeword_bits=int(header["total_bits"]),
        stream_bits=8 * len(stream) + side_bits,
        file_bytes=len(raw),
    )


def _decode(raw: bytes, at: int, header: dict[str, Any]) -> tuple[np.ndarray, bytes, int]:
    """The coded weights (float32, in the header's order), the stream and the side bits, from a
    file whose header :func:`_plan` and :func:`_check_fits` have checked; a corrupt stream
    raises ``ValueError``."""
    count, block = header["count"], header["block"]
    if header["codec"] == "rans":
        sizes = [math.prod(e["shape"]) for e in header["coded"]]
        tables = _unpack_tables(raw[at : at + header["table_bytes"]], header["tables"])
        if [int(c.sum(dtype=np.int64)) for _, c in tables] != sizes:
            raise ValueError("the symbol tables' counts do not match the tensors' sizes")
        side_bits = 8 * header["table_bytes"]
        at += header["table_bytes"]
        stream = raw[at : at + header["stream_bytes"]]
        # dequantise each table (a few hundred values), then gather: the same float32 values
        # as dequantize(q) elementwise, without an int64 and a float64 copy of every weight
        steps = [(dequantize(v, header["delta"]), c) for v, c in tables]
        if "rans_layout" in header:
            parts = rans_decode(stream, steps, header["rans_layout"])
        else:  # written by the constriction coder (before the interleaved one)
            parts = _rans_decode_constriction(np.frombuffer(stream, dtype="<u4"), steps)
        values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        if len(values) != count:
            raise ValueError(f"{len(values)} symbols decoded, header says {count}")
        return values, stream, side_bits
    nblocks = -(-count // block) if count else 0
    offsets = np.frombuffer(raw[at : at + 8 * nblocks], dtype="<u8").astype(np.uint64)
    at += 8 * nblocks
    stream = raw[at : at + header["stream_bytes"]]
    flat = _eg_decode_plus_one(stream, offsets, count, block, header["total_bits"])
    delta = header["delta"]
    return _mapped(flat, lambda v: _eg_values(v, delta), np.float32), stream, 64 * nblocks


@torch.no_grad()
def magnitude_prune(params: Any, fraction: float, *, scope: str = "tensor") -> int:
    """Zero the ``fraction`` of smallest-magnitude entries (ties at the threshold pruned).

    ``scope="tensor"`` (default, as ``torch.nn.utils.prune.l1_unstructured`` applies per
    module): each tensor loses ``fraction`` of its own entries. ``scope="global"``: one
    threshold over all ``params`` together; when tensors' scales differ, whole tensors go.
    Returns how many entries are zero after.
    """
    fraction = V.probability("fraction", fraction)
    if scope not in ("tensor", "global"):
        raise ValueError(f"scope must be 'tensor' or 'global', got {scope!r}")
    if isinstance(params, torch.Tensor):
        raise TypeError("params must be a list of tensors, got one tensor: pass [tensor]")
    tensors = list(params)
    if not tensors:
        raise ValueError("params must not be empty")
    bad = [type(p).__name__ for p in tensors if not isinstance(p, torch.Tensor)]
    if bad:
        raise TypeError(f"params must hold torch tensors, got {', '.join(sorted(set(bad)))}")
    groups = [tensors] if scope == "global" else [[p] for p in tensors]
    for group in groups:
        flat = torch.cat([p.detach().abs().flatten() for p in group])
        k = round(fraction * flat.numel())
        if k > 0:
            thr = torch.kthvalue(flat, k).values
            for p in group:
                p.masked_fill_(p.abs() <= thr, 0.0)
    return int(sum(int((p == 0).sum()) for p in tensors))
