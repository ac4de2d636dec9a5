"""Soup-of-Experts pilot: which router output (``linear`` or ``softmax``) the reproduction uses.

The paper calls the router "an MLP" and the output normalisation could not be recovered (no
official code; the paper's Table 2 is not public). Issue 49 asks to pick the form by a pilot on
a seed that no claim uses. This script runs the full budget's protocol for one seed (99; the
claims use 0-4) with both forms: each soup trained at every learning rate of the grid and
scored on **validation** windows only (mean over the seed's targets of the h-weighted loss);
the form with the lower best validation loss wins. It also prints the generic model's and, for
two targets, a specialist's tuned validation loss (the headroom the gate will ask for), and
the wall time of each training.

Run: ``python benchmarks/soup_of_experts_pilot.py [--seed 99] [--budget full]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml25.soup_of_experts.corpora import load_domains
from icml25.soup_of_experts.experiments import BUDGETS, Evaluator, draw_targets, make_setup, tune
from icml25.soup_of_experts.lm import ByteGPT
from icml25.soup_of_experts.soup import (
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    train_on_mixture,
    train_soup,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=99)
    ap.add_argument("--budget", default="full", choices=sorted(BUDGETS))
    ap.add_argument("--specialists", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    b, seed = BUDGETS[args.budget], args.seed
    d = load_domains(b.max_domains)
    setup = make_setup(
        d,
        seq_len=b.seq_len,
        train_bytes=b.train_bytes,
        val_windows=b.val_windows,
        test_windows=b.test_windows,
    )
    k = len(d.names)
    sampler = MixtureSampler(setup.train, seq_len=b.seq_len)
    val = Evaluator(setup.val)  # validation windows only: the test windows are never read
    meta = SparseDirichlet(k, max_support=min(b.max_support, k))
    hs = [h for _, h in draw_targets(k, b, meta, seed)]
    kw = {"steps": b.steps, "batch_size": b.batch, "seed": seed}

    def arch() -> ByteGPT:
        return ByteGPT(dim=b.dim, layers=b.layers, heads=b.heads, context=b.seq_len, seed=seed)

    def timed(fn):  # type: ignore[no-untyped-def]
        def run(lr: float):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            out = fn(lr)
            print(f"    lr {lr:g}: {time.perf_counter() - t0:.1f} s", flush=True)
            return out

        return run

    def generic(lr: float) -> ByteGPT:
        m = arch()
        train_on_mixture(m, sampler, sampler.natural_weights, lr=lr, **kw)
        return m

    def mean_val(m: ByteGPT) -> float:
        per = val.per_domain(m)
        return float(np.mean([val.target(per, h) for h in hs]))

    def soup_of(form: str):  # type: ignore[no-untyped-def]
        def train(lr: float) -> SoupOfExperts:
            s = SoupOfExperts(arch(), n_domains=k, n_experts=k, router_output=form, seed=seed)
            train_soup(s, sampler, meta, lr=lr, **kw)
            return s

        return train

    def soup_val(s: SoupOfExperts) -> float:
        return float(np.mean([val.soup_on_target(s, h, h) for h in hs]))

    print(f"seed {seed}, budget {args.budget}, grid {b.lr_grid}, {len(hs)} targets", flush=True)
    print("generic:", flush=True)
    g = tune(timed(generic), mean_val, b.lr_grid)
    print(f"  val {g.val} -> lr {g.lr:g}", flush=True)
    best = {}
    for form in ("linear", "softmax"):
        print(f"soup, router_output={form!r}:", flush=True)
        t = tune(timed(soup_of(form)), soup_val, b.lr_grid)
        best[form] = t.val[t.lr]
        print(f"  val {t.val} -> lr {t.lr:g}", flush=True)
    for h in hs[: args.specialists]:
        print(f"specialist for h = {np.round(h, 2).tolist()}:", flush=True)

        def spec(lr: float, h: np.ndarray = h) -> ByteGPT:
            m = arch()
            train_on_mixture(m, sampler, h, lr=lr, **kw)
            return m

        t = tune(timed(spec), lambda m, h=h: val.on_target(m, h), b.lr_grid)
        per = val.per_domain(g.model, h)
        print(f"  val {t.val} -> lr {t.lr:g}; generic {val.target(per, h):.3f}", flush=True)
    print(f"best validation loss by router output: {best}")
    print(f"chosen: {min(best, key=best.__getitem__)}")


if __name__ == "__main__":
    main()
