"""Correctness of the compositional designs, metrics, probes and image sets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml25.compositional import (
    MultiHeadNet,
    check_design,
    colour_palette,
    concept_ranks,
    concept_value_means,
    cyclic_design,
    design_components,
    design_is_connected,
    embed,
    factorization_r2,
    full_grid,
    linear_factorization,
    make_compositional_images,
    orthogonality,
    seen_mask,
    unseen_combination_accuracy,
    whitened_r2,
)

# ------------------------------------------------------------------------------ designs


@given(n=st.integers(2, 12), data=st.data(), K=st.integers(2, 4))
@settings(max_examples=60, deadline=None)
def test_cyclic_design_sees_every_value_k_times(n: int, data: st.DataObject, K: int) -> None:
    k = data.draw(st.integers(1, n))
    d = cyclic_design(n, k, n_concepts=K)
    assert d.shape == (n * k, K)
    assert len(np.unique(d, axis=0)) == n * k  # distinct combinations
    for h in range(K):
        assert np.array_equal(np.bincount(d[:, h], minlength=n), np.full(n, k))
    # k >= 2 is connected; k = 1 is a perfect matching (n components)
    assert design_components(d) == (1 if k >= 2 else n)
    if k >= 2 and K == 2:
        check_design(d, [n] * K)  # covers every value, identifiable
    if k >= 2 and K > 2:  # identifiable iff the dense additive design has full rank
        A = np.concatenate(
            [np.ones((len(d), 1)), *[np.eye(n)[d[:, h]][:, 1:] for h in range(K)]], 1
        )
        if np.linalg.matrix_rank(A) == A.shape[1]:
            check_design(d, [n] * K)
        else:
            with pytest.raises(ValueError, match="identifiable"):
                check_design(d, [n] * K)


def test_full_grid_and_cyclic_full_are_the_same_set() -> None:
    g = full_grid([4, 4])
    c = cyclic_design(4, 4)
    assert {tuple(r) for r in g.tolist()} == {tuple(r) for r in c.tolist()}
    assert full_grid([2, 3, 2]).shape == (12, 3)


def test_connectivity_brute_force() -> None:
    """Against the rank of the additive design: for two concepts, connected <=> identifiable."""
    rng = np.random.default_rng(0)
    grid = full_grid([4, 4])
    for _ in range(200):
        combos = grid[rng.random(len(grid)) < 0.3]
        if len(combos) == 0 or len(np.unique(combos[:, 0])) < 4 or len(np.unique(combos[:, 1])) < 4:
            continue
        A = np.concatenate(
            [
                np.ones((len(combos), 1)),
                np.eye(4)[combos[:, 0]][:, 1:],
                np.eye(4)[combos[:, 1]][:, 1:],
            ],
            axis=1,
        )
        identifiable = np.linalg.matrix_rank(A) == A.shape[1]
        assert design_is_connected(combos) == identifiable


def test_aliased_three_concepts_are_refused_though_connected() -> None:
    d = cyclic_design(4, 2)
    aliased = np.concatenate([d, d[:, 1:2]], axis=1)  # concept 3 == concept 2
    assert design_is_connected(aliased)
    with pytest.raises(ValueError, match="identifiable"):
        check_design(aliased, [4, 4, 4])


def test_seen_mask() -> None:
    grid = full_grid([3, 3])
    m = seen_mask(grid, cyclic_design(3, 1))
    assert m.sum() == 3 and np.all(grid[m, 0] == grid[m, 1])


# ------------------------------------------------------------------------------ metrics


def _additive(rng: np.random.Generator, labels: np.ndarray, d: int = 8) -> np.ndarray:
    ns = labels.max(axis=0) + 1
    comps = [rng.normal(size=(n, d)) for n in ns]
    return 3.0 + sum(c[labels[:, h]] for h, c in enumerate(comps))


@pytest.mark.parametrize("fit", ["lstsq", "means"])
def test_r2_is_one_for_additive_embeddings_on_a_full_grid(fit: str) -> None:
    rng = np.random.default_rng(1)
    lab = np.repeat(full_grid([5, 4, 3]), 2, axis=0)
    f = linear_factorization(_additive(rng, lab), lab, fit=fit)
    assert f.r2 == pytest.approx(1.0, abs=1e-10)
    assert f.r2_whitened == pytest.approx(1.0, abs=1e-8)


def test_means_and_lstsq_agree_on_a_balanced_full_grid() -> None:
    rng = np.random.default_rng(11)
    lab = np.repeat(full_grid([4, 5, 3]), 3, axis=0)
    X = rng.normal(size=(len(lab), 6))
    assert factorization_r2(X, lab, fit="means") == pytest.approx(factorization_r2(X, lab))


def test_lstsq_is_exact_on_unbalanced_designs_where_means_is_not() -> None:
    rng = np.random.default_rng(2)
    lab = np.repeat(cyclic_design(6, 2), rng.integers(1, 5, size=12), axis=0)
    X = _additive(rng, lab)
    assert factorization_r2(X, lab) == pytest.approx(1.0, abs=1e-10)
    assert factorization_r2(X, lab, fit="means") < 0.95


def test_r2_hand_computed_on_a_2x2_grid() -> None:
    # x = 0, 1, 2, 5 on (0,0), (0,1), (1,0), (1,1): interaction (0 - 1 - 2 + 5) / 4 = 0.5 per
    # cell, SSE = 4 * 0.25 = 1; SST = 4 + 1 + 0 + 9 = 14.
    lab = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    X = np.array([[0.0], [1.0], [2.0], [5.0]])
    assert factorization_r2(X, lab) == pytest.approx(13 / 14)
    assert factorization_r2(X, lab, fit="means") == pytest.approx(13 / 14)


def test_r2_of_random_embeddings_is_near_its_null_value() -> None:
    """Isotropic noise: E[R^2] = (number of free additive parameters) / (N - 1)."""
    rng = np.random.default_rng(3)
    lab = np.repeat(full_grid([10, 10]), 6, axis=0)
    r2 = [factorization_r2(rng.normal(size=(len(lab), 16)), lab) for _ in range(20)]
    assert np.mean(r2) == pytest.approx(18 / (len(lab) - 1), rel=0.1)
    assert max(r2) < 0.06


def test_lstsq_matches_numpy_lstsq_with_a_dense_design() -> None:
    rng = np.random.default_rng(4)
    lab = np.repeat(cyclic_design(7, 3), rng.integers(1, 6, size=21), axis=0)
    X = rng.normal(size=(len(lab), 5))
    A = np.concatenate([np.ones((len(lab), 1)), np.eye(7)[lab[:, 0]], np.eye(7)[lab[:, 1]]], 1)
    beta, *_ = np.linalg.lstsq(A, X, rcond=None)
    Xc = X - X.mean(0)
    want = 1 - np.sum((X - A @ beta) ** 2) / np.sum(Xc**2)
    f = linear_factorization(X, lab)
    assert f.r2 == pytest.approx(want, abs=1e-10)
    fitted = f.mean + f.components[0][lab[:, 0]] + f.components[1][lab[:, 1]]
    np.testing.assert_allclose(fitted, A @ beta, atol=1e-9)


def test_whitened_r2_is_invariant_to_invertible_linear_maps() -> None:
    rng = np.random.default_rng(5)
    lab = np.repeat(full_grid([4, 5]), 3, axis=0)
    X = _additive(rng, lab, d=6) + rng.normal(size=(len(lab), 6))
    M = rng.normal(size=(6, 6))
    assert whitened_r2(X @ M, lab) == pytest.approx(whitened_r2(X, lab), abs=1e-8)
    assert factorization_r2(X @ M, lab) != pytest.approx(factorization_r2(X, lab), abs=1e-3)


def test_value_means_orthogonality_and_ranks() -> None:
    lab = full_grid([3, 3])
    e = np.eye(4)
    U = np.stack([e[0], -e[0], 0 * e[0]])  # concept 0 lives on axis 0: rank 1
    W = np.stack([e[1], e[2], -e[1] - e[2]])  # concept 1 on axes 1, 2: rank 2
    X = U[lab[:, 0]] + W[lab[:, 1]]
    means, counts = concept_value_means(X, lab)
    np.testing.assert_allclose(means[0], U)
    assert [c.tolist() for c in counts] == [[3, 3, 3], [3, 3, 3]]
    cross, within = orthogonality(X, lab)
    assert cross == pytest.approx(0.0, abs=1e-12)
    assert within > 0.4
    assert concept_ranks(X, lab) == (1, 2)


def test_labels_with_gaps_are_fitted_on_the_values_that_occur() -> None:
    rng = np.random.default_rng(6)
    lab = np.repeat(full_grid([3, 3]), 2, axis=0) * np.array([2, 1])  # item values 0, 2, 4
    X = _additive(rng, lab)
    f = linear_factorization(X, lab)
    assert f.r2 == pytest.approx(1.0, abs=1e-10)
    assert f.components[0].shape[0] == 5 and np.all(f.components[0][[1, 3]] == 0)


# ------------------------------------------------------------------------------ probes


def test_factored_embeddings_generalise_from_k2_and_entangled_do_not() -> None:
    rng = np.random.default_rng(7)
    n, d = 8, 24
    U, W = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    E = rng.normal(size=(n, n, d)) * np.sqrt(2)
    grid = full_grid([n, n])
    design = cyclic_design(n, 2)
    test = grid[~seen_mask(grid, design)]
    tr, te = np.repeat(design, 10, 0), np.repeat(test, 10, 0)

    def fac(lab: np.ndarray) -> np.ndarray:
        return U[lab[:, 0]] + W[lab[:, 1]] + 0.2 * rng.normal(size=(len(lab), d))

    def ent(lab: np.ndarray) -> np.ndarray:
        return E[lab[:, 0], lab[:, 1]] + 0.2 * rng.normal(size=(len(lab), d))

    good = unseen_combination_accuracy(fac(tr), tr, fac(te), te)
    bad = unseen_combination_accuracy(ent(tr), tr, ent(te), te)
    assert good.mean > 0.9 and good.joint > 0.8
    assert bad.mean < 0.35
    mlp = unseen_combination_accuracy(fac(tr), tr, fac(te), te, head="mlp", max_iter=300)
    assert mlp.mean > 0.8


def test_additive_fit_on_k2_predicts_unseen_combinations_exactly() -> None:
    """Prop. 4.1's mechanism: on a connected design the additive model is identified, so the
    fit on the seen combinations reconstructs the unseen ones."""
    rng = np.random.default_rng(10)
    n, d = 7, 20
    U, W = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    design = cyclic_design(n, 2)
    f = linear_factorization(U[design[:, 0]] + W[design[:, 1]], design)
    grid = full_grid([n, n])
    pred = f.mean + f.components[0][grid[:, 0]] + f.components[1][grid[:, 1]]
    np.testing.assert_allclose(pred, U[grid[:, 0]] + W[grid[:, 1]], atol=1e-9)


# ------------------------------------------------------------------------------ encoders


def test_embed_array_module_and_hf_style_output() -> None:
    X = np.arange(12.0).reshape(4, 3)
    assert np.array_equal(embed(X), X)
    lin = nn.Linear(3, 2)
    np.testing.assert_allclose(
        embed(lin, X, batch_size=3),
        lin(torch.tensor(X, dtype=torch.float32)).detach().numpy(),
        rtol=1e-6,
    )

    class HF(nn.Module):
        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> object:
            class Out:
                last_hidden_state = input_ids.float().unsqueeze(-1).repeat(1, 1, 2)

            return Out()

    ids = torch.tensor([[1, 2, 9], [4, 0, 0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    Z = embed(HF(), {"input_ids": ids, "attention_mask": mask}, batch_size=1)
    np.testing.assert_allclose(Z, [[1.5, 1.5], [4.0, 4.0]])


def test_multihead_net_shapes() -> None:
    net = MultiHeadNet(
        nn.Sequential(nn.Flatten(), nn.Linear(12, 5)), feature_dim=5, n_values=[3, 4]
    )
    out = net(torch.zeros(2, 3, 2, 2))
    assert [o.shape for o in out] == [(2, 3), (2, 4)]
    assert net.features(torch.zeros(2, 3, 2, 2)).shape == (2, 5)


# ------------------------------------------------------------------------------ images


@pytest.mark.filterwarnings("ignore:combinations leave")  # k = 1 with hues in order: on purpose
def test_images_follow_the_design_and_n_is_independent_of_k() -> None:
    rng = np.random.default_rng(8)
    grey = rng.random((60, 6, 6)).astype(np.float32)
    classes = np.repeat(np.arange(4), 15)
    for k, N in itertools.product((1, 2, 4), (16, 50)):
        design = cyclic_design(4, k)
        ci = make_compositional_images(grey, classes, combinations=design, n_images=N, seed=k)
        assert ci.images.shape == (N, 3, 6, 6) and ci.labels.shape == (N, 2)
        assert seen_mask(ci.labels, design).all()
        counts = np.unique(ci.labels, axis=0, return_counts=True)[1]
        assert counts.max() - counts.min() <= 1 and len(counts) == len(design)
        assert np.all(classes[ci.source_index] == ci.labels[:, 0])
    pal = colour_palette(4)
    i = 0
    c = ci.labels[i, 1]
    np.testing.assert_allclose(ci.images[i], pal[c][:, None, None] * grey[ci.source_index[i]])


def test_position_concept_moves_the_item() -> None:
    grey = np.ones((4, 3, 3), dtype=np.float32)
    classes = np.array([0, 0, 1, 1])
    design = full_grid([2, 2, 3])
    ci = make_compositional_images(grey, classes, combinations=design, n_images=12, seed=0)
    assert ci.images.shape == (12, 3, 3, 5) and ci.concepts == ("item", "colour", "position")
    for img, lab in zip(ci.images, ci.labels, strict=True):
        cols = np.flatnonzero(img.sum(axis=(0, 1)) > 0)
        assert cols.tolist() == list(range(lab[2], lab[2] + 3))


@pytest.mark.filterwarnings("ignore:combinations leave")
def test_same_seed_same_images() -> None:
    rng = np.random.default_rng(9)
    grey = rng.random((40, 4, 4)).astype(np.float32)
    classes = np.repeat(np.arange(4), 10)
    a = make_compositional_images(
        grey, classes, combinations=cyclic_design(4, 2), n_images=30, seed=3
    )
    b = make_compositional_images(
        grey, classes, combinations=cyclic_design(4, 2), n_images=30, seed=3
    )
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)


# ------------------------------------------------------------- colour order and channels


def test_disjoint_channel_pairs_brute_force() -> None:
    from icml25.compositional import disjoint_channel_pairs, lit_channels

    # red, green, blue, yellow (red + green)
    pal = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]], dtype=np.float32)
    assert lit_channels(pal).sum(1).tolist() == [1, 1, 1, 2]
    design = np.array([[0, 0], [0, 3], [1, 1], [1, 2]])
    # item 0 is seen in red and yellow (R, G): blue is disjoint, green is not
    # item 1 is seen in green and blue (G, B): red is disjoint, yellow shares G
    assert disjoint_channel_pairs(design, pal) == [(0, 2), (1, 0)]
    for item, colour in itertools.product(range(2), range(4)):
        seen = design[design[:, 0] == item, 1]
        reach = set().union(*(set(np.flatnonzero(pal[c] > 0.5)) for c in seen))
        brute = colour not in seen and not reach & set(np.flatnonzero(pal[colour] > 0.5))
        assert brute == ((item, colour) in disjoint_channel_pairs(design, pal))


def test_hue_order_warns_and_a_full_grid_does_not() -> None:
    import warnings

    from icml25.compositional import ChannelWarning, disjoint_channel_pairs

    rng = np.random.default_rng(0)
    grey = rng.random((100, 4, 4)).astype(np.float32)
    classes = np.repeat(np.arange(10), 10)
    pal = colour_palette(10)  # hue c / 10: S_5 shows item a only in R/G colours
    with pytest.warns(ChannelWarning, match="permute the palette"):
        make_compositional_images(
            grey, classes, combinations=cyclic_design(10, 5), n_images=50, palette=pal
        )
    assert (0, 6) in disjoint_channel_pairs(cyclic_design(10, 5), pal)  # item 0 never in blue
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChannelWarning)
        make_compositional_images(
            grey, classes, combinations=full_grid([10, 10]), n_images=100, palette=pal
        )


def test_the_reproduction_draws_its_colour_assignment_per_seed() -> None:
    from icml25.compositional.experiments import N_VALUES, _assignment

    base = colour_palette(N_VALUES)
    seen_orders = set()
    for seed in range(5):
        a = _assignment(seed, 10)
        assert sorted(map(tuple, a.palette.tolist())) == sorted(map(tuple, base.tolist()))
        assert sorted(a.items.tolist()) == list(range(10))
        order = tuple(int(np.flatnonzero((base == c).all(1))[0]) for c in a.palette)
        seen_orders.add(order)
        again = _assignment(seed, 10)
        assert np.array_equal(again.palette, a.palette) and np.array_equal(again.items, a.items)
    assert len(seen_orders) == 5  # a different permutation for every seed


# ------------------------------------------------------- R^2 of the combination means


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 5), st.integers(2, 4), st.integers(0, 10_000))
def test_image_r2_is_means_r2_times_the_between_share(n: int, m: int, seed: int) -> None:
    from icml25.compositional import combination_means

    rng = np.random.default_rng(seed)
    grid = full_grid([n, n])
    labels = np.repeat(grid, m, axis=0)
    U, Vv, W = rng.normal(size=(n, 6)), rng.normal(size=(n, 6)), rng.normal(size=(n, n, 6))
    X = U[labels[:, 0]] + Vv[labels[:, 1]] + 0.5 * W[labels[:, 0], labels[:, 1]]
    X = X + rng.normal(size=X.shape) * rng.uniform(0.1, 2.0)
    means, combos = combination_means(X, labels)
    assert np.array_equal(combos, grid) and means.shape == (n * n, 6)
    np.testing.assert_allclose(means[3], X[(labels == grid[3]).all(1)].mean(0))
    r2_img, r2_means = factorization_r2(X, labels), factorization_r2(means, combos)
    Xc = X - X.mean(0)
    between = m * ((means - X.mean(0)) ** 2).sum()
    assert r2_img == pytest.approx(r2_means * between / (Xc**2).sum(), rel=1e-9, abs=1e-12)
