"""Enzyme RAG on real data: the cost of one full-budget seed, measured on seed 99 (no claim uses
it) to size the real full config before its run (issue 52).

On the real join and split of ``REAL_CONFIGS["full"]`` (all training substrates, enzymes up to
its ``max_length``): the per-query MSAs of the training pairs (first fit; cached on disk after),
the guidance classifier's cost per step, then the generator's cost per step (two fits with
different step counts, the MSAs read from the cache), for 1 and 2 layers, and the cost of
sampling one target's ``samples`` sequences with its retrieved rows.
Prints CPU seconds; nothing is judged.

Run (with the real data located as for the reproduction; one thread):
``OMP_NUM_THREADS=1 python benchmarks/enzyme_rag_real_pilot.py``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from icml25.enzyme_rag import experiments_real as real
from icml25.enzyme_rag.chem import molecule_features
from icml25.enzyme_rag.experiments_real_data import load_join, locate_real_data
from icml25.enzyme_rag.model import EnzymeSubstrateClassifier
from icml25.enzyme_rag.sequences import encode
from icml25.enzyme_rag.training import pad_tokens, train_classifier

SEED = 99


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, nargs=2, default=[10, 40])
    args = ap.parse_args()
    torch.set_num_threads(1)
    found = locate_real_data()
    if isinstance(found, str):
        raise SystemExit(f"real data not found: {found}")
    base = real.REAL_CONFIGS["full"]
    t = time.process_time()
    data, ec_of = load_join(*found)
    st = real._setup(base, data, ec_of)
    print(f"setup {time.process_time() - t:.0f} CPU-s: {st.stats}", flush=True)
    train_seqs = [st.data.sequences[e] for e in st.train_ids]
    mols = molecule_features(st.train_smiles, n_bits=256)
    t = time.process_time()
    train_classifier(
        EnzymeSubstrateClassifier(length=None, mol_dim=256),
        sequences=pad_tokens(train_seqs),
        mol_features=mols,
        pairs=st.train_pairs,
        steps=10,
        batch_size=base.clf_batch,
        seed=SEED,
    )
    clf_step = (time.process_time() - t) / 10
    print(
        f"guidance classifier: {clf_step:.2f} CPU-s a step of {base.clf_batch} pairs "
        f"(x {base.clf_steps} steps = {clf_step * base.clf_steps / 60:.1f} CPU-min a seed)",
        flush=True,
    )
    for layers in args.layers:
        cfg = replace(base, layers=layers)
        costs = []
        for steps in args.steps:
            t = time.process_time()
            rag = real.fit_conditioned(replace(cfg, gen_steps=steps, clf_steps=10), st, SEED)
            costs.append(time.process_time() - t)
            print(f"layers {layers}, {steps} steps: fit {costs[-1]:.1f} CPU-s", flush=True)
        (s1, s2), (c1, c2) = args.steps, costs
        per_step = (c2 - c1) / (s2 - s1)
        smi = st.data.smiles[st.targets[0]]
        rows = [train_seqs[j] for j in rag.retriever_.retrieve(smi, d=cfg.d).enzymes]
        context = encode(st.aligner(rows), name="aligned rows")
        t = time.process_time()
        rag.generate_tokens(
            smi,
            n=cfg.samples,
            d=0,
            context=context,
            seed=SEED,
            positions_per_step=cfg.positions_per_step,
        )
        sample_s = time.process_time() - t
        print(
            f"layers {layers}: {per_step:.3f} CPU-s a generator step; sampling {cfg.samples} "
            f"sequences for one target {sample_s:.1f} CPU-s (x {len(st.targets)} targets x 5 "
            f"generated arms = {sample_s * len(st.targets) * 5 / 60:.1f} CPU-min a seed)",
            flush=True,
        )


if __name__ == "__main__":
    main()
