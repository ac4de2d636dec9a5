"""Training: the enzyme-substrate classifier (then frozen) and the generator with the OADM loss
plus Gumbel-softmax classifier guidance, and :class:`EnzymeRAG`, which ties retrieval,
training and generation together for user-supplied SMILES and aligned sequences.

This module never sees an evaluation oracle: it learns only from (substrate, enzyme) pairs.

Long by design: the two training loops and the estimator that chains them share the batch
builders and the device handling; apart, a reader would follow one protocol across files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from icml25.core import validate as V
from icml25.core.validate import module_device
from icml25.enzyme_rag.alignment import Aligner, check_alignment, default_aligner
from icml25.enzyme_rag.chem import molecule_features
from icml25.enzyme_rag.model import (
    AxialMSADiffusion,
    EnzymeSubstrateClassifier,
    oadm_loss,
    sample_oadm,
)
from icml25.enzyme_rag.retrieval import SubstrateRetriever
from icml25.enzyme_rag.sequences import GAP, GAP_ID, N_TOKENS, decode, encode

__all__ = [
    "EnzymeRAG",
    "TrainHistory",
    "msa_batch",
    "pad_tokens",
    "query_msas",
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


def pad_tokens(sequences: Sequence[str]) -> np.ndarray:
    """Token ids ``(n, L_max)`` of sequences of any lengths, padded at the end with gaps (the
    input of a ``length=None`` classifier, which ignores gaps)."""
    seqs = list(sequences)
    if not seqs:
        raise ValueError("sequences must hold at least one sequence, got none")
    width = max(len(x) if isinstance(x, str) else 0 for x in seqs)
    return encode([x.ljust(width, GAP) if isinstance(x, str) else x for x in seqs])


def query_msas(
    sequences: Sequence[str],
    pairs: np.ndarray,
    contexts: np.ndarray,
    aligner: Aligner,
) -> list[np.ndarray]:
    """One alignment per training pair ``(s, e)``: ``aligner([seq e, *seqs of contexts[s]])`` as
    token rows ``(1 + d, W)`` (the target on top, as the paper's masked query row sits on top of
    the retrieved MSA). Every output is checked to be its input with gaps inserted."""
    seqs = list(sequences)
    out = []
    cache: dict[tuple[int, ...], np.ndarray] = {}
    for s_idx, e_idx in np.asarray(pairs, dtype=np.int64):
        key = (int(e_idx), *(int(c) for c in contexts[s_idx]))
        if key not in cache:
            rows_in = [seqs[i] for i in key]
            rows = aligner(rows_in)
            check_alignment(rows_in, rows)
            cache[key] = encode(rows, name="aligned rows")
        out.append(cache[key])
    return out


def msa_batch(
    msas: Sequence[np.ndarray], d: int, *, device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Targets ``(B, W)`` and contexts ``(B, d, W)`` (``None`` for ``d = 0``) from per-pair
    alignments: rows ``0..d`` of each, columns that are gaps in all of them dropped, then padded
    at the end with gaps to the batch's widest. On ``device`` (default: the CPU)."""
    if not msas:
        raise ValueError("msas must hold at least one alignment, got none")
    parts = []
    for i, a in enumerate(msas):
        if np.ndim(a) != 2 or len(a) < 1 + d:
            raise ValueError(
                f"msas[{i}] must be (>= 1 + d = {1 + d}, W) tokens, got shape {np.shape(a)}"
            )
        sub = np.asarray(a)[: 1 + d]
        parts.append(sub[:, (sub != GAP_ID).any(axis=0)])
    width = max(x.shape[1] for x in parts)
    grid = np.full((len(parts), 1 + d, width), GAP_ID, dtype=np.int64)
    for i, x in enumerate(parts):
        grid[i, :, : x.shape[1]] = x
    t = torch.as_tensor(grid, device=device if device is not None else "cpu")
    return t[:, 0], (t[:, 1:] if d else None)


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

    The classifier trains where it is (the data go to the device of its parameters).
    """
    steps = V.integer("steps", steps, low=1)
    batch_size = V.integer("batch_size", batch_size, low=2)
    lr = V.positive("lr", lr)
    pos_weight = V.positive("pos_weight", pos_weight)
    dev = module_device(classifier)
    seqs = torch.as_tensor(np.asarray(sequences), dtype=torch.long, device=dev)
    mols = torch.as_tensor(
        V.finite_array("mol_features", mol_features, ndim=2), dtype=torch.float32, device=dev
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
        logit = classifier(seqs[both[:, 1]], mols[both[:, 0]])
        # targets and weight in the logit's dtype, on its device
        y = torch.cat([logit.new_ones(len(pos)), logit.new_zeros(len(neg))])
        weight = logit.new_tensor(pos_weight)
        loss = F.binary_cross_entropy_with_logits(logit, y, pos_weight=weight)
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
    msas: Sequence[np.ndarray] | None = None,
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

    ``msas`` (per-query alignments, see :func:`query_msas`): one token array ``(1 + d_max, W)``
    per row of ``pairs``, row 0 the aligned target and the others its aligned context. Then a
    batch at depth ``d`` takes rows ``0..d`` of each pair's alignment, drops the columns that
    are gaps in all of them, and pads the batch's rows to one width with gaps; ``sequences``
    and ``contexts`` only validate the pairs.

    The generator trains where it is (the data go to the device of its parameters); a
    ``classifier`` on another device gets its inputs there. The masks are drawn on the CPU (a
    seeded ``torch.Generator``), so a seed gives the same masks on any device.
    """
    steps = V.integer("steps", steps, low=1)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    guidance_weight = V.number("guidance_weight", guidance_weight, low=0.0)
    tau = V.positive("tau", tau)
    null_mol_prob = V.probability("null_mol_prob", null_mol_prob)
    dev = module_device(model)
    seqs = torch.as_tensor(np.asarray(sequences), dtype=torch.long, device=dev)
    mols = torch.as_tensor(
        V.finite_array("mol_features", mol_features, ndim=2), dtype=torch.float32, device=dev
    )
    p = _check_pairs(pairs, len(mols), len(seqs))
    ctx = np.asarray(contexts, dtype=np.int64)
    depths = [V.integer("depths[i]", d, low=0, high=ctx.shape[1]) for d in depths]
    if not depths:
        raise ValueError("depths must hold at least one depth, got none")
    if ctx.ndim != 2 or len(ctx) != len(mols):
        raise ValueError(f"contexts must be (S={len(mols)}, d_max) enzyme indices, got {ctx.shape}")
    if msas is not None:
        if len(msas) != len(p):
            raise ValueError(f"msas must hold one alignment per pair ({len(p)}), got {len(msas)}")
        for i, a in enumerate(msas):
            if np.ndim(a) != 2 or len(a) < 1 + max(depths):
                raise ValueError(
                    f"msas[{i}] must be (1 + d_max >= {1 + max(depths)}, W) tokens, "
                    f"got shape {np.shape(a)}"
                )
    use_guidance = classifier is not None and guidance_weight > 0
    clf_dev = dev if classifier is None else module_device(classifier)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    hist = TrainHistory()
    model.train()
    for _ in range(steps):
        pick = rng.integers(len(p), size=batch_size)
        batch = p[pick]
        d = int(depths[rng.integers(len(depths))])
        if msas is None:
            target = seqs[batch[:, 1]]
            context = seqs[torch.as_tensor(ctx[batch[:, 0], :d], device=dev)] if d else None
        else:
            target, context = msa_batch([msas[i] for i in pick], d, device=dev)
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
        g_term = torch.zeros((), dtype=loss.dtype, device=dev)
        if use_guidance and has_mol:
            assert classifier is not None
            soft = F.gumbel_softmax(out.logits, tau=tau, hard=False)
            hard = F.one_hot(target, N_TOKENS).to(soft.dtype)
            x_star = torch.where(out.mask[..., None], soft, hard)
            if getattr(classifier, "length", None) not in (None, target.shape[1]):
                raise ValueError(
                    f"a classifier of fixed length {classifier.length} cannot guide rows of "
                    f"width {target.shape[1]}: use EnzymeSubstrateClassifier(length=None)"
                )
            verdict = classifier(x_star.to(clf_dev), m.to(clf_dev)).to(dev)
            g_term = (1 - torch.sigmoid(verdict)).mean()
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
    for a new SMILES, aligns them (one MSA per query, as the paper does with ClustalW) and
    samples query rows conditioned on them and the molecule; predicted gaps are deleted, so
    the outputs have variable lengths (at most the alignment's width).

    Parameters
    ----------
    d
        Retrieved enzymes per target at generation (the training depths are ``depths``).
    depths
        Depths drawn per training batch (defaults to ``(d,)``).
    aligner
        ``"auto"`` (default: Clustal Omega, else MAFFT, else the pure-Python center-star
        aligner; see :func:`~icml25.enzyme_rag.alignment.default_aligner`), any callable
        ``aligner(sequences) -> rows``, or ``"none"``: the sequences given to :meth:`fit` are
        already rows of one global alignment, used as they are (fixed width; the classifier
        then reads aligned positions).
    guidance_weight, tau
        Weight of ``1 - D(x*, m)`` and the Gumbel-softmax temperature (0 disables guidance).
    dim, heads, layers
        Generator size.
    generator_steps, classifier_steps, batch_size, lr
        Training budget.
    classifier_batch_size
        Pairs a classifier step (half positives, half negatives).
    classifier
        A trained classifier to use (frozen) instead of training one; it stays on its device.
    device
        Where the models this builds train and sample (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a
        ``torch.device``). Their initial weights and every random draw are the same on every
        device (made on the CPU); generated tokens come back to the host.
    seed
        Seed of every random choice.

    Examples
    --------
    >>> rag = EnzymeRAG(d=3, generator_steps=200).fit(smiles, enzyme_seqs, pairs)  # doctest: +SKIP
    >>> rag.generate("CC(=O)O", n=10)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        d: int = 3,
        depths: Sequence[int] | None = None,
        aligner: Aligner | str = "auto",
        guidance_weight: float = 1.0,
        tau: float = 1.0,
        dim: int = 64,
        heads: int = 4,
        layers: int = 2,
        generator_steps: int = 1000,
        classifier_steps: int = 500,
        classifier_batch_size: int = 256,
        batch_size: int = 32,
        lr: float = 1e-3,
        mol_bits: int = 256,
        null_mol_prob: float = 0.0,
        classifier: EnzymeSubstrateClassifier | None = None,
        device: str | torch.device = "cpu",
        seed: int = 0,
    ) -> None:
        self.d = d
        self.depths = depths
        self.aligner = aligner
        self.guidance_weight = guidance_weight
        self.tau = tau
        self.dim = dim
        self.heads = heads
        self.layers = layers
        self.generator_steps = generator_steps
        self.classifier_steps = classifier_steps
        self.classifier_batch_size = classifier_batch_size
        self.batch_size = batch_size
        self.lr = lr
        self.mol_bits = mol_bits
        self.null_mol_prob = null_mol_prob
        self.classifier = classifier
        self.device = device
        self.seed = seed

    def _resolve_aligner(self) -> Aligner | None:
        a = self.aligner
        if callable(a):
            return a
        V.choice("aligner", a, ("auto", "none"))
        return None if a == "none" else default_aligner()

    def fit(
        self,
        smiles: Sequence[str],
        sequences: Sequence[str] | np.ndarray,
        pairs: np.ndarray | Sequence[tuple[int, int]],
    ) -> EnzymeRAG:
        """Train on substrates ``smiles``, enzyme ``sequences`` and ``pairs`` of (substrate
        index, enzyme index). Sequences are unaligned strings of any lengths (each training
        pair's target and retrieved enzymes are aligned by the aligner), or, with
        ``aligner="none"``, aligned rows of one length (strings or token ids)."""
        d = V.integer("d", self.d, low=1)
        dev = self.device_ = V.device("device", self.device)
        clf_batch = V.integer("classifier_batch_size", self.classifier_batch_size, low=2)
        depths = list(self.depths) if self.depths is not None else [d]
        aligner = self._resolve_aligner()
        self.aligner_ = aligner
        if aligner is None:
            tokens = (
                np.asarray(sequences, dtype=np.int64)
                if isinstance(sequences, np.ndarray)
                else encode(sequences, name="sequences")
            )
            raw: list[str] = []
        else:
            if isinstance(sequences, np.ndarray) or isinstance(sequences, str):
                raise TypeError(
                    "sequences must be a list of unaligned strings when an aligner is used "
                    "(pass aligner='none' for rows that are already aligned)"
                )
            raw = [str(x).upper().replace(GAP, "") for x in sequences]
            for i, x in enumerate(raw):
                encode([x], name=f"sequences[{i}]", gaps=False)
            tokens = pad_tokens(raw)
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
        self.raw_sequences_ = raw
        d_max = max([d, *depths])
        self.contexts_ = retrieval_table(self.retriever_, d=max(d_max, 1))
        msas = None
        if aligner is None:
            self.length_ = tokens.shape[1]
            max_length = self.length_
        else:
            msas = query_msas(raw, p, self.contexts_[:, :d_max], aligner)
            widest = max(a.shape[1] for a in msas)
            self.length_ = int(np.median([len(x) for x in raw]))  # for d = 0 (no alignment)
            max_length = 2 * widest  # room for wider alignments at generation
        torch.manual_seed(self.seed)
        if self.classifier is None:
            clf = EnzymeSubstrateClassifier(
                length=self.length_ if aligner is None else None, mol_dim=self.mol_bits
            ).to(dev)  # initialised on the CPU: the same weights on every device
            train_classifier(
                clf,
                sequences=tokens,
                mol_features=self.mol_features_,
                pairs=p,
                steps=self.classifier_steps,
                batch_size=clf_batch,
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
            max_length=max_length,
        ).to(dev)
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
            msas=msas,
            seed=self.seed,
        )
        return self

    def retrieve(self, smiles: str, *, d: int | None = None) -> np.ndarray:
        """Token rows ``(d, W)`` of the enzymes retrieved for ``smiles``, aligned to each other
        (per query) by the aligner, or rows of the global alignment with ``aligner="none"``."""
        self._check_fitted()
        got = self.retriever_.retrieve(smiles, d=self.d if d is None else d).enzymes
        if self.aligner_ is None:
            return self.sequences_[got]
        rows_in = [self.raw_sequences_[i] for i in got]
        rows = self.aligner_(rows_in)
        check_alignment(rows_in, rows)
        return encode(rows, name="aligned rows")

    def generate_tokens(
        self,
        smiles: str | None,
        *,
        n: int = 10,
        d: int | None = None,
        context: np.ndarray | None = None,
        length: int | None = None,
        seed: int = 0,
        temperature: float = 1.0,
        positions_per_step: int = 1,
    ) -> np.ndarray:
        """Sample ``n`` query rows ``(n, W)`` for ``smiles`` (``None``: no molecule), with
        ``d`` retrieved rows (0: none) or an explicit aligned ``context`` ``(R, W)``. The width
        ``W`` is the context's; without context rows it is ``length`` (default: the global
        alignment's width, or the median training sequence length). ``positions_per_step``
        positions are unmasked per denoising step (:func:`sample_oadm`)."""
        self._check_fitted()
        n = V.integer("n", n, low=1)
        positions_per_step = V.integer("positions_per_step", positions_per_step, low=1)
        if context is None:
            dd = self.d if d is None else V.integer("d", d, low=0)
            if dd > 0 and smiles is None:
                raise ValueError("smiles must be given to retrieve context rows (d > 0)")
            context = self.retrieve(smiles, d=dd) if dd > 0 and smiles is not None else None
        ctx = None
        dev = module_device(self.model_)  # the inputs go where the generator is
        width = self.length_ if length is None else V.integer("length", length, low=1)
        if context is not None:
            c = np.asarray(context, dtype=np.int64)
            fixed = self.aligner_ is None
            if c.ndim != 2 or (fixed and c.shape[1] != self.length_):
                want = f"L={self.length_}" if fixed else "W"
                raise ValueError(f"context must be (R, {want}) token ids, got {c.shape}")
            if c.shape[1] > self.model_.max_length:
                raise ValueError(
                    f"the aligned context is {c.shape[1]} columns wide, more than the "
                    f"generator's max_length={self.model_.max_length}"
                )
            width = c.shape[1]
            ctx = torch.as_tensor(c, device=dev)[None].expand(n, -1, -1)
        mol = None
        if smiles is not None:
            feats = molecule_features([smiles], n_bits=self.mol_bits)
            mol = torch.as_tensor(feats, device=dev).expand(n, -1)
        gen = torch.Generator().manual_seed(seed)
        out = sample_oadm(
            self.model_,
            length=width,
            n=n,
            context=ctx,
            mol=mol,
            positions_per_step=positions_per_step,
            temperature=temperature,
            generator=gen,
        )
        assert isinstance(out, torch.Tensor)
        return out.cpu().numpy()

    def generate(
        self, smiles: str, *, n: int = 10, d: int | None = None, seed: int = 0
    ) -> list[str]:
        """``n`` generated enzyme sequences for ``smiles``, predicted gaps deleted (variable
        lengths, as in the paper)."""
        return decode(self.generate_tokens(smiles, n=n, d=d, seed=seed))

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise RuntimeError("EnzymeRAG is not fitted: call fit(smiles, sequences, pairs) first")
