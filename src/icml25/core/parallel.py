"""Run many reproductions: one after another, in N local worker processes, or as Ray tasks.

Every executor gives the same entries as a serial run with the same seeds (each reproduction
seeds itself), saves each finished method under ``<out>/<slug>/result.json`` as it completes
(so an interrupted run resumes), and reports a crash as a crash entry while the others go on.

- ``jobs=1`` (default): in this process, one method after another.

Every method runs its torch work on ``device`` where its registry entry declares that device's
type (``Method.devices``), on the CPU otherwise, with a note in its entry
(:func:`~icml25.core.runner.method_device`).
- ``jobs=N``: N spawned worker processes, each with ``cores // N`` torch threads, each running
  one method after another (imports paid once a worker); a worker that dies without a result
  (killed, out of memory) makes that method a crash entry and is replaced. The longest methods (by
  their registry's ``quick_seconds``) start first, so that one long method does not run alone
  at the end while the other workers idle (Ray tasks are submitted in the same order);
  results come back in the order given. Workers die with the run that spawned them (killed or
  not: :func:`_die_with_parent`) and leave Ctrl-C to it.
- ``executor="ray"``: each method is a Ray task asking for the CPUs its registry entry declares
  (``Method.cpus``) and ``gpus`` GPUs, on a local Ray or the cluster at ``address``
  (``pip install 'icml25[ray]'``). A task given GPUs (``gpus > 0``) runs on device ``"cuda"``
  (the GPUs Ray gave it); with ``gpus=0`` on ``device`` (:func:`task_device`). The task runs
  in a scratch folder on whichever node it lands on and returns its entry and figures; the
  driver writes them, so a cluster needs no shared file system. A local Ray started here
  shares the run's fate: Ray starts its processes with ``PR_SET_PDEATHSIG`` on Linux
  (``fate_share``), and a dead driver's job and workers end.

One process at a time runs in an ``out_dir`` (its lock, :func:`~icml25.core.runner.folder_lock`).
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import queue
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from icml25.core.registry import Method
from icml25.core.runner import (
    Budget,
    atomic_write_bytes,
    check_device,
    folder_lock,
    make_entry,
    method_device,
    run_method,
    save_entry,
    saved_entry,
    sweep_temporaries,
)

Say = Callable[[str], None]
EXECUTORS = ("local", "ray")


def _printer(slug: str) -> Say:
    return lambda msg: print(f"  {slug}: {msg}", file=sys.stderr, flush=True)


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(max(1, threads))


PARENT_POLL_S = 0.5
"""How often a worker checks that the process that started it still runs."""


def _die_with_parent(parent: int) -> None:
    """Make this worker exit when ``parent`` (the run that spawned it) is gone, killed or not,
    busy or idle: on Linux the kernel sends it SIGKILL (``PR_SET_PDEATHSIG``); everywhere a
    daemon thread sees its parent change (``os.getppid()``: reparented) and exits. Without it a
    killed run's workers would wait on their task queue forever, and keep the resource tracker
    alive with them."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(EXIT_ORPHANED)

    if os.getppid() != parent:  # it died before the kernel's watch was set
        os._exit(EXIT_ORPHANED)
    threading.Thread(target=watch, name="icml25-parent-watch", daemon=True).start()


EXIT_ORPHANED = 70
"""A worker's exit status when it exits because its parent is gone."""


def _local_worker(
    inbox: Any, outbox: Any, out: str, threads: int, wid: int, parent: int | None = None
) -> None:
    """Body of a spawned worker: run the methods it is sent, one after another, saving each
    entry (the parent reads it) and saying that it finished, until it is sent ``None``. One
    process runs many methods, as a serial run does, so each import is paid once a worker.
    It dies with ``parent`` (:func:`_die_with_parent`) and leaves Ctrl-C to it: the parent
    stops its workers."""
    if parent is not None:
        _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_threads(threads)
    while (task := inbox.get()) is not None:
        method, budget, seeds, device = task
        entry = run_method(
            method,
            budget=budget,
            seeds=seeds,
            out_dir=Path(out),
            progress=_printer(method.slug),
            device=device,
        )
        save_entry(Path(out), entry)
        outbox.put(wid)


def task_device(gpus: float, device: str) -> str:
    """The device a Ray task runs on: ``"cuda"`` when it is given GPUs (``gpus > 0``: Ray makes
    them its visible CUDA devices), else the ``device`` asked for."""
    return "cuda" if gpus > 0 else device


def _ray_task(
    method: Method, budget: Budget, seeds: tuple[int, ...], threads: int, device: str = "cpu"
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Body of a Ray task: run in a scratch folder, return the entry and the figures' bytes."""
    _set_threads(threads)
    with tempfile.TemporaryDirectory(prefix="icml25-") as tmp:
        entry = run_method(
            method,
            budget=budget,
            seeds=seeds,
            out_dir=Path(tmp),
            progress=_printer(method.slug),
            device=device,
        )
        files = {fig: (Path(tmp) / fig).read_bytes() for fig in entry["figures"]}
    return entry, files


def _crash(
    method: Method, budget: Budget, seeds: tuple[int, ...], wall_s: float, why: str
) -> dict[str, Any]:
    try:
        claims = method.claims(budget)
    except Exception:  # the crash may be the import itself
        claims = ()
    return make_entry(
        method, budget=budget, seeds=seeds, wall_s=wall_s, claims=claims, measured={}, error=why
    )


def run_methods(
    methods: Sequence[Method],
    *,
    budget: Budget,
    seeds: Sequence[int],
    out_dir: Path,
    fresh: bool = False,
    jobs: int = 1,
    executor: str = "local",
    address: str | None = None,
    gpus: float = 0.0,
    say: Say = lambda _msg: None,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """Run ``methods`` and return their entries in the order given (see the module docstring).

    Finished entries already in ``out_dir`` with the same budget, seeds and device are reused
    unless ``fresh``. ``KeyboardInterrupt`` stops the workers and propagates; what finished is
    saved.
    ``out_dir`` is locked for the run (:func:`~icml25.core.runner.folder_lock`): a second
    process on it raises :class:`~icml25.core.runner.FolderInUse`.
    """
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if address is not None and executor != "ray":
        raise ValueError("address is for executor='ray' (a Ray cluster's address)")
    if not (gpus >= 0):
        raise ValueError(f"gpus must be >= 0, got {gpus!r}")
    if gpus and executor != "ray":
        raise ValueError(
            f"gpus is for executor='ray' (GPUs per Ray task), got gpus={gpus!r} with "
            f"executor={executor!r}: pass device='cuda' (--device cuda) to run locally on a GPU"
        )
    device = check_device("device", device)
    seeds = tuple(int(s) for s in seeds)
    with folder_lock(out_dir, "icml25.core.parallel.run_methods"):
        sweep_temporaries(out_dir)
        return _run_methods(
            methods, budget, seeds, out_dir, fresh, jobs, executor, address, gpus, say, device
        )


def _run_methods(
    methods: Sequence[Method],
    budget: Budget,
    seeds: tuple[int, ...],
    out_dir: Path,
    fresh: bool,
    jobs: int,
    executor: str,
    address: str | None,
    gpus: float,
    say: Say,
    device: str,
) -> list[dict[str, Any]]:
    n = len(methods)
    entries: dict[str, dict[str, Any]] = {}
    todo: list[Method] = []
    if executor == "ray":
        device = task_device(gpus, device)
    for i, m in enumerate(methods, 1):
        used = method_device(m, device)[0]
        entry = None if fresh else saved_entry(out_dir, m.slug, budget, seeds, used)
        if entry is not None:
            say(f"[{i}/{n}] {m.slug}: reusing the finished run in {out_dir / m.slug}")
            entries[m.slug] = entry
        else:
            todo.append(m)

    def finished(entry: dict[str, Any]) -> None:
        entries[entry["method"]] = entry
        status = "crashed" if entry["error"] else "done"
        say(f"[{len(entries)}/{n}] {entry['method']}: {status} in {entry['wall_s']:.1f} s")

    if executor == "ray":
        _run_ray(todo, budget, seeds, out_dir, address, gpus, say, finished, device)
    elif jobs == 1 or len(todo) <= 1:
        for m in todo:
            say(f"{m.slug}: {budget} reproduction, seeds {seeds}")
            entry = run_method(
                m,
                budget=budget,
                seeds=seeds,
                out_dir=out_dir,
                progress=_prefixed(say, m.slug),
                device=device,
            )
            save_entry(out_dir, entry)
            finished(entry)
    else:
        _run_local(todo, budget, seeds, out_dir, jobs, say, finished, device)
    return [entries[m.slug] for m in methods]


def longest_first(methods: Sequence[Method]) -> list[Method]:
    """``methods`` by their registry's ``quick_seconds``, longest first (ties keep their order):
    the order in which workers pick them up (longest-processing-time-first scheduling)."""
    return sorted(methods, key=lambda m: -m.quick_seconds)


def _prefixed(say: Say, slug: str) -> Say:
    return lambda msg: say(f"  {slug}: {msg}")


def _run_local(
    todo: list[Method],
    budget: Budget,
    seeds: tuple[int, ...],
    out_dir: Path,
    jobs: int,
    say: Say,
    finished: Callable[[dict[str, Any]], None],
    device: str = "cpu",
) -> None:
    ctx = mp.get_context("spawn")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    pending = longest_first(todo)
    outbox = ctx.Queue()
    workers: list[_Worker] = []

    def start_worker() -> None:
        inbox = ctx.Queue()
        proc = ctx.Process(
            target=_local_worker,
            args=(inbox, outbox, str(out_dir), threads, len(workers), os.getpid()),
            name=f"icml25-worker-{len(workers)}",
        )
        proc.start()
        workers.append(_Worker(proc, inbox))

    def collect(w: _Worker) -> None:
        assert w.task is not None
        m, start = w.task
        w.task = None
        path = out_dir / m.slug / "result.json"
        if path.exists():  # written before the worker says so (and before any later death)
            finished(json.loads(path.read_text()))
            return
        entry = _crash(
            m,
            budget,
            seeds,
            time.perf_counter() - start,
            f"the worker process exited with code {w.proc.exitcode} before saving a "
            "result (killed, or out of memory?)\n",
        )
        save_entry(out_dir, entry)
        finished(entry)

    try:
        while pending or any(w.task for w in workers):
            for w in [w for w in workers if w.task is None and w.proc.is_alive()]:
                if not pending:
                    break
                m = pending.pop(0)
                (out_dir / m.slug / "result.json").unlink(missing_ok=True)  # a stale crash
                say(f"{m.slug}: {budget} reproduction, seeds {seeds} (worker, {threads} threads)")
                w.task = (m, time.perf_counter())
                w.inbox.put((m, budget, seeds, device))
            alive = [w for w in workers if w.proc.is_alive()]
            if pending and len(alive) < jobs:
                start_worker()
                continue
            try:
                wid = outbox.get(timeout=0.2)
                if workers[wid].task is not None:  # not already collected at its death
                    collect(workers[wid])
            except queue.Empty:
                pass
            for w in workers:
                if w.task is not None and not w.proc.is_alive():
                    w.proc.join()
                    collect(w)
    finally:
        for w in workers:
            if w.task is None and w.proc.is_alive():
                w.inbox.put(None)
            else:
                w.inbox.cancel_join_thread()
                w.proc.terminate()
        for w in workers:
            w.proc.join(timeout=10)
            if w.proc.is_alive():
                w.proc.kill()


class _Worker:
    """A spawned worker process, its inbox, and the method it runs (with its start time)."""

    def __init__(self, proc: Any, inbox: Any) -> None:
        self.proc, self.inbox = proc, inbox
        self.task: tuple[Method, float] | None = None


def _run_ray(
    todo: list[Method],
    budget: Budget,
    seeds: tuple[int, ...],
    out_dir: Path,
    address: str | None,
    gpus: float,
    say: Say,
    finished: Callable[[dict[str, Any]], None],
    device: str = "cpu",
) -> None:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("executor='ray' needs Ray: pip install 'icml25[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=True,
            logging_level=logging.WARNING,
        )
    task = ray.remote(_ray_task)
    refs: dict[Any, tuple[Method, float]] = {}
    waiting: list[Any] = []
    try:
        for m in longest_first(todo):  # submitted longest first, as local workers
            say(
                f"{m.slug}: {budget} reproduction, seeds {seeds} "
                f"(Ray task, {m.cpus} CPUs, {gpus} GPUs, {method_device(m, device)[0]})"
            )
            ref = task.options(num_cpus=m.cpus, num_gpus=gpus, name=f"icml25-{m.slug}").remote(
                m, budget, seeds, m.cpus, device
            )
            refs[ref] = (m, time.perf_counter())
        waiting = list(refs)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            m, start = refs[done[0]]
            try:
                entry, files = ray.get(done[0])
                for rel, data in files.items():
                    atomic_write_bytes(out_dir / rel, data)
            except Exception as exc:  # the task died (worker lost, out of memory)
                entry = _crash(
                    m, budget, seeds, time.perf_counter() - start, f"the Ray task failed: {exc!r}\n"
                )
            save_entry(out_dir, entry)
            finished(entry)
    except KeyboardInterrupt:
        for ref in waiting:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
