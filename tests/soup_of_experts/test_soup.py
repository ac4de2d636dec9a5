"""Soup-of-Experts: the instantiation formula, the router, sampling from mix(h), gradients,
Hugging Face models, domain-weight estimation, training and the data loaders."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from torch import nn

from icml25.soup_of_experts import (
    BatchSampler,
    ByteGPT,
    MetaDistribution,
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    check_domain_weights,
    domain_centroids,
    encode_bytes,
    estimate_domain_weights,
    next_token_loss,
    train_on_mixture,
    train_soup,
)


def small_lm(seed: int = 0) -> ByteGPT:
    return ByteGPT(dim=16, layers=1, heads=2, context=8, seed=seed)


def streams(k: int = 3, n: int = 400, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (n,), generator=g) for _ in range(k)]


# ------------------------------------------------------------------ Theta(h) = S + sum a_j E_j
@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4).filter(lambda v: sum(v) > 0.1))
def test_instantiate_is_shared_plus_weighted_experts(raw):
    h = np.asarray(raw) / sum(raw)
    soup = SoupOfExperts(small_lm(), n_domains=4, n_experts=5, expert_init_std=0.1)
    alpha = soup.coefficients(h).detach()
    model = soup.instantiate(h)
    # reference: per parameter, in float64, from the bank's own tensors
    S = soup.shared.detach().double()
    E = soup.experts.detach().double()
    want = S + (alpha.double()[:, None] * E).sum(0)
    got = torch.cat([p.detach().reshape(-1).double() for p in _in_slot_order(soup, model)])
    assert torch.allclose(got, want, rtol=0, atol=1e-6)
    assert not isinstance(model, SoupOfExperts) and isinstance(model, ByteGPT)
    assert sum(p.numel() for p in model.parameters()) == soup.num_model_parameters


def _in_slot_order(soup: SoupOfExperts, model: nn.Module) -> list[torch.Tensor]:
    named = dict(model.named_parameters())
    return [named[s.name] for s in soup._slots]


def test_instantiate_matches_functional_forward_and_is_standalone():
    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=4, expert_init_std=0.05)
    h = [0.2, 0.0, 0.8]
    x = torch.randint(0, 256, (2, 8))
    model = soup.instantiate(h)
    assert torch.allclose(model(x), soup(h, x), atol=1e-6)
    # editing the instance leaves the bank alone, and the bank's updates leave the instance
    before = soup.shared.detach().clone()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    assert torch.equal(soup.shared.detach(), before)
    snapshot = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        soup.experts.add_(1.0)
    assert all(torch.equal(a, p) for a, p in zip(snapshot, model.parameters(), strict=True))


def test_initial_soup_is_the_wrapped_model_when_experts_start_at_zero():
    lm = small_lm()
    soup = SoupOfExperts(lm, n_domains=2, n_experts=3, expert_init_std=0.0)
    x = torch.randint(0, 256, (2, 8))
    assert torch.allclose(soup.instantiate([0.5, 0.5])(x), lm(x), atol=1e-6)
    # the soup holds no reference to the wrapped model's tensors
    with torch.no_grad():
        next(lm.parameters()).add_(1.0)
    assert torch.allclose(soup.instantiate([1.0, 0.0])(x), soup(np.array([1.0, 0.0]), x))


def test_low_rank_experts_are_u_times_v():
    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=4, rank=2, expert_init_std=0.1)
    with torch.no_grad():
        for v in soup.lowrank_v:
            v.normal_()
    h = np.array([0.1, 0.6, 0.3])
    a = soup.coefficients(h).detach().double()
    model = soup.instantiate(h)
    named = dict(model.named_parameters())
    lowrank = [s for s in soup._slots if s.lowrank]
    assert lowrank and all(len(s.shape) == 2 for s in lowrank)
    for s, u, v in zip(lowrank, soup.lowrank_u, soup.lowrank_v, strict=True):
        delta = sum(a[j] * (u[j].double() @ v[j].double()) for j in range(4))
        base = soup.shared[s.offset : s.offset + s.numel].double().view(s.shape)
        assert torch.allclose(named[s.name].double(), base + delta, atol=1e-6)
    x = torch.randint(0, 256, (2, 8))
    assert torch.allclose(model(x), soup(h, x), atol=1e-6)
    # far fewer expert numbers than dense experts
    dense = SoupOfExperts(small_lm(), n_domains=3, n_experts=4)
    n_lr = sum(p.numel() for p in soup.parameters())
    assert n_lr < sum(p.numel() for p in dense.parameters())


def test_router_shapes_softmax_and_routerless():
    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=7)
    assert soup.coefficients([1 / 3] * 3).shape == (7,)
    sm = SoupOfExperts(small_lm(), n_domains=3, n_experts=7, router_output="softmax")
    a = sm.coefficients([0.0, 1.0, 0.0]).detach()
    assert a.shape == (7,) and torch.all(a >= 0) and abs(float(a.sum()) - 1) < 1e-6
    rl = SoupOfExperts(small_lm(), n_domains=3, n_experts=3, router=False)
    h = torch.tensor([0.25, 0.25, 0.5])
    assert torch.equal(rl.coefficients(h), h)
    assert rl.router is None and not any("router" in n for n, _ in rl.named_parameters())


def test_check_domain_weights_accepts_simplex_points():
    assert torch.equal(check_domain_weights([0, 1.0], 2), torch.tensor([0.0, 1.0]))
    t = check_domain_weights(torch.tensor([0.5, 0.5 + 1e-6]), 2)
    assert t.dtype == torch.float32
    assert float(check_domain_weights([-1e-6, 1.0], 2).min()) == 0.0  # rounding noise clipped


# --------------------------------------------------------------------------- gradients
def test_gradients_reach_shared_experts_and_router():
    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=4, expert_init_std=0.01)
    batch = torch.randint(0, 256, (4, 9))
    h = torch.tensor([0.3, 0.7, 0.0])
    next_token_loss(soup(h, batch[:, :-1]), batch).backward()
    assert soup.shared.grad is not None and float(soup.shared.grad.abs().sum()) > 0
    assert soup.experts.grad is not None
    # every expert row gets alpha_j * dL/dTheta
    alpha = soup.coefficients(h).detach()
    want = alpha[:, None] * soup.shared.grad[None, :]
    assert torch.allclose(soup.experts.grad, want, atol=1e-7)
    assert soup.router is not None
    for p in soup.router.parameters():
        assert p.grad is not None and float(p.grad.abs().sum()) > 0


# ------------------------------------------------------------------------ sampling mix(h)
def test_one_h_per_batch_sampling_matches_mix_h_frequencies():
    sampler = MixtureSampler(streams(4, 300), seq_len=8)
    h = np.array([0.5, 0.3, 0.2, 0.0])
    batch, doms = sampler.sample(h, 4000, np.random.default_rng(0), return_domains=True)
    assert batch.shape == (4000, 9) and batch.dtype == torch.int64
    counts = np.bincount(doms, minlength=4)
    assert counts[3] == 0
    p = stats.chisquare(counts[:3], 4000 * h[:3]).pvalue
    assert p > 1e-3, (counts, p)
    # every row is a contiguous window of its domain's stream
    for row, d in zip(batch[:50], doms[:50], strict=True):
        s = sampler.domains[int(d)]
        starts = [i for i in range(len(s) - 8) if torch.equal(s[i : i + 9], row)]
        assert starts


def test_sparse_dirichlet_support_and_simplex():
    meta = SparseDirichlet(6, max_support=3, concentration=0.5)
    rng = np.random.default_rng(0)
    hs = np.array([meta.sample(rng) for _ in range(600)])
    assert np.allclose(hs.sum(1), 1.0) and (hs >= 0).all()
    sizes = (hs > 0).sum(1)
    assert set(sizes.tolist()) == {1, 2, 3}
    # support sizes uniform on 1..3, domains uniform
    assert stats.chisquare(np.bincount(sizes)[1:]).pvalue > 1e-3
    assert stats.chisquare((hs > 0).sum(0)).pvalue > 1e-3
    again = np.array([meta.sample(np.random.default_rng(0)) for _ in range(3)])
    assert np.array_equal(again[0], again[1])


# --------------------------------------------------------------------------- training
def test_train_soup_lowers_the_loss_and_is_deterministic():
    # two domains with different byte statistics: the soup must learn both
    g = torch.Generator().manual_seed(0)
    doms = [torch.randint(0, 4, (2000,), generator=g), torch.randint(100, 104, (2000,))]
    sampler = MixtureSampler(doms, seq_len=8)
    meta = SparseDirichlet(2, max_support=2)

    def run() -> tuple[SoupOfExperts, tuple[float, ...]]:
        soup = SoupOfExperts(small_lm(), n_domains=2, n_experts=2, seed=1)
        log = train_soup(soup, sampler, meta, steps=60, batch_size=8, lr=1e-2, seed=3)
        return soup, log.losses

    soup, losses = run()
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:5])
    assert len(losses) == 60
    soup2, losses2 = run()
    assert losses == losses2 and torch.equal(soup.experts, soup2.experts)


def test_train_on_mixture_sees_only_the_mixture():
    doms = [torch.zeros(500, dtype=torch.long), torch.full((500,), 7, dtype=torch.long)]
    sampler = MixtureSampler(doms, seq_len=8)
    model = small_lm()
    log = train_on_mixture(model, sampler, [0.0, 1.0], steps=40, batch_size=4, lr=1e-2)
    x = torch.full((1, 8), 7)
    assert int(model(x)[0, -1].argmax()) == 7
    assert log.domain_weights[0] == (0.0, 1.0)


# ----------------------------------------------------------------------- Hugging Face LM
def test_soup_wraps_a_hugging_face_llama():
    pytest.importorskip("transformers")
    from icml25.core.llm import tiny_llama

    lm, _tok = tiny_llama(layers=2, hidden=32, heads=4)
    soup = SoupOfExperts(lm, n_domains=3, n_experts=4, expert_init_std=0.01)
    assert soup.num_model_parameters == sum(p.numel() for p in lm.parameters())
    ids = torch.randint(0, 50, (2, 10))
    h = [0.5, 0.5, 0.0]
    model = soup.instantiate(h)
    assert type(model) is type(lm)
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied weights stay tied
    out = model(input_ids=ids).logits
    assert torch.allclose(out, soup(h, input_ids=ids).logits, atol=1e-5)
    # training step through the HF forward
    loss = next_token_loss(soup(h, input_ids=ids[:, :-1]), ids)
    loss.backward()
    assert soup.experts.grad is not None and float(soup.experts.grad.abs().sum()) > 0


# --------------------------------------------------------------- estimating h from samples
def test_estimate_domain_weights_brute_force():
    rng = np.random.default_rng(0)
    C = rng.normal(size=(4, 5))
    X = rng.normal(size=(200, 5))
    h = estimate_domain_weights(X, C, metric="euclidean")
    nearest = [int(np.argmin([np.sum((x - c) ** 2) for c in C])) for x in X]
    assert np.allclose(h, np.bincount(nearest, minlength=4) / 200)
    hc = estimate_domain_weights(X, C)
    cos = [int(np.argmax([x @ c / np.linalg.norm(x) / np.linalg.norm(c) for c in C])) for x in X]
    assert np.allclose(hc, np.bincount(cos, minlength=4) / 200)
    hs = estimate_domain_weights(X[:2], C, smoothing=1.0)
    assert np.isclose(hs.sum(), 1.0) and (hs > 0).all()


def test_estimate_recovers_the_mixture_of_separated_domains():
    rng = np.random.default_rng(1)
    centres = np.eye(3) * 10
    feats = np.concatenate([centres[i] + rng.normal(size=(50, 3)) for i in range(3)])
    labels = np.repeat(np.arange(3), 50)
    C = domain_centroids(feats, labels, 3)
    assert np.allclose(C, [feats[labels == i].mean(0) for i in range(3)])
    h = np.array([0.6, 0.0, 0.4])
    doms = rng.choice(3, size=300, p=h)
    target = centres[doms] + rng.normal(size=(300, 3))
    assert np.allclose(estimate_domain_weights(target, C), np.bincount(doms, minlength=3) / 300)


def test_encode_bytes_round_trip():
    t = encode_bytes("héllo")
    assert t.dtype == torch.int64 and bytes(t.tolist()).decode() == "héllo"


# ------------------------------------------------------------------ train / eval mode
class DropoutLM(nn.Module):
    """A byte LM with dropout that records the mode of every forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(256, 16)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(16, 256)
        self.modes: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        return self.head(self.drop(self.emb(x)))


def test_eval_and_train_reach_the_wrapped_model():
    soup = SoupOfExperts(DropoutLM(), n_domains=2, n_experts=2, expert_init_std=0.1)
    x = torch.randint(0, 256, (4, 8))
    h = [0.3, 0.7]
    soup.eval()
    assert torch.equal(soup(h, x), soup(h, x))  # dropout off
    inst = soup.instantiate(h)
    assert not inst.training and torch.allclose(inst(x), soup(h, x), atol=1e-6)
    soup.train()
    torch.manual_seed(0)
    assert not torch.equal(soup(h, x), soup(h, x))  # dropout on
    assert soup.instantiate(h).training  # an instance starts in the soup's mode
    assert all(m.training for m in soup._tmpl.modules())


def test_train_soup_trains_in_train_mode_and_ends_in_eval_mode():
    lm = DropoutLM()
    soup = SoupOfExperts(lm, n_domains=2, n_experts=2)
    sampler = MixtureSampler(streams(2, 200), seq_len=8)
    train_soup(soup, sampler, SparseDirichlet(2, max_support=2), steps=3, batch_size=2)
    recorder = soup._tmpl
    assert recorder.modes == [True, True, True]  # the template forward ran in training mode
    assert not soup.training and not recorder.training


# ------------------------------------------------------------ protocols and param groups
class UniformMeta:
    """A user's meta-distribution: uniform weights on the simplex (Dirichlet(1))."""

    n_domains = 3

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        return rng.dirichlet(np.ones(3))


class ConstantSampler:
    """A user's data: domain i is the byte 10 * i repeated."""

    n_domains = 3

    def sample(self, h, batch_size: int, rng: np.random.Generator) -> torch.Tensor:
        doms = rng.choice(3, size=batch_size, p=np.asarray(h) / np.sum(h))
        return torch.tensor(np.repeat(10 * doms[:, None], 9, axis=1), dtype=torch.long)


def test_train_soup_takes_any_meta_distribution_and_sampler():
    assert isinstance(UniformMeta(), MetaDistribution)
    assert isinstance(ConstantSampler(), BatchSampler)
    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=2)
    log = train_soup(soup, ConstantSampler(), UniformMeta(), steps=40, batch_size=8, lr=1e-2)
    assert all(len(h) == 3 and abs(sum(h) - 1) < 1e-6 and min(h) > 0 for h in log.domain_weights)
    assert np.mean(log.losses[-5:]) < 0.5 * np.mean(log.losses[:3])


def test_a_meta_distribution_off_the_simplex_is_refused():
    class Bad(UniformMeta):
        def sample(self, rng: np.random.Generator) -> np.ndarray:
            return np.array([0.5, 0.5, 0.5])

    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=2)
    with pytest.raises(ValueError, match=r"meta\.sample\(rng\) must lie on the simplex"):
        train_soup(soup, ConstantSampler(), Bad(), steps=1)
    with pytest.raises(TypeError, match="MetaDistribution protocol"):
        train_soup(soup, ConstantSampler(), object(), steps=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BatchSampler protocol"):
        train_soup(soup, [1, 2], UniformMeta(), steps=1)  # type: ignore[arg-type]


def test_param_groups_give_the_experts_their_own_learning_rate():
    sampler = MixtureSampler(streams(2, 300), seq_len=8)
    meta = SparseDirichlet(2, max_support=2)
    soup = SoupOfExperts(small_lm(), n_domains=2, n_experts=2, expert_init_std=0.01)
    s0, e0 = soup.shared.detach().clone(), soup.experts.detach().clone()
    groups = soup.param_groups(expert_lr=1e-9)
    assert [g["name"] for g in groups] == ["shared", "experts", "router"]
    assert "lr" not in groups[0] and groups[1]["lr"] == 1e-9
    train_soup(soup, sampler, meta, steps=10, batch_size=4, lr=1e-2, param_groups=groups)
    moved_s = float((soup.shared.detach() - s0).abs().max())
    moved_e = float((soup.experts.detach() - e0).abs().max())
    assert moved_s > 1e-3 and moved_e < 1e-7  # Adam moves each coordinate by about its lr
    # parameters in no group are not trained
    only = [{"params": [soup.shared]}]
    e1 = soup.experts.detach().clone()
    train_soup(soup, sampler, meta, steps=3, batch_size=4, param_groups=only)
    assert torch.equal(soup.experts.detach(), e1)


def test_param_groups_are_checked():
    soup = SoupOfExperts(small_lm(), n_domains=2, n_experts=2)
    sampler, meta = MixtureSampler(streams(2, 300), seq_len=8), SparseDirichlet(2, max_support=2)
    stranger = nn.Parameter(torch.zeros(3))
    with pytest.raises(ValueError, match="only the trained module's parameters"):
        train_soup(soup, sampler, meta, steps=1, param_groups=[{"params": [stranger]}])
    twice = [{"params": [soup.shared]}, {"params": [soup.shared]}]
    with pytest.raises(ValueError, match="repeats a parameter"):
        train_soup(soup, sampler, meta, steps=1, param_groups=twice)
    with pytest.raises(TypeError, match="'params' entry"):
        train_soup(soup, sampler, meta, steps=1, param_groups=[soup.shared])  # type: ignore[list-item]


def test_train_on_mixture_on_a_meta_distribution_sees_the_soups_stream():
    sampler = MixtureSampler(streams(3, 300), seq_len=8)
    meta = SparseDirichlet(3, max_support=2)
    soup = SoupOfExperts(small_lm(), n_domains=3, n_experts=2)
    a = train_soup(soup, sampler, meta, steps=5, batch_size=2, seed=4)
    b = train_on_mixture(small_lm(), sampler, meta, steps=5, batch_size=2, seed=4)
    assert a.domain_weights == b.domain_weights
    fixed = train_on_mixture(small_lm(), sampler, [0.2, 0.8, 0.0], steps=2, batch_size=2)
    assert np.allclose(fixed.domain_weights, [[0.2, 0.8, 0.0]] * 2)


# ------------------------------------------------------------------ tuning protocol
def test_tune_keeps_the_lowest_validation_loss():
    from icml25.soup_of_experts.experiments import tune

    t = tune(lambda lr: {"lr": lr}, lambda m: (m["lr"] - 3e-3) ** 2, [1e-3, 3e-3, 1e-2])
    assert t.lr == 3e-3 and t.model == {"lr": 3e-3} and set(t.val) == {1e-3, 3e-3, 1e-2}
    with pytest.raises(ValueError, match="grid"):
        tune(lambda lr: lr, lambda m: m, [])


def test_learning_rates_are_chosen_without_reading_a_test_window(monkeypatch, tmp_path):
    """Every loss computed while an arm is tuned reads validation windows; the test windows
    are read only after every arm has been chosen."""
    from icml25.core.runner import RunContext
    from icml25.soup_of_experts import experiments
    from icml25.soup_of_experts import reproduce as rp

    reads: list[tuple[bool, str]] = []
    state = {"tuning": False, "setup": None}
    real_tune, real_setup = experiments.tune, experiments.make_setup
    real_per = experiments.Evaluator.per_domain

    def tune(*a, **kw):  # type: ignore[no-untyped-def]
        state["tuning"] = True
        try:
            return real_tune(*a, **kw)
        finally:
            state["tuning"] = False

    def make_setup(*a, **kw):  # type: ignore[no-untyped-def]
        state["setup"] = real_setup(*a, **kw)
        return state["setup"]

    def per_domain(self, model, h=None):  # type: ignore[no-untyped-def]
        setup = state["setup"]
        split = "val" if self.split is setup.val else "test" if self.split is setup.test else "?"
        reads.append((bool(state["tuning"]), split))
        return real_per(self, model, h)

    monkeypatch.setattr(experiments, "tune", tune)
    monkeypatch.setattr(experiments, "make_setup", make_setup)
    monkeypatch.setattr(experiments.Evaluator, "per_domain", per_domain)
    ctx = RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path)
    rp.reproduce(ctx)
    during = {split for tuning, split in reads if tuning}
    assert during == {"val"}, during
    assert {split for tuning, split in reads if not tuning} == {"test"}
    assert sum(t for t, _ in reads) >= 4  # generic, S only, soup, router-less, specialists


def test_icml25_seed_saves_a_seed_that_reproduce_reuses_with_the_same_numbers(tmp_path):
    """``icml25 seed soup_of_experts S`` checkpoints seed S; a reproduction in the same folder
    reuses it (validation losses keyed by float learning rates again) and measures what a
    fresh run measures (the timing claim aside)."""
    from icml25.cli import main
    from icml25.core.runner import RunContext
    from icml25.soup_of_experts import reproduce as rp

    assert main(["seed", "soup_of_experts", "0", "--budget", "tiny", "--out", str(tmp_path)]) == 0
    folder = tmp_path / "soup_of_experts"
    assert (folder / "seed0-tiny.json").is_file()
    said: list[str] = []
    ctx = RunContext(budget="tiny", seeds=(0,), out_dir=folder, progress=said.append)
    reused = rp.reproduce(ctx)
    assert any("reusing" in m for m in said) and not any(": lr " in m for m in said)
    fresh = rp.reproduce(RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path / "fresh"))
    timing = {k for k in fresh if "instantiate_speed_ratio" in k}
    assert set(reused) == set(fresh)
    for k in set(fresh) - timing:
        assert np.array_equal(np.asarray(getattr(reused[k], "values", reused[k])),
                              np.asarray(getattr(fresh[k], "values", fresh[k]))), k  # fmt: skip


# --------------------------------------------------------------------------------- data
def test_load_domains_fallback_splits_three_ways():
    from icml25.soup_of_experts.corpora import FALLBACK_PACKAGES, load_domains

    d = load_domains()
    assert len(d.names) == 2 * len(FALLBACK_PACKAGES) and "stdlib" in d.source
    for tr, va, te in zip(d.train, d.val, d.test, strict=True):
        assert len(te) >= 2 and len(va) >= 2 and len(tr) > len(te)
        assert not (set(tr) & set(te)) and not (set(tr) & set(va)) and not (set(va) & set(te))
    code = d.train[0]
    assert any("def " in e or "class " in e for e in code)
    assert not any('"""' in e for e in code[:50])  # docstrings removed from the code domain


def debian_layout(root) -> None:  # type: ignore[no-untyped-def]
    """Small stand-ins for the Debian text: English fortunes, FOLDOC, man3, five languages."""
    import gzip

    from icml25.soup_of_experts.corpora import FORTUNE_DOMAINS, LANGUAGES

    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta"]
    fortunes = root / "fortunes"
    fortunes.mkdir()
    for cat in FORTUNE_DOMAINS:
        entries = [f"{cat}: " + " ".join(rng.choice(words, size=8)) for _ in range(8)]
        (fortunes / cat).write_text("\n%\n".join(entries) + "\n%\n")
    for j, code in enumerate(LANGUAGES.values()):
        (fortunes / code).mkdir()
        entries = [f"{code} {i}: " + " ".join(rng.choice(words[j:], size=10)) for i in range(60)]
        (fortunes / code / "file").write_text("\n%\n".join(entries) + "\n%\n")
        (fortunes / code / "file.dat").write_bytes(b"\x00\x01")  # strfile index: skipped
    blocks = [f"term{i}\n\tA definition of term {i} with {words[i % 8]}." for i in range(80)]
    with gzip.open(root / "foldoc.dict.dz", "wt") as fh:
        fh.write("00databaseinfo\n\tinfo\n" + "\n".join(blocks) + "\n")
    (root / "man3").mkdir()
    for i in range(30):
        page = (
            f'.\\" comment\n.TH F{i} 3\n.SH NAME\nf{i} \\- does {i}\n'
            f".SH DESCRIPTION\n.B f{i}\nworks."
        )
        with gzip.open(root / "man3" / f"f{i}.3.gz", "wt") as fh:
            fh.write(page)


def test_load_domains_reads_the_debian_layout(tmp_path, monkeypatch):
    from icml25.soup_of_experts import corpora

    debian_layout(tmp_path)
    monkeypatch.setenv("ICML25_DATA", "auto")
    monkeypatch.setenv("ICML25_FORTUNES_DIR", str(tmp_path / "fortunes"))
    monkeypatch.setattr(corpora, "FOLDOC", tmp_path / "foldoc.dict.dz")
    monkeypatch.setattr(corpora, "MAN3", tmp_path / "man3")
    d = corpora.load_domains()
    assert d.names == corpora.DOMAINS and "Debian fortunes" in d.source
    splits = zip(d.train, d.val, d.test, strict=True)
    entries = dict(zip(d.names, (tr + va + te for tr, va, te in splits), strict=True))
    assert all(e.startswith("term") for e in entries["foldoc"])
    assert all(not e.startswith('.\\"') for e in entries["manpages"])
    assert any(".SH DESCRIPTION" in e for e in entries["manpages"])
    assert all(e.startswith("pl ") for e in entries["polish"]) and len(entries["polish"]) == 60
    assert any(e.split(":")[0] in corpora.FORTUNE_DOMAINS for e in entries["fortunes"])
    # a missing language falls back to the standard library
    (tmp_path / "fortunes" / "ru" / "file").unlink()
    (tmp_path / "fortunes" / "ru" / "file.dat").unlink()
    (tmp_path / "fortunes" / "ru").rmdir()
    assert "stdlib" in corpora.load_domains().source


def test_tiny_reproduction_on_the_debian_layout(tmp_path, monkeypatch):
    from icml25.core.runner import run_method
    from icml25.methods import get
    from icml25.soup_of_experts import corpora

    debian_layout(tmp_path)
    monkeypatch.setenv("ICML25_DATA", "auto")
    monkeypatch.setenv("ICML25_FORTUNES_DIR", str(tmp_path / "fortunes"))
    monkeypatch.setattr(corpora, "FOLDOC", tmp_path / "foldoc.dict.dz")
    monkeypatch.setattr(corpora, "MAN3", tmp_path / "man3")
    entry = run_method(get("soup_of_experts"), budget="tiny", seeds=[0], out_dir=tmp_path / "o")
    assert entry["error"] is None, entry["error"]
    assert any("Debian fortunes" in n for n in entry["notes"])
