"""The list of method packages; importing one registers it (``core`` never imports a method)."""

from __future__ import annotations

import importlib

from icml25.core.registry import Method, registered

METHOD_PACKAGES: tuple[str, ...] = (
    "icml25.constrained_clustering",
    "icml25.mirror_flow",
    "icml25.signsgd_risk",
    "icml25.pan_privacy",
    "icml25.it3",
    "icml25.pointwise_info",
    "icml25.backslash",
    "icml25.pfl_tradeoff",
    "icml25.fedgvi",
    "icml25.llmscan",
    "icml25.cca_attention",
    "icml25.orcaloca",
    "icml25.compositional",
    "icml25.drift_calibration",
    "icml25.soup_of_experts",
    "icml25.enzyme_rag",
    "icml25.ipv_bench",
    "icml25.equilibrium_planner",
    "icml25.maple",
)


def load_all() -> dict[str, Method]:
    """Import every method package and return the registry by slug."""
    for name in METHOD_PACKAGES:
        importlib.import_module(name)
    return registered()


def get(slug: str) -> Method:
    methods = load_all()
    if slug not in methods:
        raise KeyError(f"unknown method {slug!r}; known: {', '.join(methods) or 'none'}")
    return methods[slug]
