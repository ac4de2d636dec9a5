"""Pan-private counting: ElGamal on secp256k1, the device's state, the server's estimate."""

import math
import random

import numpy as np
import pytest
from coincurve import PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.pan_privacy import (
    Ciphertext,
    DecryptionError,
    PanPrivateDevice,
    Server,
    add,
    decrypt,
    encrypt,
    estimate_count,
    keep_probability,
    keygen,
    rerandomize,
)
from icml25.pan_privacy.baselines import PlaintextCounter, RerandomizeOnEventDevice
from icml25.pan_privacy.elgamal import ORDER

RNG = random.Random(1234)
KEYS = keygen(RNG)


def test_group_order_constant_matches_libsecp256k1():
    G = PublicKey.from_valid_secret((1).to_bytes(32, "big")).format(compressed=True)
    minus_G = PublicKey.from_valid_secret((ORDER - 1).to_bytes(32, "big")).format(compressed=True)
    assert G[1:] == minus_G[1:] and G[0] != minus_G[0]  # (n-1)G = -G: same x, other y parity
    with pytest.raises(ValueError):
        PublicKey.from_valid_secret(ORDER.to_bytes(32, "big"))


@pytest.mark.parametrize("m", [0, 1, 2, 7])
def test_encrypt_rerandomize_decrypt(m):
    c = encrypt(m, KEYS.public, RNG)
    c2 = rerandomize(c, KEYS.public, RNG)
    assert c2.to_bytes() != c.to_bytes()
    assert decrypt(c, KEYS.secret, max_message=10) == m
    assert decrypt(c2, KEYS.secret, max_message=10) == m
    assert decrypt(Ciphertext.from_bytes(c2.to_bytes()), KEYS.secret, max_message=10) == m


def test_homomorphic_addition():
    total = encrypt(0, KEYS.public, RNG)
    for m in (1, 0, 1, 1, 0, 1):
        total = add(total, encrypt(m, KEYS.public, RNG))
    assert decrypt(total, KEYS.secret, max_message=10) == 4


def test_wrong_key_and_tampering_are_detected():
    c = encrypt(1, KEYS.public, RNG)
    other = keygen(RNG)
    with pytest.raises(DecryptionError, match="wrong key"):
        decrypt(c, other.secret)
    data = bytearray(c.to_bytes())
    data[40] ^= 0x01  # flip a bit of c2's x coordinate
    try:
        tampered = Ciphertext.from_bytes(bytes(data))
    except ValueError as exc:
        assert "tampered" in str(exc)
    else:
        with pytest.raises(DecryptionError):
            decrypt(tampered, KEYS.secret)
    data = bytearray(c.to_bytes())
    data[0] = 0x07  # not a compressed-point prefix
    with pytest.raises(ValueError, match="tampered or malformed"):
        Ciphertext.from_bytes(bytes(data))
    with pytest.raises(ValueError, match="66 bytes"):
        Ciphertext.from_bytes(b"\x02" * 65)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=12), st.integers(0, 2**31))
def test_device_state_is_only_fresh_ciphertexts(events, seed):
    rng = random.Random(seed)
    bits: list[int] = []
    dev = PanPrivateDevice(KEYS.public, 1.0, rng, audit=lambda a, b: bits.extend((a, b)))
    previous = dev.state()
    seen = False
    for e in events:
        dev.observe(e)
        seen |= e
        state = dev.state()
        assert len(state) == 132 and state != previous  # rerandomized, event or not
        A, B = Ciphertext.from_bytes(state[:66]), Ciphertext.from_bytes(state[66:])
        assert decrypt(A, KEYS.secret) == (bits[1] if seen else bits[0])
        assert decrypt(B, KEYS.secret) == bits[1]
        previous = state
    # nothing but ciphertexts, the public key, epsilon, the rng and two counters is kept
    kept = {name: getattr(dev, name) for name in type(dev).__slots__}
    assert not hasattr(dev, "__dict__")
    for name, value in kept.items():
        if name in ("_A", "_B"):
            assert isinstance(value, Ciphertext)
        elif name == "_public":
            assert isinstance(value, PublicKey)
        else:
            assert name in ("_rng", "epsilon", "steps", "reported"), name
    report = dev.report()
    assert Server(KEYS.secret, 1.0).decrypt_report(report) == (bits[1] if seen else bits[0])


def test_states_after_event_and_no_event_have_the_same_bit_statistics():
    rng = random.Random(7)

    def states(event_at):
        out = []
        for _ in range(300):
            dev = PanPrivateDevice(KEYS.public, 1.0, rng)
            for t in range(5):
                dev.observe(t == event_at)
            out.append(np.unpackbits(np.frombuffer(dev.state(), dtype=np.uint8)))
        return np.array(out, dtype=float)

    with_event, without = states(2), states(-1)
    diff = with_event.mean(axis=0) - without.mean(axis=0)
    pooled = np.concatenate([with_event, without]).mean(axis=0)
    se = np.sqrt(np.maximum(pooled * (1 - pooled), 1e-12) * (2 / 300))
    constant = pooled * (1 - pooled) == 0  # the fixed bits of the 0x02/0x03 prefix bytes
    z = np.abs(diff[~constant]) / se[~constant]
    assert z.max() < 5.0  # ~1,000 bit positions: the max of |N(0,1)| is about 3.3
    # the plaintext control fails the same test trivially
    leaky = []
    for event_at in (2, -1):
        c = PlaintextCounter(1.0, rng)
        for t in range(5):
            c.observe(t == event_at)
        leaky.append(c.state())
    assert leaky[0] != leaky[1]


def test_rerandomize_on_event_control_leaks_by_equality():
    dev = RerandomizeOnEventDevice(KEYS.public, 1.0, random.Random(3))
    s0 = dev.state()
    dev.observe(False)
    assert dev.state() == s0
    dev.observe(True)
    assert dev.state() != s0


def test_estimate_is_unbiased_with_the_stated_standard_error():
    eps, n, truth = 1.0, 200, 70
    p = keep_probability(eps)
    assert p == pytest.approx(math.e / (1 + math.e))
    gen = np.random.default_rng(0)
    x = np.r_[np.ones(truth, int), np.zeros(n - truth, int)]
    counts = []
    for _ in range(4000):
        keep = gen.random(n) < p
        counts.append(estimate_count(list(np.where(keep, x, 1 - x)), eps).count)
    se = estimate_count([0] * n, eps).stderr
    assert np.mean(counts) == pytest.approx(truth, abs=4 * se / math.sqrt(4000))
    assert np.std(counts) == pytest.approx(se, rel=0.05)


def test_bad_inputs():
    with pytest.raises(ValueError, match="epsilon must be a positive"):
        PanPrivateDevice(KEYS.public, 0.0)
    with pytest.raises(ValueError, match="epsilon must be a positive"):
        Server(KEYS.secret, float("nan"))
    with pytest.raises(TypeError, match="PublicKey"):
        PanPrivateDevice(b"not a key", 1.0)  # type: ignore[arg-type]
    dev = PanPrivateDevice(KEYS.public, 1.0, random.Random(0))
    with pytest.raises(ValueError, match="event must be a bool"):
        dev.observe(2)
    dev.report()
    with pytest.raises(RuntimeError, match="already sent"):
        dev.observe(True)
    with pytest.raises(RuntimeError, match="already sent"):
        dev.report()
    with pytest.raises(ValueError, match="bits must all be 0 or 1"):
        estimate_count([0, 1, 2], 1.0)
    with pytest.raises(ValueError, match="empty"):
        estimate_count([], 1.0)
    with pytest.raises(ValueError, match="m must be an integer"):
        encrypt(-1, KEYS.public)
    other = keygen(random.Random(5))
    report = PanPrivateDevice(other.public, 1.0, random.Random(1)).report()
    with pytest.raises(DecryptionError):
        Server(KEYS.secret, 1.0).decrypt_report(report)
