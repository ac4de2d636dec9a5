"""Local pan-privacy for federated analytics (Feldman, McMillan, Rothblum & Talwar, ICML 2025).

Library: :class:`PanPrivateDevice` (state of two rerandomized ElGamal ciphertexts, one report),
:class:`Server` and :func:`estimate_count` (decryption and the debiased COUNTNONZERO estimate),
the cryptography (:mod:`icml25.pan_privacy.elgamal`: exponential ElGamal on secp256k1 through
libsecp256k1), and the non-pan-private controls (:mod:`icml25.pan_privacy.baselines`).
Reproduction: ``icml25 reproduce pan_privacy``.
"""

from icml25.core.registry import register
from icml25.pan_privacy.elgamal import (
    Ciphertext,
    DecryptionError,
    KeyPair,
    add,
    decrypt,
    encrypt,
    keygen,
    rerandomize,
)
from icml25.pan_privacy.protocol import (
    Estimate,
    PanPrivateDevice,
    Server,
    estimate_count,
    keep_probability,
)

__all__ = [
    "Ciphertext",
    "DecryptionError",
    "Estimate",
    "KeyPair",
    "PanPrivateDevice",
    "Server",
    "add",
    "decrypt",
    "encrypt",
    "estimate_count",
    "keep_probability",
    "keygen",
    "rerandomize",
]

register(
    slug="pan_privacy",
    title="Local Pan-privacy for Federated Analytics",
    authors="Vitaly Feldman, Audra McMillan, Guy N. Rothblum, Kunal Talwar",
    venue="ICML 2025 (PMLR 267:16573-16588, arXiv:2503.11850)",
    url="https://arxiv.org/abs/2503.11850",
    summary="Counting devices that saw an event, private even against repeated intrusions on "
    "the device, with rerandomizable public-key encryption.",
    quick_seconds=45,
    module="icml25.pan_privacy.reproduce",
)
