"""enzyme_rag: retrieval over 10^5 fingerprints and sampling throughput, each against its
natural baseline measured in the same run.

1. Tanimoto of one query against 10^5 Morgan fingerprints (2048 bits): RDKit's
   ``BulkTanimotoSimilarity`` over ExplicitBitVects vs :func:`bulk_tanimoto` on packed
   ``uint64`` words (NumPy popcount). The library is the 5K NCI molecules tiled 20 times.
2. Sampling: :func:`sample_oadm` (unmasking one position per step, and k = 4 per step) vs one
   plain forward pass of the same model per position (the cost floor of OADM sampling).

Run: ``PYTHONPATH=src python benchmarks/enzyme_rag_speed.py``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from _timing import mean_seconds
from icml25.enzyme_rag import (
    AxialMSADiffusion,
    bulk_tanimoto,
    morgan_fingerprints,
    pack_fingerprints,
    sample_oadm,
)
from icml25.enzyme_rag.sequences import MASK_ID


def retrieval() -> None:
    from rdkit import Chem, DataStructs, RDConfig, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    lines = (Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi").read_text().splitlines()
    mols = [m for m in (Chem.MolFromSmiles(ln.split()[0]) for ln in lines if ln.strip()) if m]
    smiles = [Chem.MolToSmiles(m) for m in mols]
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    reps = -(-100_000 // len(mols))
    rd = [gen.GetFingerprint(m) for m in mols] * reps
    rd = rd[:100_000]
    packed = np.tile(pack_fingerprints(morgan_fingerprints(smiles)), (reps, 1))[:100_000]
    q_rd, q_np = rd[7], packed[7]
    np.testing.assert_allclose(
        bulk_tanimoto(q_np, packed)[:1000], DataStructs.BulkTanimotoSimilarity(q_rd, rd[:1000])
    )
    t_rd = mean_seconds(lambda: DataStructs.BulkTanimotoSimilarity(q_rd, rd))
    t_np = mean_seconds(lambda: bulk_tanimoto(q_np, packed))
    print(f"retrieval, 1 query x {len(rd)} fingerprints (2048 bits)")
    print(f"  RDKit BulkTanimotoSimilarity  {t_rd * 1e3:8.1f} ms")
    print(
        f"  NumPy popcount (packed)       {t_np * 1e3:8.1f} ms   ratio RDKit/NumPy = "
        f"{t_rd / t_np:.2f}"
    )


def sampling() -> None:
    torch.manual_seed(0)
    length, n, rows = 40, 64, 4
    model = AxialMSADiffusion(mol_dim=256, dim=32, heads=4, layers=2, max_length=length).eval()
    ctx = torch.randint(20, (n, rows, length))
    mol = torch.randn(n, 256)
    x = torch.full((n, length), MASK_ID)

    @torch.no_grad()
    def plain() -> None:
        for _ in range(length):
            model(x, ctx, mol)

    def oadm(k: int) -> None:
        sample_oadm(
            model,
            length=length,
            n=n,
            context=ctx,
            mol=mol,
            positions_per_step=k,
            generator=torch.Generator().manual_seed(0),
        )

    t_plain = mean_seconds(plain, repeats=2)
    t1 = mean_seconds(lambda: oadm(1), repeats=2)
    t4 = mean_seconds(lambda: oadm(4), repeats=2)
    print(f"sampling, {n} sequences of length {length}, {rows} retrieved rows, dim 32, 2 layers")
    print(f"  {length} plain forward passes       {t_plain:7.3f} s  ({n / t_plain:7.1f} seq/s)")
    print(
        f"  sample_oadm, 1 position/step  {t1:7.3f} s  ({n / t1:7.1f} seq/s)  "
        f"ratio to plain = {t1 / t_plain:.2f}"
    )
    print(
        f"  sample_oadm, 4 positions/step {t4:7.3f} s  ({n / t4:7.1f} seq/s)  "
        f"ratio to plain = {t4 / t_plain:.2f}"
    )


if __name__ == "__main__":
    torch.set_num_threads(1)
    retrieval()
    sampling()
