"""The locally pan-private COUNTNONZERO protocol: device, server and estimate.

Device (public key only): at start it draws randomized-response bits ``y0 = RR(0)``, ``y1 = RR(1)``
(each keeps its input with probability ``p = e^eps / (1 + e^eps)``), stores ``A = Enc(y0)``,
``B = Enc(y1)`` and forgets the bits and the randomness. Every step, event or not, it does the
same work: ``A <- ReRand(B if event else A)``, ``B <- ReRand(B)``. At the end it reports
``ReRand(A)``, an encryption of ``RR(event ever occurred)``. An intruder on the device sees only
fresh ciphertexts at every step; the server decrypts one RR bit per device and debiases:
``n_hat = (sum y - n (1 - p)) / (2p - 1)``, standard error ``sqrt(n p (1 - p)) / (2p - 1)``.

The selection ``B if event else A`` is a tuple index, so both branches run the same two
rerandomizations; Python gives no hard constant-time guarantee (see the README's threat model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from coincurve import PrivateKey, PublicKey

from icml25.pan_privacy.elgamal import (
    Ciphertext,
    RandomSource,
    decrypt,
    encrypt,
    rerandomize,
    system_random,
)


def check_epsilon(epsilon: float) -> float:
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise TypeError(f"epsilon must be a positive number, got {epsilon!r}") from None
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    return eps


def keep_probability(epsilon: float) -> float:
    """Randomized response keeps its bit with probability ``e^eps / (1 + e^eps)``."""
    eps = check_epsilon(epsilon)
    return 1.0 / (1.0 + math.exp(-eps))


class PanPrivateDevice:
    """One device: state of two ciphertexts, one report at the end.

    ``audit`` (tests and experiments only) is called once with ``(y0, y1)`` at start, so that a
    harness can check the report; the device keeps no reference to the bits.
    """

    __slots__ = ("_A", "_B", "_public", "_rng", "epsilon", "reported", "steps")

    def __init__(
        self,
        public: PublicKey,
        epsilon: float,
        rng: RandomSource | None = None,
        *,
        audit: Callable[[int, int], None] | None = None,
    ) -> None:
        if not isinstance(public, PublicKey):
            raise TypeError(f"public must be a coincurve PublicKey, got {type(public).__name__}")
        self.epsilon = check_epsilon(epsilon)
        self._public = public
        self._rng = rng or system_random()
        p = keep_probability(self.epsilon)
        y0 = 0 if self._rng.random() < p else 1
        y1 = 1 if self._rng.random() < p else 0
        if audit is not None:
            audit(y0, y1)
        self._A = encrypt(y0, public, self._rng)
        self._B = encrypt(y1, public, self._rng)
        del y0, y1
        self.steps = 0
        self.reported = False

    def observe(self, event: bool) -> None:
        """Process one time step; ``event`` says whether the event occurred in it."""
        if self.reported:
            raise RuntimeError("this device has already sent its report")
        if not isinstance(event, (bool, int)) or event not in (0, 1):
            raise ValueError(f"event must be a bool (or 0/1), got {event!r}")
        source = (self._A, self._B)[int(event)]
        self._A = rerandomize(source, self._public, self._rng)
        self._B = rerandomize(self._B, self._public, self._rng)
        self.steps += 1

    def run(self, events: Iterable[bool]) -> None:
        for e in events:
            self.observe(e)

    def state(self) -> bytes:
        """The whole local state an intruder can read: ``A || B`` (132 bytes)."""
        return self._A.to_bytes() + self._B.to_bytes()

    def report(self) -> bytes:
        """The single message to the server: a rerandomized ``A`` (66 bytes)."""
        if self.reported:
            raise RuntimeError("this device has already sent its report")
        self.reported = True
        return rerandomize(self._A, self._public, self._rng).to_bytes()


@dataclass(frozen=True)
class Estimate:
    """Debiased count of devices that saw the event, with its standard error."""

    count: float
    stderr: float
    n: int
    ones: int


def estimate_count(bits: Sequence[int], epsilon: float) -> Estimate:
    """``n_hat = (sum y - n (1 - p)) / (2p - 1)``; unbiased, ``se = sqrt(n p (1-p)) / (2p-1)``."""
    p = keep_probability(epsilon)
    n = len(bits)
    if n == 0:
        raise ValueError("bits is empty: no reports to estimate from")
    if any(b not in (0, 1) for b in bits):
        raise ValueError("bits must all be 0 or 1")
    ones = int(sum(bits))
    gap = 2 * p - 1
    if gap <= 0 or not math.isfinite((abs(ones - n * (1 - p)) + math.sqrt(n)) / gap):
        raise ValueError(
            f"epsilon={epsilon!r} is too small to estimate from in float arithmetic: the "
            f"report keeps its bit with probability 1/2 + {gap / 2:.3g}, so the estimate's "
            "scale 1/(2p - 1) overflows; use epsilon >= 1e-15"
        )
    return Estimate(
        count=(ones - n * (1 - p)) / gap,
        stderr=math.sqrt(n * p * (1 - p)) / gap,
        n=n,
        ones=ones,
    )


class Server:
    """Holds the secret key; decrypts reports and estimates the count."""

    def __init__(self, secret: PrivateKey, epsilon: float) -> None:
        if not isinstance(secret, PrivateKey):
            raise TypeError(f"secret must be a coincurve PrivateKey, got {type(secret).__name__}")
        self._secret = secret
        self.epsilon = check_epsilon(epsilon)

    def decrypt_report(self, report: bytes) -> int:
        return decrypt(Ciphertext.from_bytes(report), self._secret, max_message=1)

    def estimate(self, reports: Iterable[bytes]) -> Estimate:
        return estimate_count([self.decrypt_report(r) for r in reports], self.epsilon)
