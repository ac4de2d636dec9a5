"""The command line: ``icml25 list``, ``icml25 reproduce [NAME ...]``, ``icml25 report DIR``,
``icml25 localize ISSUE_FILE --repo PATH`` (OrcaLoca)."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from icml25.core import report as rep
from icml25.core import results as res
from icml25.core.html import render_html
from icml25.core.parallel import EXECUTORS, run_methods, task_device
from icml25.core.publish import publish as publish_run
from icml25.core.registry import Method
from icml25.core.runner import BUDGETS, FolderInUse, atomic_write_bytes, folder_lock
from icml25.methods import load_all

EXIT_CRASH = 1
EXIT_USAGE = 2
EXIT_STRICT = 3
EXIT_INTERRUPTED = 130


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip() != "")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds must be comma-separated non-negative integers such as 0,1,2; got {text!r}"
        ) from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(
            f"--seeds must be distinct non-negative integers such as 0,1,2; got {text!r}"
        )
    return seeds


def _device(text: str) -> str:
    """``--device``: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``, one torch can use here."""
    if text == "cpu":
        return text
    import torch

    try:
        dev = torch.device(text)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cuda", "mps") or (dev.type == "mps" and dev.index):
        raise argparse.ArgumentTypeError(f"--device must be cpu, cuda, cuda:N or mps; got {text!r}")
    if dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise argparse.ArgumentTypeError(
                f"--device {text}: torch.backends.mps.is_available() is False on this machine"
            )
        return text
    if not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(
            f"--device {text}: torch.cuda.is_available() is False on this machine"
        )
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(
            f"--device {text}: this machine has {torch.cuda.device_count()} CUDA device(s) "
            f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})"
        )
    return text


_DEVICE_HELP = (
    "where reproductions that support it run their torch work: cpu (default), cuda, cuda:N "
    "or mps; the others run on the CPU (icml25 list: devices)"
)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be a positive integer, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="icml25",
        description="Methods of ICML 2025 papers and laptop-scale reproductions of their claims.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="every registered method, its paper, claim and quick time")
    ls.add_argument(
        "--measured",
        type=Path,
        default=None,
        metavar="DIR",
        help="show the wall and CPU seconds each method took in the run saved in DIR "
        "(its results.json) and the machine it ran on, instead of the declared quick time",
    )
    r = sub.add_parser("reproduce", help="run reproductions and write a claims report")
    r.add_argument("names", nargs="*", metavar="NAME", help="methods to run (default: all)")
    r.add_argument(
        "--budget",
        choices=BUDGETS,
        default="quick",
        help="quick (default, 1-3 min per method), full (up to ~15 min), tiny (smoke test only)",
    )
    r.add_argument(
        "--seeds", type=_seeds, default=(0, 1, 2), help="comma-separated (default 0,1,2)"
    )
    r.add_argument("--out", type=Path, default=None, help="report folder (default runs/<time>/)")
    r.add_argument(
        "--fresh",
        action="store_true",
        help="re-run methods already finished in --out (default: reuse them, i.e. resume)",
    )
    r.add_argument("--strict", action="store_true", help="exit non-zero on 'not reproduced' too")
    r.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        help="methods run in N spawned worker processes, torch threads split among them "
        "(default 1: one after another in this process)",
    )
    r.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local (default) or ray: each method a Ray task (pip install 'icml25[ray]')",
    )
    r.add_argument(
        "--address",
        default=None,
        help="with --executor ray: the cluster to join (e.g. ray://head:10001 or auto); "
        "default a local Ray",
    )
    r.add_argument("--device", type=_device, default="cpu", help=_DEVICE_HELP)
    r.add_argument(
        "--gpus",
        type=float,
        default=0.0,
        help="with --executor ray: GPUs per method (default 0); a method given GPUs runs on "
        "cuda where it supports it, whatever --device says",
    )
    g = sub.add_parser("report", help="rebuild report.md from DIR/results.json without re-running")
    g.add_argument("dir", type=Path)
    g.add_argument(
        "--publish",
        action="store_true",
        help="also write ./REPRODUCTION.md and ./docs/reproduction/ (figures, results.json)",
    )
    col = sub.add_parser(
        "collect",
        help="one results.json from several runs (nothing re-run; the last source wins per method)",
    )
    col.add_argument("out", type=Path, help="folder for the collected results.json")
    col.add_argument("sources", type=Path, nargs="+", metavar="SOURCE", help="run folders")
    one = sub.add_parser(
        "seed",
        help="compute one seed of a method's budget into DIR (methods that checkpoint seeds); "
        "`icml25 reproduce NAME --budget B --out DIR` then reuses it, so seeds can run in "
        "parallel processes",
    )
    one.add_argument("name", metavar="NAME")
    one.add_argument("seed", type=int, metavar="SEED")
    one.add_argument("--budget", choices=BUDGETS, default="full")
    one.add_argument("--out", type=Path, required=True, help="the run folder to fill")
    one.add_argument("--device", type=_device, default="cpu", help=_DEVICE_HELP)
    rd = sub.add_parser(
        "readme",
        help="rewrite each method README's claims table from its CLAIMS and the published "
        "full results",
    )
    rd.add_argument(
        "--results",
        type=Path,
        default=Path("docs/reproduction/results.json"),
        help="the published results (default docs/reproduction/results.json)",
    )
    rd.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    pw = sub.add_parser(
        "power",
        help="seed counts for confirmatory full runs from a pilot's per-seed spread "
        "(writes Markdown)",
    )
    pw.add_argument(
        "--results",
        type=Path,
        default=Path("docs/reproduction/results.json"),
        help="the pilot (default: the published full results)",
    )
    pw.add_argument("--out", type=Path, default=Path("docs/power.md"))
    pw.add_argument(
        "--budget-seconds", type=float, default=3600.0, help="a full run's time (default 1 h)"
    )
    loc = sub.add_parser("localize", help="OrcaLoca: the code locations an issue is about")
    from icml25.orcaloca.cli import add_arguments as add_localize_arguments

    add_localize_arguments(loc)  # --model, --json, ...: defined beside the command
    return p


def _progress() -> Callable[[str], None]:
    """A progress callback: a rich status line on a terminal, plain lines otherwise."""
    if sys.stderr.isatty():
        from rich.console import Console

        console = Console(stderr=True)
        return lambda msg: console.log(msg)
    return lambda msg: print(msg, file=sys.stderr, flush=True)


def _published_results() -> tuple[str, dict] | None:
    """The published full results (``docs/reproduction/results.json`` of the working directory
    or of the checkout this package runs from), to show beside a run's verdicts."""
    import icml25

    for root in (Path.cwd(), Path(icml25.__file__).resolve().parents[2]):
        path = root / "docs" / "reproduction" / "results.json"
        if path.is_file():
            try:
                return "docs/reproduction/results.json", res.load_results(path)
            except (ValueError, OSError):
                return None
    return None


def cmd_list(measured: Path | None = None) -> int:
    from rich.table import Table

    runs: dict[str, dict[str, Any]] = {}
    title, cost = "icml25 methods", "quick"
    if measured is not None:
        path = measured / "results.json"
        try:
            results = res.load_results(path)
        except (OSError, ValueError) as exc:
            print(f"icml25: --measured {measured}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        runs = {m["method"]: m for m in results["methods"]}
        env = results.get("environment", {})
        machine = env.get("cpu") or env.get("platform", "an unrecorded machine")
        title = f"icml25 methods; wall / CPU seconds measured in {measured} on {machine}"
        cost = "measured"
    table = Table(title=title)
    for col in ("name", "paper", "claim", cost, "devices"):
        table.add_column(col, overflow="fold")
    for slug, m in load_all().items():
        if measured is None:
            shown = f"~{m.quick_seconds:.0f} s"
        elif slug in runs:
            e = runs[slug]
            cpu = f" / {float(e['cpu_s']):.0f} CPU-s" if "cpu_s" in e else ""
            shown = f"{float(e['wall_s']):.0f} s{cpu} ({e['budget']})"
        else:
            shown = "not in this run"
        table.add_row(slug, f"{m.title} ({m.venue})", m.summary, shown, ", ".join(m.devices))
    rep.wide_console().print(table)
    return 0


def cmd_reproduce(args: argparse.Namespace, argv: Sequence[str]) -> int:
    methods = load_all()
    unknown = [n for n in args.names if n not in methods]
    if unknown:
        print(
            f"icml25: unknown method(s) {', '.join(unknown)}; known: {', '.join(methods)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    chosen = [methods[n] for n in (args.names or methods)]
    out: Path = args.out or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    if args.address is not None and args.executor != "ray":
        print("icml25: --address needs --executor ray", file=sys.stderr)
        return EXIT_USAGE
    if args.gpus and args.executor != "ray":
        print(
            "icml25: --gpus needs --executor ray (GPUs per Ray task); to run locally on a GPU, "
            "pass --device cuda",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if out.exists() and not out.is_dir():
        print(f"icml25: --out {out}: is a file, not a folder", file=sys.stderr)
        return EXIT_USAGE
    say = _progress()
    command = "icml25 " + shlex.join(argv)
    try:
        with folder_lock(out, command):
            return _reproduce(args, chosen, out, command, say)
    except FolderInUse as exc:
        print(f"icml25: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        say(f"interrupted; finished methods are saved: rerun with --out {out} to resume")
        return EXIT_INTERRUPTED


def _reproduce(
    args: argparse.Namespace,
    chosen: list[Method],
    out: Path,
    command: str,
    say: Callable[[str], None],
) -> int:
    try:
        entries = run_methods(
            chosen,
            budget=args.budget,
            seeds=args.seeds,
            out_dir=out,
            fresh=args.fresh,
            jobs=args.jobs,
            executor=args.executor,
            address=args.address,
            gpus=args.gpus,
            say=say,
            device=args.device,
        )
    except ImportError as exc:
        print(f"icml25: {exc}", file=sys.stderr)
        return EXIT_USAGE
    asked = task_device(args.gpus, args.device) if args.executor == "ray" else args.device
    results = res.build_results(entries, command, device=asked)
    published = _published_results()
    if published is not None:
        res.beside_published(results, published[1], published[0])
    res.write_results(results, out)
    md, page = write_reports(results, out)
    rep.print_table(results)
    print(f"report: {md}")
    print(f"report: {page} (open it in a browser)")
    if any(e["error"] for e in entries):
        for e in entries:
            if e["error"]:
                print(f"icml25: {e['method']} crashed:\n{e['error']}", file=sys.stderr)
        return EXIT_CRASH
    if args.strict and res.verdict_counts(results)["not reproduced"]:
        return EXIT_STRICT
    return 0


def write_reports(results: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """``out/report.md`` and ``out/report.html``, each written to a temporary name and renamed
    (a killed run never leaves a truncated report)."""
    md, page = out / "report.md", out / "report.html"
    atomic_write_bytes(md, rep.render_markdown(results).encode())
    atomic_write_bytes(page, render_html(results, out).encode("utf-8"))
    return md, page


def _fail(message: object) -> int:
    print(f"icml25: {message}", file=sys.stderr)
    return EXIT_USAGE


def cmd_report(args: argparse.Namespace) -> int:
    run_dir: Path = args.dir if args.dir.is_dir() or not args.dir.exists() else args.dir.parent
    source = args.dir / "results.json" if args.dir.is_dir() else args.dir
    try:
        with (
            folder_lock(run_dir, "icml25 report") if run_dir.is_dir() else contextlib.nullcontext()
        ):
            results = res.load_results(args.dir)
            try:
                path, page = write_reports(results, run_dir)
                rep.print_table(results)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                return _fail(f"{source}: cannot render it ({type(exc).__name__}: {exc})")
    except (FileNotFoundError, ValueError, FolderInUse) as exc:
        return _fail(exc)
    except OSError as exc:
        return _fail(f"{run_dir}: {exc.strerror or exc}")
    print(f"report: {path}")
    print(f"report: {page} (open it in a browser)")
    if args.publish:
        try:
            print(f"published: {publish_run(results, run_dir, Path.cwd())}")
        except FileNotFoundError as exc:
            return _fail(f"{exc}; nothing was published")
        except OSError as exc:
            return _fail(f"{exc}; the previous publication is kept")
    return 0


def cmd_collect(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.out.exists() and not args.out.is_dir():
        return _fail(f"{args.out}: is a file, not a folder (OUT is the folder to collect into)")
    made = not args.out.exists()
    try:
        with folder_lock(args.out, "icml25 " + shlex.join(argv)):
            results = res.collect(
                list(args.sources), args.out, "icml25 " + shlex.join(argv), load_all()
            )
            write_reports(results, args.out)
            rep.print_table(results)
    except (FileNotFoundError, ValueError, FolderInUse, OSError) as exc:
        if made and args.out.is_dir() and not any(args.out.iterdir()):
            args.out.rmdir()  # the folder the lock made, left empty
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            return _fail(f"{exc.filename or args.out}: {exc.strerror or exc}")
        return _fail(exc)
    print(f"collected: {args.out / 'results.json'}")
    print(f"publish it with: icml25 report {args.out} --publish")
    return 0


def cmd_seed(args: argparse.Namespace) -> int:
    from icml25.core.runner import RunContext, method_device, one_thread

    methods = load_all()
    if args.name not in methods:
        print(f"icml25: unknown method {args.name!r}; known: {', '.join(methods)}", file=sys.stderr)
        return EXIT_USAGE
    mod = methods[args.name].load()
    if not hasattr(mod, "one_seed"):
        with_seeds = [s for s, m in methods.items() if hasattr(m.load(), "one_seed")]
        print(
            f"icml25: {args.name} does not checkpoint single seeds; those that do: "
            f"{', '.join(with_seeds)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.seed < 0:
        print(f"icml25: SEED must be a non-negative integer, got {args.seed}", file=sys.stderr)
        return EXIT_USAGE
    device, fallback = method_device(methods[args.name], args.device)
    if fallback is not None:
        print(f"icml25: {args.name} {fallback}", file=sys.stderr)
    ctx = RunContext(
        budget=args.budget,
        seeds=(args.seed,),
        out_dir=args.out / args.name,
        progress=_progress(),
        device=device,
    )
    with one_thread():
        mod.one_seed(ctx, args.seed)
    print(f"seed {args.seed} of {args.name} ({args.budget}) saved under {ctx.out_dir}")
    return 0


def cmd_readme(args: argparse.Namespace) -> int:
    from icml25.core.readme import update_readmes

    published = None
    if args.results.is_file():
        try:
            published = res.load_results(args.results)
        except ValueError as exc:
            print(f"icml25: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        changed = update_readmes(load_all(), published, check=args.check)
    except ValueError as exc:
        print(f"icml25: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for path in changed:
        print(f"{'stale' if args.check else 'rewritten'}: {path}")
    return 1 if args.check and changed else 0


def cmd_power(args: argparse.Namespace) -> int:
    from icml25.core.power import render

    try:
        pilot = res.load_results(args.results)
    except (FileNotFoundError, ValueError) as exc:
        print(f"icml25: {exc}", file=sys.stderr)
        return EXIT_USAGE
    atomic_write_bytes(args.out, render(pilot, args.budget_seconds).encode())
    print(f"written: {args.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.command == "list":
        return cmd_list(args.measured)
    if args.command == "reproduce":
        return cmd_reproduce(args, argv)
    if args.command == "collect":
        return cmd_collect(args, argv)
    if args.command == "seed":
        return cmd_seed(args)
    if args.command == "readme":
        return cmd_readme(args)
    if args.command == "power":
        return cmd_power(args)
    if args.command == "localize":
        from icml25.orcaloca.cli import run_from_args

        return run_from_args(args)
    return cmd_report(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
