"""The IPV-Bench taxonomy: 4 domains, 14 categories, their subcategories, and label helpers.

The tree and the prompt counts are those of the released prompt suite
(``ipv_txt_prompt_suite.json`` of showlab/Impossible-Videos: 260 prompts). A taxonomy label is
written as in that file, ``"Domain - Category[ - Subcategory[ - Leaf]]"``; the videos of the
understanding benchmark carry only lowercase domain names (``"physical laws"``) and a
``spatial``/``temporal`` label.

References
----------
Bai, Ci & Shou, "Impossible Videos", ICML 2025, arXiv:2503.14378.
"""

from __future__ import annotations

from typing import Any

# domain -> category -> (count | {subcategory -> (count | {leaf -> count})})
TAXONOMY: dict[str, dict[str, Any]] = {
    "Physical Laws": {
        "Conservation Laws": {"Mass": 12, "Energy": 5, "Object Persistence": 8},
        "Mechanics": {
            "Gravity": 9,
            "Buoyancy": 10,
            "Friction": 6,
            "Kinematics": {
                "Spontaneous Motion": 13,
                "Impossible Trajectories": 7,
                "Directional Violations": 4,
            },
        },
        "Thermal": 6,
        "Optics": {"Reflection and Refraction": 9, "Transparency": 8, "Color and Spectrum": 10},
        "Fluid Dynamics": {"Abnormal Flow": 6, "Turbulence and Interactions": 3},
        "Material Properties": {
            "Shape and Volume": 10,
            "Elasticity and Deformation": 10,
            "Phase Transitions": 11,
            "Object Interaction": {"Solid-Solid": 9, "Solid-Fluid": 7},
        },
    },
    "Biological Laws": {
        "Biological Capability Violation": {
            "Human": 8,
            "Non-human": {"Movement and Locomotion": 15, "Cognitive Behavior": 8},
        },
        "Morphology": {"Static Anomalies": 5, "Dynamic changes": 9},
        "Anthropomorphism": 6,
    },
    "Geographical Laws": {"Climate and Weather": 8, "Terrain Environment": 13},
    "Social Laws": {"Magical Effects": 15, "Social Commonsense": 4, "Historical": 6},
}

DOMAINS: tuple[str, ...] = tuple(TAXONOMY)
"""The four domains, capitalised as in the prompt suite."""

DOMAIN_KEYS: tuple[str, ...] = tuple(d.lower() for d in DOMAINS)
"""The domains as the video label file writes them (``"physical laws"``, ...)."""

SPATIAL_TEMPORAL: tuple[str, ...] = ("spatial", "temporal")

SEPARATOR = " - "


def _leaves(node: Any, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], int]]:
    if isinstance(node, int):
        return [(prefix, node)]
    out: list[tuple[tuple[str, ...], int]] = []
    for key, child in node.items():
        out.extend(_leaves(child, (*prefix, key)))
    return out


def taxonomy_labels() -> dict[str, int]:
    """Every leaf label ``"Domain - Category[ - ...]"`` with its prompt count (31 labels,
    260 prompts), in the prompt suite's order."""
    return {SEPARATOR.join(path): n for path, n in _leaves(TAXONOMY, ())}


def categories() -> dict[str, tuple[str, ...]]:
    """The 14 categories by domain."""
    return {d: tuple(TAXONOMY[d]) for d in DOMAINS}


def parse_label(label: str) -> tuple[str, str, tuple[str, ...]]:
    """Split a taxonomy label into ``(domain, category, subcategories)`` and check that it
    names a node of the taxonomy (a domain alone is refused: a label names a category).

    Raises
    ------
    ValueError
        If ``label`` is not a string or does not name a category or a node below one.
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    parts = tuple(p.strip() for p in label.split(SEPARATOR))
    if len(parts) < 2:
        raise ValueError(
            f"label must be 'Domain - Category[ - Subcategory]' with a domain among "
            f"{list(DOMAINS)}, got {label!r}"
        )
    node: Any = TAXONOMY
    for depth, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            known = list(node) if isinstance(node, dict) else []
            level = ("domain", "category", "subcategory", "subcategory")[min(depth, 3)]
            raise ValueError(
                f"label {label!r}: unknown {level} {part!r}; known at this level: {known}"
            )
        node = node[part]
    return parts[0], parts[1], parts[2:]


def domain_key(label: str) -> str:
    """The video label file's lowercase domain name for a taxonomy label."""
    return parse_label(label)[0].lower()


def prompt_counts_by_domain() -> dict[str, int]:
    """Prompt-suite counts per domain (Physical 163, Biological 51, Geographical 21, Social 25)."""
    out = dict.fromkeys(DOMAINS, 0)
    for label, n in taxonomy_labels().items():
        out[label.split(SEPARATOR)[0]] += n
    return out
