"""SENZ's library on real enzymes: EVODEX reactions joined with Swiss-Prot sequences, a
zero-shot split, per-query alignments, training, generation and evaluation with real tools.

A smoke run of the whole real-data path, not a reproduction (no claims, no verdicts: issue 52
leaves those for a later session). Run ``make enzyme-data`` once (evodex, pyhmmer, clustalo,
ncbi-blast+, metastudent-data), then::

    python examples/enzyme_rag_real_data.py --max-length 200 --substrates 60 --steps 30

``--evodex`` / ``--blastdb`` point at other copies of the files. It prints the join and the
split, trains a small generator (the reproduction's synthetic-benchmark settings: dim 32, one
axial block), generates for a few held-out substrates and scores the samples with BLASTp
identity to the target's natural enzymes and to the training set (novelty).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from icml25.enzyme_rag import EnzymeRAG
from icml25.enzyme_rag.data import (
    EnzymeData,
    blastdbcmd_sequences,
    join_sequences,
    read_evodex_reactions,
    zero_shot_split,
)
from icml25.enzyme_rag.evaluation import blastp_identity

DB = "/usr/share/metastudent-data/dataset_201401/{}/goasp.fasta"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--evodex", type=Path, default=None, help="selected_reactions.csv")
    ap.add_argument("--blastdb", nargs="+", default=[DB.format(a) for a in ("MFO", "BPO", "CCO")])
    ap.add_argument("--max-length", type=int, default=200, help="longest enzyme kept")
    ap.add_argument("--substrates", type=int, default=60, help="training substrates used")
    ap.add_argument("--targets", type=int, default=5, help="held-out substrates generated for")
    ap.add_argument("--steps", type=int, default=30, help="generator steps")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.process_time()

    reactions = read_evodex_reactions(args.evodex)
    wanted = {a for r in reactions for a in r.accessions}
    seqs = blastdbcmd_sequences(args.blastdb, wanted)
    data = join_sequences(reactions, seqs, max_length=args.max_length)
    print(f"join: {len(data.smiles)} substrates, {len(data.ids)} enzymes, {len(data.pairs)} pairs")
    split = zero_shot_split(data, seed=args.seed)
    print(
        f"split: {len(split.train)} training / {len(split.test)} held-out substrates, "
        f"{len(split.dropped_similar)} dropped as similar, max Tanimoto "
        f"{split.max_test_train_tanimoto:.3f}"
    )
    rng = np.random.default_rng(args.seed)
    train = rng.permutation(split.train)[: args.substrates]
    pairs = split.train_pairs[np.isin(split.train_pairs[:, 0], train)]
    enz = np.unique(pairs[:, 1])
    sub_new = {int(s): i for i, s in enumerate(np.unique(pairs[:, 0]))}
    enz_new = {int(e): i for i, e in enumerate(enz)}
    local = EnzymeData(
        smiles=[data.smiles[s] for s in sub_new],
        ids=[data.ids[e] for e in enz],
        sequences=[data.sequences[e] for e in enz],
        pairs=np.array([[sub_new[int(s)], enz_new[int(e)]] for s, e in pairs]),
        ec_of_substrate=[data.ec_of_substrate[s] for s in sub_new],
    )
    print(f"training on {len(local.smiles)} substrates, {len(local.ids)} enzymes")
    rag = EnzymeRAG(
        d=3, depths=(0, 1, 3), dim=32, heads=4, layers=1, generator_steps=args.steps,
        classifier_steps=args.steps, batch_size=8, lr=5e-3, seed=args.seed,
    ).fit(local.smiles, local.sequences, local.pairs)  # fmt: skip
    print(f"trained ({time.process_time() - t0:.0f} CPU-s so far)")
    for s in split.test[: args.targets]:
        natural = [data.sequences[e] for t, e in split.test_pairs if t == s]
        out = rag.generate(data.smiles[s], n=4, seed=args.seed)
        ident = blastp_identity(out, natural)
        novelty = blastp_identity(out, local.sequences)
        print(
            f"{data.smiles[s][:40]:40s} EC {','.join(data.ec_of_substrate[s])}: lengths "
            f"{[len(x) for x in out]}, identity to natural {np.round(ident, 2).tolist()}, "
            f"to training {np.round(novelty, 2).tolist()}"
        )
    print(f"done in {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main()
