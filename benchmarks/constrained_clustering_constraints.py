"""Do the pairs hold? ARI and violated pairs of constrained clustering against baselines.

Data sets: make_moons (200 points, noise 0.1, 2 clusters), iris (150, 3) and digits (a fixed
random subsample of ``--digits-n`` of the 1,797 images, 10 clusters; subsampled to keep the
run short). For each number of pairs and each draw: random pairs of points, a must-link where
the two share a class and a cannot-link otherwise (the usual protocol). Methods:

- ``soft``: ``ConstrainedSpectralClustering`` as it comes (``constraints="soft"``, the paper's
  objective; kNN graph, k = 10);
- ``enforce``: ``constraints="enforce"`` on scikit-learn's kNN weighting
  (``affinity="nearest_neighbors"``, k = 10), and ``enforce, knn`` on the default graph;
- ``SC rbf`` / ``SC knn``: scikit-learn's ``SpectralClustering`` (no pairs) with its defaults
  and with ``affinity="nearest_neighbors"`` (k = 10; the graph ``enforce`` uses), fitted once
  per data set (``random_state=0``): the same labels for every draw, their ARI's sd 0;
- ``COP-k-means``: Wagstaff, Cardie, Rogers & Schroedl (ICML 2001) on the raw features,
  written here: each point in turn goes to the nearest centre it can join without breaking a
  pair (must-links closed transitively first); a point with no such centre fails the run,
  which restarts from new centres up to 10 times and else falls back to unconstrained k-means
  (counted in ``failed``).

Printed: per data set, number of pairs and method, the ARI (mean +- sd over draws), the
violated pairs (summed over draws), the smallest cluster met and the failures; the same ARI and
violations as one row per data set and number of pairs; then the ARI of ``enforce`` over each
baseline's.

Run: ``OMP_NUM_THREADS=1 python benchmarks/constrained_clustering_constraints.py
[--draws 8] [--pairs 5,10,20,50] [--digits-n 400]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.datasets import load_digits, load_iris, make_moons
from sklearn.metrics import adjusted_rand_score

from icml25.constrained_clustering import ConstrainedSpectralClustering
from icml25.constrained_clustering.enforce import count_violations, must_link_groups

Pairs = list[tuple[int, int]]
METHODS = ("soft", "enforce", "enforce, knn", "SC rbf", "SC knn", "COP-k-means")


def draw_pairs(y: np.ndarray, m: int, rng: np.random.Generator) -> tuple[Pairs, Pairs]:
    """``m`` random pairs of distinct points: must-links within a class, cannot-links across."""
    must: Pairs = []
    cannot: Pairs = []
    while len(must) + len(cannot) < m:
        i, j = (int(v) for v in rng.integers(0, len(y), 2))
        if i != j:
            (must if y[i] == y[j] else cannot).append((i, j))
    return must, cannot


def cop_kmeans(
    X: np.ndarray,
    k: int,
    must: Pairs,
    cannot: Pairs,
    rng: np.random.Generator,
    restarts: int = 10,
    max_iter: int = 100,
) -> tuple[np.ndarray, bool]:
    """COP-k-means (Wagstaff et al. 2001): returns (labels, whether it failed).

    Must-links are closed transitively (a chain is one unit, assigned by its members' summed
    squared distances); a unit joins its nearest centre that no cannot-link partner assigned
    before it in this pass occupies. A unit with no such centre fails the pass: a restart from
    new k-means++ centres, and after ``restarts`` failures plain k-means (failed = True)."""
    n = len(X)
    groups = must_link_groups(n, np.asarray(must, dtype=np.int64).reshape(-1, 2))
    ng = int(groups.max()) + 1
    members = [np.flatnonzero(groups == g) for g in range(ng)]
    partners: list[set[int]] = [set() for _ in range(ng)]
    for i, j in cannot:
        gi, gj = int(groups[i]), int(groups[j])
        if gi == gj:  # a cannot-link inside a must-link chain: no clustering keeps both
            return KMeans(k, n_init=1, random_state=int(rng.integers(2**31))).fit_predict(X), True
        partners[gi].add(gj)
        partners[gj].add(gi)
    for _ in range(restarts):
        km = KMeans(
            k, n_init=1, max_iter=1, init="k-means++", random_state=int(rng.integers(2**31))
        )
        centres = km.fit(X).cluster_centers_  # a k-means++ start (one Lloyd step)
        glab = np.full(ng, -1)
        failed = False
        for _ in range(max_iter):
            d2 = ((X[:, None, :] - centres[None]) ** 2).sum(axis=-1)
            new = np.full(ng, -1)
            for g in range(ng):
                cost = d2[members[g]].sum(axis=0)
                taken = {int(new[p]) for p in partners[g] if new[p] >= 0}
                allowed = [int(c) for c in np.argsort(cost) if int(c) not in taken]
                if not allowed:
                    failed = True
                    break
                new[g] = allowed[0]
            if failed or np.array_equal(new, glab):
                break
            glab = new
            labels = glab[groups]
            centres = np.array(
                [
                    X[labels == c].mean(axis=0) if np.any(labels == c) else centres[c]
                    for c in range(k)
                ]
            )
        if not failed:
            return glab[groups], False
    return KMeans(k, n_init=1, random_state=int(rng.integers(2**31))).fit_predict(X), True


def datasets(digits_n: int) -> list[tuple[str, np.ndarray, np.ndarray, int]]:
    """(name, X, y, number of clusters) of the three data sets."""
    moons = make_moons(200, noise=0.1, random_state=0)
    iris = load_iris(return_X_y=True)
    digits = load_digits(return_X_y=True)
    keep = np.random.default_rng(0).choice(len(digits[1]), digits_n, replace=False)
    return [
        ("moons", moons[0], moons[1], 2),
        ("iris", iris[0], iris[1], 3),
        (f"digits ({digits_n})", digits[0][keep], digits[1][keep], 10),
    ]


def fitters(k: int, seed: int) -> dict[str, Callable[[np.ndarray, Pairs, Pairs], np.ndarray]]:
    """The pair-aware methods, as label functions of (X, must, cannot)."""

    def ours(**kw: object) -> Callable[[np.ndarray, Pairs, Pairs], np.ndarray]:
        def fit(X: np.ndarray, must: Pairs, cannot: Pairs) -> np.ndarray:
            est = ConstrainedSpectralClustering(k, n_neighbors=10, random_state=seed, **kw)  # type: ignore[arg-type]
            labels = est.fit_predict(X, must_link=must, cannot_link=cannot)
            assert est.n_violated_ == count_violations(labels, must, cannot)
            return np.asarray(labels)

        return fit

    return {
        "soft": ours(),
        "enforce": ours(constraints="enforce", affinity="nearest_neighbors"),
        "enforce, knn": ours(constraints="enforce"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--pairs", default="5,10,20,50")
    ap.add_argument("--digits-n", type=int, default=400)
    args = ap.parse_args()
    counts = [int(v) for v in args.pairs.split(",")]
    warnings.filterwarnings("ignore", category=UserWarning)  # SC rbf: graph not fully connected
    t0 = time.perf_counter()
    header = "| data | pairs | method | ARI (mean ± sd) | violated | smallest | failed |"
    print(header)
    print("|---|---|---|---|---|---|---|")
    ratios = []
    wide: list[str] = []
    for name, X, y, k in datasets(args.digits_n):
        # the baselines without pairs: one fit per data set, the same labels for every draw
        sc = {
            "SC rbf": SpectralClustering(k, random_state=0).fit_predict(X),
            "SC knn": SpectralClustering(
                k, affinity="nearest_neighbors", n_neighbors=10, random_state=0
            ).fit_predict(X),
        }
        for m in counts:
            rows: dict[str, list[tuple[float, int, int, bool]]] = {key: [] for key in METHODS}
            for d in range(args.draws):
                must, cannot = draw_pairs(y, m, np.random.default_rng([m, d]))
                found = {key: fit(X, must, cannot) for key, fit in fitters(k, d).items()}
                found.update(sc)
                cop, failed = cop_kmeans(X, k, must, cannot, np.random.default_rng([m, d, 1]))
                found["COP-k-means"] = cop
                for key, labels in found.items():
                    rows[key].append(
                        (
                            adjusted_rand_score(y, labels),
                            count_violations(labels, must, cannot),
                            int(np.bincount(labels).min()) if len(np.unique(labels)) == k else 0,
                            key == "COP-k-means" and failed,
                        )
                    )
            for key in METHODS:
                a = np.array([r[0] for r in rows[key]])
                print(
                    f"| {name} | {m} | {key} | {a.mean():.3f} ± {a.std():.3f} | "
                    f"{sum(r[1] for r in rows[key])} | {min(r[2] for r in rows[key])} | "
                    f"{sum(r[3] for r in rows[key]) if key == 'COP-k-means' else '-'} |"
                )
            mean = {key: float(np.mean([r[0] for r in rows[key]])) for key in METHODS}
            ratios.append((name, m, mean))
            wide.append(
                f"| {name} | {m} | "
                + " | ".join(
                    f"{np.mean([r[0] for r in rows[key]]):.3f} ± "
                    f"{np.std([r[0] for r in rows[key]]):.2f} ({sum(r[1] for r in rows[key])})"
                    for key in METHODS
                )
                + " |"
            )
    print("\nARI mean ± sd over the draws (violated pairs, summed over the draws):\n")
    print("| data | pairs | " + " | ".join(METHODS) + " |")
    print("|---|---|" + "---|" * len(METHODS))
    print("\n".join(wide))
    print()
    print("| data | pairs | enforce / SC rbf | enforce / SC knn | enforce / COP | enforce / soft |")
    print("|---|---|---|---|---|---|")
    for name, m, mean in ratios:
        e = mean["enforce"]
        print(
            f"| {name} | {m} | "
            + " | ".join(
                f"{e / mean[key]:.2f}" if mean[key] > 0.05 else f"- (ARI {mean[key]:.2f})"
                for key in ("SC rbf", "SC knn", "COP-k-means", "soft")
            )
            + " |"
        )
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
