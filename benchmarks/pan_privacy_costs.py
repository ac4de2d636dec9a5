"""Device and server costs of the pan-private counter with production parameters (secp256k1).

Times, in one run: one device step (two rerandomizations, event or not), a device's start (two
encryptions), a report, and the server's decryption of one report, each against the primitive
they are built from, one libsecp256k1 scalar multiplication, and against the plaintext counter's
step (what pan-privacy costs on the device). Run: ``python benchmarks/pan_privacy_costs.py``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from coincurve import PublicKey

from icml25.pan_privacy import PanPrivateDevice, Server, keygen
from icml25.pan_privacy.baselines import PlaintextCounter


def per_call(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> None:
    rng = random.Random(0)
    keys = keygen(rng)
    scalar = rng.randrange(1, 2**255).to_bytes(32, "big")
    t_mul = per_call(lambda: keys.public.multiply(scalar), 5000)
    t_base = per_call(lambda: PublicKey.from_valid_secret(scalar), 5000)
    dev = PanPrivateDevice(keys.public, 1.0, rng)
    t_step0 = per_call(lambda: dev.observe(False), 5000)
    t_step1 = per_call(lambda: dev.observe(True), 5000)
    t_init = per_call(lambda: PanPrivateDevice(keys.public, 1.0, rng), 2000)
    reports = [PanPrivateDevice(keys.public, 1.0, rng).report() for _ in range(5000)]
    server = Server(keys.secret, 1.0)
    t0 = time.perf_counter()
    bits = [server.decrypt_report(r) for r in reports]
    t_dec = (time.perf_counter() - t0) / len(reports)
    plain = PlaintextCounter(1.0, rng)
    t_plain = per_call(lambda: plain.observe(True), 100_000)
    print(f"{'operation':<42} {'time':>10} {'/ scalar mult':>14}")
    rows = [
        ("scalar multiplication k*Y (libsecp256k1)", t_mul),
        ("base-point multiplication k*G", t_base),
        ("device step, no event", t_step0),
        ("device step, event", t_step1),
        ("device start (2 encryptions)", t_init),
        ("server: decrypt one report", t_dec),
    ]
    for name, t in rows:
        print(f"{name:<42} {t * 1e6:>8.1f}us {t / t_mul:>13.2f}x")
    print(
        f"\nevent / no-event step time: {t_step1 / t_step0:.3f} (same work by design)\n"
        f"device step vs plaintext counter step: {t_step0 / t_plain:.0f}x "
        f"({t_plain * 1e9:.0f} ns)\n"
        f"server throughput: {1 / t_dec:,.0f} reports/s on one core "
        f"({sum(bits)} ones in {len(bits)})"
    )


if __name__ == "__main__":
    main()
