"""icml25: methods of ICML 2025 papers as library APIs, with reproductions of their claims.

Each method lives in its own subpackage (``icml25.constrained_clustering``, ...); ``icml25.core``
holds only what they share (claims, registry, reports, data loaders, a training loop).
"""

__version__ = "0.1.0"
