"""Counters that are *not* pan-private under repeated intrusions (the controls).

- :class:`PlaintextCounter`: the obvious device, state = "event seen" in the clear.
- :class:`RerandomizeOnEventDevice`: the encrypted protocol, but it only touches its state when
  the event occurs; the ciphertexts are secure, yet an intruder who looks twice sees whether
  they changed.
- :class:`OneShotPanPrivateBit`: an information-theoretic device in the style of Dwork et al.
  (2010): its state is one bit, ``Bernoulli(1/2)`` at start and redrawn from ``Bernoulli(p)``
  at each event, so a *single* intrusion sees a bit whose law moves only by a bounded
  likelihood ratio. Two intrusions reveal a redraw whenever the bit flips (probability 1/2).

All expose ``observe``, ``state`` (bytes) and ``report`` like :class:`PanPrivateDevice`.
"""

from __future__ import annotations

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
