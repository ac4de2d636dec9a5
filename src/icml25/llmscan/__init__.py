"""LLMScan: causal scan for LLM misbehaviour detection (Zhang, Goh, Zhang, Sun, Lin Xin &
Zhang, ICML 2025).

Library: :class:`LLMScan` (token-level and layer-level causal effects of any Hugging Face
decoder-only LM, reusing the prefix's KV cache and the hidden states below a skipped block),
:func:`summary_stats`, :func:`skip_blocks` (identity replacement of blocks inside a batch),
:class:`LLMScanDetector` (official: two MLPRegressor(100) on token and layer features,
predictions averaged; ablation: one classifier on concatenated features). The
language-model backend is :mod:`icml25.core.llm`
(``pip install 'icml25[llm]'``; ``make llm`` adds SmolLM2-135M-Instruct).
Reproduction: ``icml25 reproduce llmscan`` (lies about in-context facts and a backdoor,
implanted in SmolLM2 by a short fine-tune; the full budget would take about 2-2.5 hours
on one idle core, over the 30 minutes the issue allows).
"""

from icml25.core.registry import register
from icml25.llmscan.detector import LLMScanDetector, select
from icml25.llmscan.scan import STAT_NAMES, LLMScan, ScanResult, skip_blocks, summary_stats

__all__ = [
    "STAT_NAMES",
    "LLMScan",
    "LLMScanDetector",
    "ScanResult",
    "select",
    "skip_blocks",
    "summary_stats",
]

register(
    slug="llmscan",
    title="LLMScan: Causal Scan for LLM Misbehavior Detection",
    authors="Mengdi Zhang, Kai Kiat Goh, Peixin Zhang, Jun Sun, Rose Lin Xin, Hongyu Zhang",
    venue="ICML 2025 (arXiv:2410.16638)",
    url="https://arxiv.org/abs/2410.16638",
    summary="Causal effects of a prompt's tokens and of each transformer block on the next "
    "token, summarised into features for a lightweight misbehaviour detector (full budget: "
    "about 2-2.5 h on one idle core).",
    quick_seconds=245,  # estimate: 335 s x 228.2 / 311.9 s CPU, new / old, uncached (issue 34)
    module="icml25.llmscan.reproduce",
)
