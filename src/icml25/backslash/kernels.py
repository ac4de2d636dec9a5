"""Compiled loops (Numba) for the two coders: the same streams as the whole-array NumPy code
in :mod:`~icml25.backslash.rans` and :mod:`~icml25.backslash.coding`, one symbol at a time.

NumPy's rANS takes one step per round of lanes and its Exp-Golomb one step per codeword of a
block; either way each symbol costs about ten passes over memory, and a round's arrays are
small enough that Python's per-call overhead counts. These loops visit each symbol once. They
write and read byte for byte the same streams (tests compare them with the NumPy code on random
inputs), so a file does not depend on which path wrote it.

Used when Numba imports (a dependency of the package) and ``ICML25_NUMBA`` is not ``0``; the
NumPy code is the fallback and the tests' reference. The first call in a process compiles
(about a second each; cached on disk where the package folder or Numba's cache is writable).
Corrupt streams: the loops return an error code, the callers raise the same ``ValueError`` as
the NumPy code.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

try:  # pragma: no cover - exercised where numba is missing
    import numba
    from numba.cpython.unsafe.numbers import leading_zeros  # LLVM's ctlz, in compiled code

    AVAILABLE = os.environ.get("ICML25_NUMBA", "1") != "0"
except ImportError:  # pragma: no cover
    numba = None  # type: ignore[assignment]
    AVAILABLE = False

OK, ENDS_EARLY, BAD_END, TOO_LONG = 0, 1, 2, 3
"""Error codes of the decoding loops."""


def _njit(fn: Any) -> Any:
    return numba.njit(cache=True, nogil=True)(fn) if numba is not None else fn


@_njit
def rans_encode(index, freqs, cum, x, buf, w, precision, shift, low):  # type: ignore[no-untyped-def]
    """Encode ``index`` into lanes of states ``x`` (updated in place) and the word buffer
    ``buf`` (``len(index)`` words, filled from its end); returns where the words begin. The
    words ``buf[at:]`` are in reading order, as :func:`icml25.backslash.rans.encode` writes
    them. ``freqs``, ``cum``, ``x`` and the scalars ``w, precision, shift = 2W - P, low = 2^W - 1``
    share the state type (``uint32`` or ``uint64``), which picks the compiled version."""
    n = index.shape[0]
    lanes = x.shape[0]
    at = n  # emitted words fill the buffer from its end
    for r in range((n + lanes - 1) // lanes - 1, -1, -1):
        base = r * lanes
        for j in range(min(lanes, n - base) - 1, -1, -1):
            k = index[base + j]
            f = freqs[k]
            xs = x[j]
            if xs >= f << shift:
                at -= 1
                buf[at] = xs & low
                xs >>= w
            x[j] = ((xs // f) << precision) + xs % f + cum[k]
    return at


@_njit
def rans_decode(words, nw, x, n, freqs, cum, w, precision, big, smask, lut_sym):  # type: ignore[no-untyped-def]
    """``(index, error)``: the ``n`` symbol indices of a stream whose lanes start at states
    ``x`` (updated in place) and whose ``nw`` words follow them in ``words`` (at least one
    element: an empty stream is passed as one zero word); ``lut_sym`` maps each of the ``2^P``
    slots to its symbol (empty: binary search on ``cum``). ``freqs, cum, x`` and the scalars
    ``w, precision, big = 2^W, smask = 2^P - 1`` in the state type, as for :func:`rans_encode`.
    The renormalisation is branch-free (a word is read every step, kept where needed): a
    third faster than a branch taken at random."""
    lanes = x.shape[0]
    out = np.empty(n, dtype=np.int64)
    at = 0
    last = words.shape[0] - 1
    use_lut = lut_sym.shape[0] > 0
    nsym = cum.shape[0]
    for base in range(0, n, lanes):
        for j in range(min(lanes, n - base)):
            xs = x[j]
            s = xs & smask
            if use_lut:
                k = lut_sym[s]
            else:
                lo, hi = 0, nsym - 1  # the last k with cum[k] <= s
                while lo < hi:
                    mid = (lo + hi + 1) >> 1
                    if cum[mid] <= s:
                        lo = mid
                    else:
                        hi = mid - 1
                k = lo
            out[base + j] = k
            xs = freqs[k] * (xs >> precision) + s - cum[k]
            need = xs < big
            refill = (xs << w) | words[min(at, last)]
            x[j] = refill if need else xs
            at += need
    if at > nw:
        return out, ENDS_EARLY
    if at < nw:
        return out, BAD_END
    for j in range(lanes):
        if x[j] != big:
            return out, BAD_END
    return out, OK


@_njit
def _eg_length(v):  # type: ignore[no-untyped-def]
    """Bits of the Exp-Golomb codeword of ``u = v - 1`` (``v >= 1``, uint64):
    ``2 floor(log2 v) + 1 = 2 (64 - leading zeros) - 1``."""
    return 127 - 2 * np.int64(leading_zeros(v))


@_njit
def zigzag(q, out):  # type: ignore[no-untyped-def]
    """``out[i] = 2|q_i| - (q_i > 0)`` (uint64) for int64 ``q``, as
    :func:`~icml25.backslash.coding.zigzag`."""
    for i in range(q.shape[0]):
        a = q[i]
        out[i] = np.uint64(2 * abs(a) - (1 if a > 0 else 0))


@_njit
def eg_bits(u):  # type: ignore[no-untyped-def]
    """Total bits of the Exp-Golomb codewords of ``u`` (uint64)."""
    total = 0
    for i in range(u.shape[0]):
        total += _eg_length(u[i] + np.uint64(1))
    return total


@_njit
def eg_encode(u, block, nwords):  # type: ignore[no-untyped-def]
    """``(words, offsets)`` of the order-0 Exp-Golomb codewords of ``u`` (uint64) in big-endian
    bit order in ``nwords`` 64-bit words (one beyond the last bit), and the bit offset of every
    block. Branch-free: a codeword's bits past its first word (none where it fits) are or-ed
    into the next word under a mask."""
    n = u.shape[0]
    words = np.zeros(nwords, dtype=np.uint64)
    nblocks = (n + block - 1) // block
    offsets = np.zeros(nblocks, dtype=np.uint64)
    p = 0
    for b in range(nblocks):
        offsets[b] = p
        for i in range(b * block, min(n, (b + 1) * block)):
            v = u[i] + np.uint64(1)
            lg = _eg_length(v)
            end = (p & 63) + lg  # 1 .. 126
            wi = p >> 6
            words[wi] |= (v << np.uint64(max(64 - end, 0))) >> np.uint64(max(end - 64, 0))
            spill = np.uint64(0) - np.uint64(end > 64)  # all ones where the codeword spills
            words[wi + 1] |= (v << np.uint64((128 - end) & 63)) & spill
            p += lg
    return words, offsets


@_njit
def eg_decode(words, offsets, count, block, total_bits):  # type: ignore[no-untyped-def]
    """``(u + 1 as uint32, error)`` of ``count`` codewords from 64-bit words (two zero words
    after the stream), block by block; each block must end where the next begins."""
    out = np.empty(count, dtype=np.uint32)
    nblocks = offsets.shape[0]
    limit = words.shape[0] - 1
    for b in range(nblocks):
        p = np.int64(offsets[b])
        end = total_bits if b == nblocks - 1 else np.int64(offsets[b + 1])
        for i in range(b * block, min(count, (b + 1) * block)):
            wi = p >> 6
            if wi >= limit:
                return out, ENDS_EARLY
            r = p & 63
            w = words[wi] << np.uint64(r)
            if r:
                w |= words[wi + 1] >> np.uint64(64 - r)
            z = np.int64(leading_zeros(w)) if w else 64
            if z > 31:
                return out, TOO_LONG
            out[i] = np.uint32(w >> np.uint64(63 - 2 * z))
            p += 2 * z + 1
        if p != end:
            return out, BAD_END
    return out, OK
