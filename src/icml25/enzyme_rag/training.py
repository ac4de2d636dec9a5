"""Training: the enzyme-substrate classifier (then frozen) and the generator with the OADM loss
plus Gumbel-softmax classifier guidance, and :class:`EnzymeRAG`, which ties retrieval,
training and generation together for user-supplied SMILES and aligned sequences.

This module never sees an evaluation oracle: it learns only from (substrate, enzyme) pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from icml25.core import validate as V
from icml25.enzyme_rag.chem import molecule_features
from icml25.enzyme_rag.model import (
    AxialMSADiffusion,
    EnzymeSubstrateClassifier,
    oadm_loss,
    sample_oadm,
)
from icml25.enzyme_rag.retrieval import SubstrateRetriever
from icml25.enzyme_rag.sequences import N_TOKENS, decode, encode

__all__ = [
    "EnzymeRAG",
    "TrainHistory",
    "retrieval_table",
    "train_classifier",
    "train_generator",
]


@dataclass
class TrainHistory:
    """Loss per step (``loss``), and for the generator its two terms."""

    loss: list[float] = field(default_factory=list)
    recon: list[float] = field(default_factory=list)
    guidance: list[float] = field(default_factory=list)


def _check_pairs(pairs: np.ndarray, n_sub: int, n_enz: int) -> np.ndarray:
    p = np.asarray(pairs, dtype=np.int64)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0:
        raise ValueError(
            f"pairs must be a non-empty (P, 2) array of (substrate, enzyme) "
            f"indices, got shape {p.shape}"
        )
    if p[:, 0].min() < 0 or p[:, 0].max() >= n_sub:
        raise ValueError(f"pairs[:, 0] must be substrate indices in [0, {n_sub})")
    if p[:, 1].min() < 0 or p[:, 1].max() >= n_enz:
        raise ValueError(f"pairs[:, 1] must be enzyme indices in [0, {n_enz})")
    return p


def train_classifier(
    classifier: EnzymeSubstrateClassifier,
    *,
    sequences: np.ndarray,
    mol_features: np.ndarray,
    pairs: np.ndarray,
    steps: int = 500,
    batch_size: int = 256,
    lr: float = 1e-3,
    pos_weight: float = 1.0,
    seed: int = 0,
) -> TrainHistory:
    """Train ``D`` with binary cross-entropy: positives are the training pairs, negatives random
    (substrate, enzyme) pairs that are not positives, 1:1 (App. A.1.2). Leaves the classifier
    frozen (``eval()``, ``requires_grad=False``).

    Parameters
    ----------
    sequences
        ``(N, L)`` aligned token ids of the enzymes.
    mol_features
        ``(S, F)`` molecule encodings of the substrates.
    pairs
        ``(P, 2)`` (substrate index, enzyme index) positives.
    pos_weight
        BCE weight of positives (the paper uses 6.0 with its own class balance).
    """
    steps = V.integer("steps", steps, low=1)
    batch_size = V.integer("batch_size", batch_size, low=2)
    lr = V.positive("lr", lr)
    pos_weight = V.positive("pos_weight", pos_weight)
    seqs = torch.as_tensor(np.asarray(sequences), dtype=torch.long)
    mols = torch.as_tensor(
        V.finite_array("mol_features", mol_features, ndim=2), dtype=torch.float32
    )
    p = _check_pairs(pairs, len(mols), len(seqs))
    positive = {(int(s), int(e)) for s, e in p}
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(classifier.parameters(), lr=lr)
    half = batch_size // 2
    hist = TrainHistory()
    classifier.train()
    for _ in range(steps):
        pos = p[rng.integers(len(p), size=half)]
        neg_s = rng.integers(len(mols), size=half)
        neg_e = p[rng.integers(len(p), size=half), 1]
        keep = np.array(
            [(int(s), int(e)) not in positive for s, e in zip(neg_s, neg_e, strict=True)]
        )
        neg = np.stack([neg_s[keep], neg_e[keep]], 1)
        both = np.concatenate([pos, neg])
        y = torch.cat([torch.ones(len(pos)), torch.zeros(len(neg))])
        logit = classifier(seqs[both[:, 1]], mols[both[:, 0]])
        loss = F.binary_cross_entropy_with_logits(logit, y, pos_weight=torch.tensor(pos_weight))
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.loss.append(float(loss.detach()))
    classifier.eval()
    for prm in classifier.parameters():
        prm.requires_grad_(False)
    return hist


def retrieval_table(
    retriever: SubstrateRetriever,
    *,
    d: int,
    exclude_self: bool = True,
    similarity: np.ndarray | None = None,
) -> np.ndarray:
    """``(S, d)`` enzyme indices retrieved for each stored substrate. With ``exclude_self``
    (training) every enzyme that acts on the substrate is excluded, wherever it is stored: the
    generator must never see the enzymes it reconstructs, and an enzyme that also acts on a
    similar substrate would otherwise come back through that substrate's entry (issue 52).
    ``similarity`` is the stored substrates' ``(S, S)`` Tanimoto matrix, if already computed."""
    d = V.integer("d", d, low=1)
    retriever._check_fitted()
    n = len(retriever.smiles_)
    sim = retriever.similarity(retriever.smiles_) if similarity is None else similarity
    out = np.empty((n, d), dtype=np.int64)
    for s in range(n):
        got = retriever.retrieve(
            retriever.smiles_[s],
            d=d,
            exclude=[s] if exclude_self else [],
            exclude_enzymes=retriever.enzymes_of_[s].tolist() if exclude_self else [],
            similarity=sim[s],
        ).enzymes
        if len(got) < d:
            raise ValueError(
                f"only {len(got)} enzymes can be retrieved for substrate {s}, need d={d}"
            )
        out[s] = got
    return out


def train_generator(
    model: AxialMSADiffusion,
    *,
    sequences: np.ndarray,
    mol_features: np.ndarray,
    pairs: np.ndarray,
    contexts: np.ndarray,
    depths: Sequence[int] = (1, 3, 7),
    classifier: EnzymeSubstrateClassifier | None = None,
    guidance_weight: float = 1.0,
    tau: float = 1.0,
    null_mol_prob: float = 0.0,
    steps: int = 1000,
    batch_size: int = 32,
    lr: float = 1e-3,
    weighting: str = "oadm",
    seed: int = 0,
) -> TrainHistory:
    r"""Train the generator on training pairs with retrieved context rows.

    Loss per batch (paper Eqs. 9-14):

    .. math:: \mathcal L = \mathcal L_{\text{OADM}} + \lambda\,(1 - D(x^*, m)),\quad
              x^* = \text{GumbelSoftmax}_\tau(\text{logits})

    where ``x*`` keeps the true one-hot at unmasked positions and the relaxed sample at masked
    ones; ``D`` is the frozen classifier (``None`` or ``guidance_weight=0``: no guidance).
    Each batch uses one depth ``d`` drawn from ``depths`` (0 = no retrieved rows) and the first
    ``d`` rows of ``contexts[substrate]``; with probability ``null_mol_prob`` a
    batch's molecules are replaced by the null token (and get no guidance).
    """
    steps = V.integer("steps", steps, low=1)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    guidance_weight = V.number("guidance_weight", guidance_weight, low=0.0)
    tau = V.positive("tau", tau)
    null_mol_prob = V.probability("null_mol_prob", null_mol_prob)
    seqs = torch.as_tensor(np.asarray(sequences), dtype=torch.long)
    mols = torch.as_tensor(
        V.finite_array("mol_features", mol_features, ndim=2), dtype=torch.float32
    )
    p = _check_pairs(pairs, len(mols), len(seqs))
    ctx = np.asarray(contexts, dtype=np.int64)
    depths = [V.integer("depths[i]", d, low=0, high=ctx.shape[1]) for d in depths]
    if not depths:
        raise ValueError("depths must hold at least one depth, got none")
    if ctx.ndim != 2 or len(ctx) != len(mols):
        raise ValueError(f"contexts must be (S={len(mols)}, d_max) enzyme indices, got {ctx.shape}")
    use_guidance = classifier is not None and guidance_weight > 0
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    hist = TrainHistory()
    model.train()
    for _ in range(steps):
        batch = p[rng.integers(len(p), size=batch_size)]
        d = int(depths[rng.integers(len(depths))])
        target = seqs[batch[:, 1]]
        context = seqs[torch.as_tensor(ctx[batch[:, 0], :d])] if d else None
        m = mols[batch[:, 0]]
        has_mol = bool(rng.random() >= null_mol_prob)  # whole batch conditioned or not
        out = oadm_loss(
            model,
            target,
            context=context,
            mol=m if has_mol else None,
            weighting=weighting,
            generator=gen,
        )
        loss = out.loss
        g_term = torch.zeros(())
        if use_guidance and has_mol:
            assert classifier is not None
            soft = F.gumbel_softmax(out.logits, tau=tau, hard=False)
            x_star = torch.where(out.mask[..., None], soft, F.one_hot(target, N_TOKENS).float())
            g_term = (1 - torch.sigmoid(classifier(x_star, m))).mean()
            loss = loss + guidance_weight * g_term
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.loss.append(float(loss.detach()))
        hist.recon.append(float(out.loss.detach()))
        hist.guidance.append(float(g_term.detach()))
    model.eval()
    return hist


class EnzymeRAG:
    """Retrieval-augmented substrate-specified enzyme generation (SENZ), end to end.

    ``fit`` indexes the training substrates, trains (or takes) the frozen classifier ``D`` and
    trains the conditioned OADM generator with guidance; ``generate`` retrieves ``d`` enzymes
    for a new SMILES and samples sequences conditioned on them and the molecule.

    Parameters
    ----------
    d
        Retrieved enzymes per target at generation (the training depths are ``depths``).
    depths
        Depths drawn per training batch (defaults to ``(d,)``).
    guidance_weight, tau
        Weight of ``1 - D(x*, m)`` and the Gumbel-softmax temperature (0 disables guidance).
    dim, heads, layers
        Generator size.
    generator_steps, classifier_steps, batch_size, lr
        Training budget.
    classifier
        A trained classifier to use (frozen) instead of training one.
    seed
        Seed of every random choice.

    Examples
    --------
    >>> rag = EnzymeRAG(d=3, generator_steps=200).fit(smiles, aligned_seqs, pairs)  # doctest: +SKIP
    >>> rag.generate("CC(=O)O", n=10)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        d: int = 3,
        depths: Sequence[int] | None = None,
        guidance_weight: float = 1.0,
        tau: float = 1.0,
        dim: int = 64,
        heads: int = 4,
        layers: int = 2,
        generator_steps: int = 1000,
        classifier_steps: int = 500,
        batch_size: int = 32,
        lr: float = 1e-3,
        mol_bits: int = 256,
        null_mol_prob: float = 0.0,
        classifier: EnzymeSubstrateClassifier | None = None,
        seed: int = 0,
    ) -> None:
        self.d = d
        self.depths = depths
        self.guidance_weight = guidance_weight
        self.tau = tau
        self.dim = dim
        self.heads = heads
        self.layers = layers
        self.generator_steps = generator_steps
        self.classifier_steps = classifier_steps
        self.batch_size = batch_size
        self.lr = lr
        self.mol_bits = mol_bits
        self.null_mol_prob = null_mol_prob
        self.classifier = classifier
        self.seed = seed

    def fit(
        self,
        smiles: Sequence[str],
        sequences: Sequence[str] | np.ndarray,
        pairs: np.ndarray | Sequence[tuple[int, int]],
    ) -> EnzymeRAG:
        """Train on substrates ``smiles``, aligned enzyme rows ``sequences`` (strings of one
        length, or token ids) and ``pairs`` of (substrate index, enzyme index)."""
        d = V.integer("d", self.d, low=1)
        depths = list(self.depths) if self.depths is not None else [d]
        tokens = (
            np.asarray(sequences, dtype=np.int64)
            if isinstance(sequences, np.ndarray)
            else encode(sequences, name="sequences")
        )
        smiles = list(smiles)
        p = _check_pairs(np.asarray(pairs), len(smiles), len(tokens))
        enz_of = [p[p[:, 0] == s, 1] for s in range(len(smiles))]
        missing = [s for s, e in enumerate(enz_of) if e.size == 0]
        if missing:
            raise ValueError(
                f"every substrate needs at least one enzyme in pairs; substrate "
                f"{missing[0]} has none"
            )
        self.retriever_ = SubstrateRetriever().fit(smiles, enz_of)
        self.mol_features_ = molecule_features(smiles, n_bits=self.mol_bits)
        self.sequences_ = tokens
        self.length_ = tokens.shape[1]
        d_max = max([d, *depths])
        self.contexts_ = retrieval_table(self.retriever_, d=max(d_max, 1))
        torch.manual_seed(self.seed)
        if self.classifier is None:
            clf = EnzymeSubstrateClassifier(length=self.length_, mol_dim=self.mol_bits)
            train_classifier(
                clf,
                sequences=tokens,
                mol_features=self.mol_features_,
                pairs=p,
                steps=self.classifier_steps,
                seed=self.seed,
            )
            self.classifier_ = clf
        else:
            self.classifier_ = self.classifier
        self.model_ = AxialMSADiffusion(
            mol_dim=self.mol_bits,
            dim=self.dim,
            heads=self.heads,
            layers=self.layers,
            max_length=self.length_,
        )
        self.history_ = train_generator(
            self.model_,
            sequences=tokens,
            mol_features=self.mol_features_,
            pairs=p,
            contexts=self.contexts_,
            depths=depths,
            classifier=self.classifier_,
            guidance_weight=self.guidance_weight,
            tau=self.tau,
            null_mol_prob=self.null_mol_prob,
            steps=self.generator_steps,
            batch_size=self.batch_size,
            lr=self.lr,
            seed=self.seed,
        )
        return self

    def retrieve(self, smiles: str, *, d: int | None = None) -> np.ndarray:
        """Token rows ``(d, L)`` of the enzymes retrieved for ``smiles``."""
        self._check_fitted()
        got = self.retriever_.retrieve(smiles, d=self.d if d is None else d).enzymes
        return self.sequences_[got]

    def generate_tokens(
        self,
        smiles: str | None,
        *,
        n: int = 10,
        d: int | None = None,
        context: np.ndarray | None = None,
        seed: int = 0,
        temperature: float = 1.0,
    ) -> np.ndarray:
        """Sample ``n`` aligned rows ``(n, L)`` for ``smiles`` (``None``: no molecule), with
        ``d`` retrieved rows (0: none) or an explicit ``context`` ``(R, L)``."""
        self._check_fitted()
        n = V.integer("n", n, low=1)
        if context is None:
            dd = self.d if d is None else V.integer("d", d, low=0)
            if dd > 0 and smiles is None:
                raise ValueError("smiles must be given to retrieve context rows (d > 0)")
            context = self.retrieve(smiles, d=dd) if dd > 0 and smiles is not None else None
        ctx = None
        if context is not None:
            c = np.asarray(context, dtype=np.int64)
            if c.ndim != 2 or c.shape[1] != self.length_:
                raise ValueError(f"context must be (R, L={self.length_}) token ids, got {c.shape}")
            ctx = torch.as_tensor(c)[None].expand(n, -1, -1)
        mol = None
        if smiles is not None:
            mol = torch.as_tensor(molecule_features([smiles], n_bits=self.mol_bits)).expand(n, -1)
        gen = torch.Generator().manual_seed(seed)
        out = sample_oadm(
            self.model_,
            length=self.length_,
            n=n,
            context=ctx,
            mol=mol,
            temperature=temperature,
            generator=gen,
        )
        assert isinstance(out, torch.Tensor)
        return out.numpy()

    def generate(
        self, smiles: str, *, n: int = 10, d: int | None = None, seed: int = 0
    ) -> list[str]:
        """``n`` generated enzyme sequences for ``smiles`` (gaps removed)."""
        return decode(self.generate_tokens(smiles, n=n, d=d, seed=seed))

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise RuntimeError("EnzymeRAG is not fitted: call fit(smiles, sequences, pairs) first")
