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
each implanted in its own SmolLM2 by a short fine-tune; the full budget took 52 minutes on
2 cores, over the 30 minutes the issue allows).
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
    "about 52 min on 2 cores).",
    # measured: alone at 2 threads, uncached bf16 fine-tunes (fp32: 486 s in a one-thread
    # worker of --jobs 2, runs/quick16)
    quick_seconds=605,  # measured: 605 s CPU on one thread, empty model cache (issue 57)
    module="icml25.llmscan.reproduce",
)
