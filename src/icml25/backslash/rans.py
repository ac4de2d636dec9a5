"""Interleaved rANS: an order-0 entropy coder, compiled (:mod:`icml25.backslash.kernels`, one
symbol at a time) where Numba is there, else in whole-array NumPy, whose reader and writer take
one NumPy step per *round* of lanes, not per symbol; both write the same stream.

The symbols of one tensor (indices ``0 .. K-1`` into its sorted distinct values) are dealt to
``N`` lanes, symbol ``i`` to lane ``i % N`` in round ``i // N``. Every lane is a range
asymmetric numeral system (Duda's rANS, interleaved as in Giesen's coders) with a state ``x``
of ``2W`` bits in ``[L, 2^W L)``, ``L = 2^W``, ``W``-bit output words, and the tensor's counts
quantised to frequencies ``f_k >= 1`` summing to ``M = 2^P`` (``P <= W``):

- encode ``k`` (rounds last to first, lanes last to first): if ``x >= 2^(2W-P) f_k``, emit the
  low ``W`` bits and shift them out; then ``x <- (x // f_k) 2^P + x mod f_k + c_k``
  (``c_k`` the cumulative frequency below ``k``);
- decode (rounds first to last, lanes first to last): ``s = x mod 2^P`` gives the ``k`` with
  ``c_k <= s < c_k + f_k`` (a lookup table of ``M`` entries, or a binary search where ``M`` is
  large); ``x <- f_k (x >> P) + s - c_k``; if ``x < L``, ``x <- (x << W) | next word``.

The encoder emits in the reverse of the order in which the decoder reads, so the words of a
round are read lane by lane from one stream, which NumPy does for all lanes at once
(``flatnonzero`` of the lanes that need a word, then a slice of the stream). The stream holds
the final states (two words a lane) and then the words. Every lane of a correct stream ends at
``x = L`` with the stream used up exactly: anything else is reported as a corrupt stream.

Two widths (:func:`plan`): ``W = 16`` (32-bit states, ``P = 16``: NumPy's ``uint32``
arithmetic, about twice as fast) where 16 bits of precision lose under 0.1% to the frequency
rounding, else ``W = 32`` (64-bit states) with the smallest ``P <= 28`` that does. Costs against
the order-0 entropy ``H``: that rounding, the coder's own loss (``x // f_k`` drops a fraction of
a bit now and then: measured 0.07% at ``W = P = 16``, 0.002% at ``W = 32``), and the lanes'
final states (:func:`lanes_for` takes as many lanes as keep them under 0.5% of ``H``; more
lanes, fewer NumPy rounds). All together under 0.7%.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.backslash import kernels

MAX_LANES = 1 << 15
LUT_MAX_P = 20
"""Decode through a lookup table of ``2^P`` entries up to this precision, above by binary
search (``np.searchsorted``) on the cumulative frequencies."""
STATE_SHARE = 0.005
"""Largest share of the entropy that the lanes' final states may take (:func:`lanes_for`)."""
ROUNDING_SHARE = 0.001
"""Largest share of the entropy that rounding the counts to frequencies may add (:func:`plan`)."""


def quantise_counts(counts: np.ndarray, precision: int) -> np.ndarray:
    """Frequencies ``f_k >= 1`` summing to ``2^precision``, each near ``c_k 2^P / n`` (the
    rounding's remainder goes to or comes from the most frequent symbols)."""
    c = np.asarray(counts, dtype=np.float64)
    m = 1 << precision
    if not 2 <= len(c) <= m // 2:
        raise ValueError(f"{len(c)} symbols: need 2 to {m // 2} at {precision} bits")
    f = np.maximum(1, np.round(c * (m / c.sum()))).astype(np.int64)
    order = np.argsort(-f, kind="stable")
    diff = m - int(f.sum())
    i = 0
    while diff != 0:  # rounding moves the sum by under K / 2, the largest symbols absorb it
        j = order[i % len(order)]
        step = diff if diff > 0 else max(diff, 1 - int(f[j]))
        f[j] += step
        diff -= step
        i += 1
    return f


def cross_entropy_bits(counts: np.ndarray, freqs: np.ndarray, precision: int) -> float:
    """Bits of an ideal coder of symbols with these counts under frequencies ``freqs / 2^P``."""
    c = np.asarray(counts, dtype=np.float64)
    return float((c * (precision - np.log2(np.asarray(freqs, dtype=np.float64)))).sum())


@dataclass(frozen=True)
class Plan:
    """How one tensor is coded: word width, precision, frequencies and lanes."""

    width: int  # W: 16 or 32
    precision: int  # P
    freqs: np.ndarray  # int64, sum 2^P
    lanes: int


def plan(counts: np.ndarray, entropy_bits: float) -> Plan:
    """The narrowest width and smallest precision whose frequency rounding costs at most
    :data:`ROUNDING_SHARE` of the entropy (``W = 16, P = 16`` first, then ``W = 32`` with
    ``P = 18 .. 28``), and the lanes for it."""
    counts = np.asarray(counts)
    n = int(counts.sum())
    for width, precision in [(16, 16), *((32, p) for p in range(18, 29, 2))]:
        if len(counts) > (1 << precision) // 2:
            continue
        f = quantise_counts(counts, precision)
        loss = cross_entropy_bits(counts, f, precision) - entropy_bits
        if loss <= ROUNDING_SHARE * entropy_bits or precision == 28:
            return Plan(width, precision, f, lanes_for(n, entropy_bits, width))
    raise ValueError(f"{len(counts)} distinct symbols: more than a 28-bit model can hold")


def lanes_for(n: int, entropy_bits: float, width: int) -> int:
    """Lanes for ``n`` symbols: their final states (``2W`` bits each) under
    :data:`STATE_SHARE` of the entropy, at least 1, at most :data:`MAX_LANES` and ``n``."""
    return int(max(1, min(MAX_LANES, int(STATE_SHARE * entropy_bits / (2 * width)), n)))


def _types(width: int) -> tuple[Any, Any]:
    if width == 16:
        return np.uint32, np.uint16
    if width == 32:
        return np.uint64, np.uint32
    raise ValueError(f"width must be 16 or 32, got {width!r}")


def encode(index: np.ndarray, p: Plan) -> np.ndarray:
    """The stream (``W``-bit words: each lane's final state as two words, low first, then the
    emitted words in reading order) of symbol indices ``index`` (``0 .. K-1``): compiled
    (:mod:`~icml25.backslash.kernels`) where Numba is there, else :func:`encode_numpy`."""
    index = np.asarray(index).ravel()
    if index.dtype not in (np.int32, np.int64):
        index = index.astype(np.int64)
    if len(index) and (int(index.min()) < 0 or int(index.max()) >= len(p.freqs)):
        raise ValueError(
            f"index must lie in 0 .. {len(p.freqs) - 1} (the plan's symbols), got "
            f"{int(index.min())} .. {int(index.max())}"
        )
    if not kernels.AVAILABLE:
        return encode_numpy(index, p)
    state_t, word_t = _types(p.width)
    f = p.freqs.astype(state_t)
    c = (np.cumsum(p.freqs) - p.freqs).astype(state_t)
    x = np.full(p.lanes, 1 << p.width, dtype=state_t)
    buf = np.empty(len(index), dtype=word_t)
    w, low = state_t(p.width), state_t((1 << p.width) - 1)
    shift = state_t(2 * p.width - p.precision)
    at = kernels.rans_encode(index, f, c, x, buf, w, state_t(p.precision), shift, low)
    states = np.empty(2 * p.lanes, dtype=word_t)
    states[0::2] = x & low
    states[1::2] = x >> w
    return np.concatenate([states, buf[at:]])


def encode_numpy(index: np.ndarray, p: Plan) -> np.ndarray:
    """:func:`encode` in whole-array NumPy, one step per round of lanes (the fallback without
    Numba, and the tests' reference)."""
    state_t, word_t = _types(p.width)
    index = np.asarray(index, dtype=np.int64).ravel()
    n, lanes, w = len(index), p.lanes, state_t(p.width)
    f = p.freqs.astype(state_t)
    c = (np.cumsum(p.freqs) - p.freqs).astype(state_t)
    xmax = f << state_t(2 * p.width - p.precision)
    prec, low = state_t(p.precision), state_t((1 << p.width) - 1)
    x = np.full(lanes, 1 << p.width, dtype=state_t)
    chunks = []
    for r in range(-(-n // lanes) - 1, -1, -1):
        k = index[r * lanes : (r + 1) * lanes]
        xs = x[: len(k)]  # a view: updated in place
        out = np.flatnonzero(xs >= xmax[k])[::-1]
        if len(out):
            chunks.append((xs[out] & low).astype(word_t))
            xs[out] >>= w
        fk = f[k]
        quo, rem = np.divmod(xs, fk)  # one division for both
        xs[:] = (quo << prec) + rem + c[k]
    states = np.empty(2 * lanes, dtype=word_t)
    states[0::2] = x & low
    states[1::2] = x >> w
    words = np.concatenate(chunks)[::-1] if chunks else np.zeros(0, word_t)
    return np.concatenate([states, words])


def decode(stream: np.ndarray, n: int, p: Plan, values: np.ndarray | None = None) -> np.ndarray:
    """The ``n`` symbol indices (``int64``) of :func:`encode`'s stream, or ``values[index]``
    where ``values`` is given (one gather instead of two); a corrupt stream raises
    ``ValueError``."""
    state_t, word_t = _types(p.width)
    stream = np.asarray(stream)
    if stream.dtype.kind != "u" or stream.dtype.itemsize != np.dtype(word_t).itemsize:
        raise ValueError(f"stream must be {p.width}-bit unsigned words, got dtype {stream.dtype}")
    lanes, w = p.lanes, state_t(p.width)
    if len(stream) < 2 * lanes:
        raise ValueError("corrupt stream: shorter than its lanes' states")
    st = stream[: 2 * lanes].astype(state_t)
    x = st[0::2] | (st[1::2] << w)
    big = state_t(1 << p.width)
    if np.any(x < big):
        raise ValueError("corrupt stream: a lane's state is below the coder's range")
    f = p.freqs.astype(state_t)
    c = (np.cumsum(p.freqs) - p.freqs).astype(state_t)
    prec, smask = state_t(p.precision), state_t((1 << p.precision) - 1)
    lut = p.precision <= LUT_MAX_P
    if kernels.AVAILABLE:
        sym = np.repeat(np.arange(len(f), dtype=np.int64), p.freqs) if lut else np.zeros(0, int)
        words_in = stream[2 * lanes :] if len(stream) > 2 * lanes else np.zeros(1, word_t)
        nw = len(stream) - 2 * lanes
        out, err = kernels.rans_decode(words_in, nw, x, n, f, c, w, prec, big, smask, sym)
        if err == kernels.ENDS_EARLY:
            raise ValueError("corrupt stream: it ends before its last symbol")
        if err != kernels.OK:
            raise ValueError("corrupt stream: the lanes do not end where the encoder began")
        return out if values is None else values[out]
    words = stream[2 * lanes :].astype(state_t)
    if lut:
        sym = np.repeat(np.arange(len(f), dtype=np.int64), p.freqs)
        lut_f = f[sym]
        lut_b = np.arange(1 << p.precision, dtype=state_t) - c[sym]
    out = np.empty(n, dtype=state_t if lut else np.int64)
    at = 0
    for r in range(-(-n // lanes)):
        xs = x[: min(lanes, n - r * lanes)]  # a view: updated in place
        s = xs & smask
        if lut:
            out[r * lanes : r * lanes + len(xs)] = s  # slots, mapped to symbols at the end
            si = s.astype(np.intp)  # NumPy gathers twice as fast by intp as by uint32
            xs[:] = lut_f[si] * (xs >> prec) + lut_b[si]
        else:
            k = np.searchsorted(c, s, side="right") - 1
            out[r * lanes : r * lanes + len(xs)] = k
            xs[:] = f[k] * (xs >> prec) + (s - c[k])
        need = np.flatnonzero(xs < big)
        if len(need):
            if at + len(need) > len(words):
                raise ValueError("corrupt stream: it ends before its last symbol")
            xs[need] = (xs[need] << w) | words[at : at + len(need)]
            at += len(need)
    if at != len(words) or np.any(x != big):
        raise ValueError("corrupt stream: the lanes do not end where the encoder began")
    if lut:
        return (sym if values is None else values[sym])[out]
    return out if values is None else values[out]
