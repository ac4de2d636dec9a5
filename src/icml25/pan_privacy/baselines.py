"""Counters that are *not* pan-private under repeated intrusions (the controls), and the two
damaged counters of the T-ratio claims (their sensitivity arms).

- :class:`PlaintextCounter`: the obvious device, state = "event seen" in the clear.
- :class:`RerandomizeOnEventDevice`: the encrypted protocol, but it only touches its state when
  the event occurs; the ciphertexts are secure, yet an intruder who looks twice sees whether
  they changed.
- :class:`OneShotPanPrivateBit`: an information-theoretic device in the style of Dwork et al.
  (2010): its state is one bit, ``Bernoulli(1/2)`` at start and redrawn from ``Bernoulli(p)``
  at each event, so a *single* intrusion sees a bit whose law moves only by a bounded
  likelihood ratio. Two intrusions reveal a redraw whenever the bit flips (probability 1/2).
- :class:`NoisySwitchDevice`: an information-theoretic pan-private counter, of the kind whose
  error the paper's lower bound says must grow with T (ours; the paper gives none): the same
  two-slot switch kept as plaintext bits and hidden at every step by fresh noise (each bit
  flipped with probability ``1 / (1 + e^eps)``) instead of by encryption. It is eps-DP per
  event against any number of intrusions and the report, and its report is randomized
  response whose bias decays like ``tanh(eps/2)^(T+1)``: its error grows with T.
- :class:`PerStepBudgetCounter`: a device that spends eps at every step of its horizon (T
  randomized responses of its seen bit, privacy loss T*eps): its error *shrinks* with T.

The controls expose ``observe`` and ``state`` (bytes) like :class:`PanPrivateDevice`; the two
damaged counters also ``report``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from coincurve import PublicKey

from icml25.pan_privacy.elgamal import RandomSource, encrypt, rerandomize, system_random
from icml25.pan_privacy.protocol import check_epsilon, keep_probability


class PlaintextCounter:
    def __init__(self, epsilon: float, rng: RandomSource | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self._rng = rng or system_random()
        self.seen = 0

    def observe(self, event: bool) -> None:
        self.seen |= int(bool(event))

    def state(self) -> bytes:
        return bytes([self.seen])

    def report_bit(self) -> int:
        """Randomized response of the seen bit (what a local-DP-only device would send)."""
        p = keep_probability(self.epsilon)
        return self.seen if self._rng.random() < p else 1 - self.seen


class RerandomizeOnEventDevice:
    def __init__(self, public: PublicKey, epsilon: float, rng: RandomSource | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self._public = public
        self._rng = rng or system_random()
        p = keep_probability(self.epsilon)
        y0 = 0 if self._rng.random() < p else 1
        y1 = 1 if self._rng.random() < p else 0
        self._A = encrypt(y0, public, self._rng)
        self._B = encrypt(y1, public, self._rng)

    def observe(self, event: bool) -> None:
        if event:  # the flaw: no work, no change, when nothing happens
            self._A = rerandomize(self._B, self._public, self._rng)
            self._B = rerandomize(self._B, self._public, self._rng)

    def state(self) -> bytes:
        return self._A.to_bytes() + self._B.to_bytes()


class OneShotPanPrivateBit:
    def __init__(self, epsilon: float, rng: RandomSource | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self._rng = rng or system_random()
        self._p = keep_probability(self.epsilon)
        self.bit = int(self._rng.random() < 0.5)

    def observe(self, event: bool) -> None:
        if event:
            self.bit = int(self._rng.random() < self._p)

    def state(self) -> bytes:
        return bytes([self.bit])


def flip_probability(epsilon: float) -> float:
    """The noise of :class:`NoisySwitchDevice`: each bit flips w.p. ``1 / (1 + e^eps)``, the
    least that hides one step's switch at level eps (``(1 - q) / q = e^eps``)."""
    return 1.0 - keep_probability(epsilon)


def switch_step(a: int, b: int, event: bool, flip_a: int, flip_b: int) -> tuple[int, int]:
    """One step of :class:`NoisySwitchDevice` given its two noise bits:
    ``a <- (b if event else a) XOR flip_a``, ``b <- b XOR flip_b``."""
    return (b if event else a) ^ flip_a, b ^ flip_b


def switch_signal(T: int, epsilon: float) -> float:
    """``2 p_T - 1`` of the report of :class:`NoisySwitchDevice` after ``T`` steps: it keeps
    its seen bit with probability ``p_T = (1 + tanh(eps/2)^(T+1)) / 2``, whatever the events'
    timing (the start is ``a = RR(0)``, ``b = RR(1)``, and each step multiplies both bits'
    signal by ``1 - 2q = tanh(eps/2)``). Returned directly: ``p_T`` itself rounds to 1/2."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 0:
        raise ValueError(f"T must be an integer >= 0, got {T!r}")
    return math.tanh(check_epsilon(epsilon) / 2) ** (T + 1)


class NoisySwitchDevice:
    """The protocol's switch without its encryption: plaintext bits, noise at every step.

    Start: ``a = RR(0)``, ``b = RR(1)``. Every step, event or not: ``a <- (b if event else a)``
    and ``b <- b``, each then flipped with probability ``q = 1 / (1 + e^eps)``. Report ``a``.
    Pan-privacy, information-theoretically: when ``a == b`` the step's law does not depend on
    the event; when ``a != b``, ``P(a' = a | no event) / P(a' = a | event) = (1 - q) / q =
    e^eps``; ``b'`` ignores the event. So the whole sequence of states, read at any times, and
    the report are eps-DP in any one step's event. The price: the report keeps its seen bit
    only with probability ``(1 + tanh(eps/2)^(T+1)) / 2`` (:func:`switch_signal`).
    """

    def __init__(self, epsilon: float, rng: RandomSource | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self._rng = rng or system_random()
        p = keep_probability(self.epsilon)
        self._q = 1.0 - p
        self._a = 0 if self._rng.random() < p else 1
        self._b = 1 if self._rng.random() < p else 0
        self.steps = 0

    def observe(self, event: bool) -> None:
        fa, fb = (int(self._rng.random() < self._q) for _ in range(2))
        self._a, self._b = switch_step(self._a, self._b, bool(event), fa, fb)
        self.steps += 1

    def run(self, events: Iterable[bool]) -> None:
        for e in events:
            self.observe(e)

    def state(self) -> bytes:
        return bytes([self._a, self._b])

    def report(self) -> int:
        return self._a


class PerStepBudgetCounter:
    """Keeps its seen bit in the clear and reports one randomized response of it per step of
    its horizon: eps per step, T*eps in all. Not pan-private (the state is plaintext) and not
    eps-DP either; the mean of its ``T`` reports has variance ``p (1 - p) / T``."""

    def __init__(self, epsilon: float, rng: RandomSource | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self._rng = rng or system_random()
        self.seen = 0
        self.steps = 0

    def observe(self, event: bool) -> None:
        self.seen |= int(bool(event))
        self.steps += 1

    def run(self, events: Iterable[bool]) -> None:
        for e in events:
            self.observe(e)

    def state(self) -> bytes:
        return bytes([self.seen])

    def report(self) -> list[int]:
        p = keep_probability(self.epsilon)
        return [self.seen if self._rng.random() < p else 1 - self.seen for _ in range(self.steps)]
