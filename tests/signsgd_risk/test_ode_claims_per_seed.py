"""The ODE claims of signSGD's reproduction take one value per seed (issue 66): their intervals
are Student's t over seeds, not a percentile bootstrap over five seeds, and the engine pairs
each with its null arm seed by seed (a paired contrast)."""

from __future__ import annotations

import numpy as np

from icml25.core.claims import Measurement, null_key
from icml25.signsgd_risk import experiments as E
from icml25.signsgd_risk.claims import CLAIMS

ODE_CLAIMS = (
    "ode_diag_gaussian",
    "ode_diag_cauchy",
    "ode_correlated",
    "ode_error_shrinks",
    "heavy_tail_sign_matches_ode",
)


class _Ctx:
    def progress(self, _msg: str) -> None:
        pass

    def note(self, _msg: str) -> None:
        pass


def test_per_seed_gaps_is_each_runs_sup_gap() -> None:
    rng = np.random.default_rng(0)
    curve = np.linspace(1.0, 0.2, 7)
    risk = curve * (1 + 0.05 * rng.standard_normal((4, 7)))
    gaps = E.per_seed_gaps(risk, curve)
    assert gaps == [float(np.max(np.abs(row / curve - 1))) for row in risk]


def test_ode_claims_have_t_intervals_and_a_paired_contrast() -> None:
    cfg = E.BUDGETS["tiny"]
    seeds = (0, 1, 2)
    gauss, cauchy, _ = E.label_noises()
    ctx = _Ctx()
    res: dict = {}
    res.update(E.setting_a(ctx, cfg, seeds, {"gaussian": gauss, "cauchy": cauchy})[0])
    res.update(E.error_vs_dimension(ctx, cfg, seeds, gauss)[0])
    res.update(E.setting_b(ctx, cfg, seeds, gauss)[0])
    res.update(E.setting_c(ctx, cfg, seeds, gauss, cauchy)[0])
    by_id = {c.id: c for c in CLAIMS}
    for cid in ODE_CLAIMS:
        method, null = Measurement.of(res[cid]), Measurement.of(res[null_key(cid)])
        assert len(method.values) == len(null.values) == len(seeds), cid
        assert method.interval.method == "t (n=3)", cid
        judged = by_id[cid].judge(method, null)
        assert judged.contrast is not None, cid
        assert judged.contrast.measured.values == tuple(
            a - b for a, b in zip(method.values, null.values, strict=True)
        )
