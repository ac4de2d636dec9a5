"""Exponential ElGamal on secp256k1, through libsecp256k1 (the ``coincurve`` bindings).

``Enc(m; r) = (rG, mG + rY)`` for a public key ``Y = xG``; rerandomization adds an encryption of
0, ``(c1 + r'G, c2 + r'Y)``, which gives a fresh-looking ciphertext of the same message; the
scheme is additively homomorphic. Messages are small integers, decrypted by searching
``c2 - x c1`` over ``mG`` (``m = 0`` means ``c2 == x c1``, so the point at infinity, which
libsecp256k1 cannot represent, never has to be built for messages 0 and 1).

Randomness comes from ``rng`` (anything with ``randrange``): :class:`secrets.SystemRandom` by
default. A seeded :class:`random.Random` makes experiments repeatable and is **not secure**.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from coincurve import PrivateKey, PublicKey

# Order of the secp256k1 group (SEC 2, section 2.4.1).
ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_ONE = (1).to_bytes(32, "big")


class RandomSource(Protocol):
    def randrange(self, start: int, stop: int) -> int: ...

    def random(self) -> float: ...


def system_random() -> RandomSource:
    return secrets.SystemRandom()


def _scalar(rng: RandomSource) -> bytes:
    return rng.randrange(1, ORDER).to_bytes(32, "big")


class DecryptionError(ValueError):
    """The ciphertext does not decrypt to an allowed message under this key."""


@dataclass(frozen=True)
class Ciphertext:
    """An ElGamal ciphertext ``(c1, c2)`` of two curve points."""

    c1: PublicKey
    c2: PublicKey

    SIZE = 66  # two compressed points

    def to_bytes(self) -> bytes:
        return self.c1.format(compressed=True) + self.c2.format(compressed=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> Ciphertext:
        if not isinstance(data, (bytes, bytearray)) or len(data) != cls.SIZE:
            raise ValueError(
                f"a ciphertext is {cls.SIZE} bytes (two compressed points), got "
                f"{len(data) if isinstance(data, (bytes, bytearray)) else type(data).__name__}"
            )
        try:
            return cls(PublicKey(bytes(data[:33])), PublicKey(bytes(data[33:])))
        except ValueError as exc:
            raise ValueError(
                f"tampered or malformed ciphertext: not two curve points ({exc})"
            ) from None


@dataclass(frozen=True)
class KeyPair:
    secret: PrivateKey
    public: PublicKey


def keygen(rng: RandomSource | None = None) -> KeyPair:
    """A fresh key pair (``x`` uniform in ``[1, ORDER)``)."""
    rng = rng or system_random()
    sk = PrivateKey(_scalar(rng))
    return KeyPair(sk, sk.public_key)


def encrypt(m: int, public: PublicKey, rng: RandomSource | None = None) -> Ciphertext:
    """``Enc(m)`` for an integer ``0 <= m < 2^32``."""
    if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m < 2**32:
        raise ValueError(f"m must be an integer in [0, 2^32), got {m!r}")
    _check_public(public)
    rng = rng or system_random()
    r = _scalar(rng)
    c1 = PublicKey.from_valid_secret(r)
    c2 = public.multiply(r)
    if m:
        c2 = c2.add(m.to_bytes(32, "big"))  # + mG
    return Ciphertext(c1, c2)


def _check_ciphertext(name: str, c: Any) -> None:
    if not isinstance(c, Ciphertext):
        raise TypeError(f"{name} must be a Ciphertext, got {type(c).__name__}")


def _check_public(public: Any) -> None:
    if not isinstance(public, PublicKey):
        raise TypeError(f"public must be a coincurve PublicKey, got {type(public).__name__}")


def rerandomize(c: Ciphertext, public: PublicKey, rng: RandomSource | None = None) -> Ciphertext:
    """A fresh ciphertext of the same message: ``c + Enc(0)``."""
    _check_ciphertext("c", c)
    _check_public(public)
    rng = rng or system_random()
    r = _scalar(rng)
    return Ciphertext(c.c1.add(r), PublicKey.combine_keys([c.c2, public.multiply(r)]))


def add(a: Ciphertext, b: Ciphertext) -> Ciphertext:
    """Homomorphic addition: ``Enc(m1) + Enc(m2) = Enc(m1 + m2)``."""
    _check_ciphertext("a", a)
    _check_ciphertext("b", b)
    return Ciphertext(PublicKey.combine_keys([a.c1, b.c1]), PublicKey.combine_keys([a.c2, b.c2]))


def decrypt(c: Ciphertext, secret: PrivateKey, max_message: int = 1) -> int:
    """The message ``m`` in ``[0, max_message]`` with ``c2 = mG + x c1`` (linear search)."""
    if not isinstance(max_message, int) or not 0 <= max_message < 2**32:
        raise ValueError(f"max_message must be an integer in [0, 2^32), got {max_message!r}")
    _check_ciphertext("c", c)
    if not isinstance(secret, PrivateKey):
        raise TypeError(f"secret must be a coincurve PrivateKey, got {type(secret).__name__}")
    shared = c.c1.multiply(secret.secret)
    target = c.c2.format()
    point = shared
    if point.format() == target:
        return 0
    for m in range(1, max_message + 1):
        point = point.add(_ONE)
        if point.format() == target:
            return m
    raise DecryptionError(
        f"ciphertext does not decrypt to a message in [0, {max_message}] under this key "
        "(wrong key, tampered ciphertext, or a larger message)"
    )
