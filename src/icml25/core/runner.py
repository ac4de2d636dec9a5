"""Run a method's reproduction: time it, catch its crash, judge its claims, save for resume."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import re
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from icml25.core.claims import (
    Claim,
    Measurement,
    Rule,
    contrast_key,
    gate_key,
    null_key,
    sensitivity_key,
)
from icml25.core.registry import Method

try:
    import fcntl as _fcntl
except ImportError:  # Windows: folder_lock creates its file exclusively instead
    _fcntl = None  # type: ignore[assignment]

T = TypeVar("T")

Budget = Literal["tiny", "quick", "full"]
BUDGETS: tuple[Budget, ...] = ("tiny", "quick", "full")
"""``tiny`` is for smoke tests (seconds, numbers meaningless); ``quick`` is the main job
(one to three minutes per method on 2 cores); ``full`` is the longer run (at most ~15 min)."""


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block (or, as ``@one_thread()``, a reproduction) with one torch thread and one
    BLAS/OpenMP thread, restoring both after. For reproductions whose small models' training
    depends on the thread count through float rounding (on an AVX512 Xeon a two-thread run of
    it3's CNN flipped one test image in 128, enough to move a borderline control's verdict):
    pinned, a serial run gives the numbers of the main job's one-thread workers."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)


@dataclass
class RunContext:
    """What a reproduction receives: its budget, seeds, figure folder, a progress callback and
    the torch device its models train on."""

    budget: Budget
    seeds: tuple[int, ...]
    out_dir: Path
    progress: Callable[[str], None] = lambda _msg: None
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran_seeds: set[int] = field(default_factory=set)
    """Seeds a reproduction said it ran (:meth:`seeds_run`); ``results.json`` records these
    when any were given, else ``seeds``."""
    device: str = "cpu"
    """Where the reproduction puts its torch models and tensors (``"cpu"``, ``"cuda"``,
    ``"cuda:1"``, ``"mps"``), one its method declares (:attr:`Method.devices`;
    :func:`run_method` gives the CPU otherwise); refused unless torch can use it here."""

    def __post_init__(self) -> None:
        self.device = check_device("device", self.device)

    def seeds_run(self, at_least: int = 0, at_most: int | None = None) -> tuple[int, ...]:
        """The run's seeds as a budget uses them: the first ``at_most`` of ``seeds``, extended
        by the next integers to ``at_least``; recorded, so the report names the seeds run."""
        if at_most is not None and at_most < 1:
            raise ValueError(f"at_most must be >= 1 or None, got {at_most!r}")
        seeds = list(self.seeds[:at_most])
        if not seeds and at_least > 0:
            raise ValueError("seeds must hold at least one seed to extend, got none")
        while len(seeds) < at_least:
            seeds.append(max(seeds) + 1)
        self.ran_seeds.update(seeds)
        return tuple(seeds)

    def save_figure(self, fig: Any, name: str) -> Path:
        """Save a matplotlib figure as ``<out_dir>/<name>.png`` and close it."""
        import matplotlib.pyplot as plt

        path = self.out_dir / f"{name}.png"
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        atomic_write_bytes(path, buf.getvalue())  # a killed run leaves no truncated figure
        self.figures.append(f"{self.out_dir.name}/{path.name}")
        return path

    def note(self, text: str) -> None:
        """A line for the report (a per-instance table, a caveat measured during the run)."""
        self.notes.append(text)

    def checkpoint(
        self,
        name: str,
        key: str,
        compute: Callable[[], T],
        *,
        codec: Literal["json", "pickle"] = "json",
        encode: Callable[[T], Any] = lambda r: r,
        decode: Callable[[Any], T] = lambda r: r,
    ) -> T:
        """``compute()``, saved as ``<out_dir>/<name>.<codec>`` so that an interrupted run
        resumes: a saved result is reused only when its ``key`` (the budget, data and anything
        else the result depends on, as a string) equals ``key``; an unreadable or foreign file
        is recomputed. ``encode``/``decode`` map the result to and from what the codec stores
        (JSON keys are strings). The file is written to a temporary name and renamed, so a
        killed run never leaves a half-written checkpoint that loads."""
        path = self.out_dir / f"{name}.{'json' if codec == 'json' else 'pkl'}"
        if path.is_file():
            try:
                raw = path.read_bytes()
                saved = json.loads(raw) if codec == "json" else pickle.loads(raw)
            except Exception:  # damaged or foreign: recompute
                saved = None
            if isinstance(saved, dict) and saved.get("key") == key and "result" in saved:
                self.progress(f"{name}: reusing {path.name}")
                return decode(saved["result"])
        result = compute()
        payload = {"key": key, "result": encode(result)}
        data = json.dumps(payload).encode() if codec == "json" else pickle.dumps(payload)
        atomic_write_bytes(path, data)
        return result


def check_device(name: str, value: Any) -> str:
    """``value`` as a device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``) that torch
    can use on this machine; a ``ValueError`` naming ``name`` otherwise."""
    from icml25.core.validate import device as valid_device

    if not isinstance(value, str):
        raise ValueError(f"{name} must be a device string such as 'cpu' or 'cuda', got {value!r}")
    if value != "cpu":  # the CPU needs no check (and no torch import)
        dev = valid_device(name, value)
        if dev.type not in ("cuda", "mps"):
            raise ValueError(f"{name} must be 'cpu', 'cuda', 'cuda:N' or 'mps', got {value!r}")
    return value


def method_device(method: Method, device: str) -> tuple[str, str | None]:
    """The device ``method``'s reproduction runs on when ``device`` is asked for, and the note
    its entry gets when that is not ``device``: the CPU where the method does not declare
    ``device``'s type (:attr:`Method.devices`)."""
    kind = device.split(":", 1)[0]
    if kind in method.devices:
        return device, None
    return "cpu", f"ran on cpu: this reproduction does not support {kind}"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder (``.<name>.<pid>
    .tmp``), flushed to disk, and a rename, so that a failing or killed write leaves the earlier
    file (or none), never a truncated one. A temporary file that a killed process left is
    ignored by every reader and swept by :func:`sweep_temporaries`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
        _fsync_folder(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy the file ``src`` to ``dst`` as :func:`atomic_write_bytes` writes (figures: small)."""
    atomic_write_bytes(dst, src.read_bytes())


TMP_SUFFIX = ".tmp"
_TMP_NAME = re.compile(r"^\..+\.(\d+)\.tmp$")


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk, where the platform can."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (a zombie does not; psutil where installed)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    if os.name != "posix":  # no psutil, no signal 0: assume it runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # Linux: a zombie (dead, not yet reaped) is state Z
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def sweep_temporaries(out_dir: Path) -> list[Path]:
    """Remove the temporary files (:func:`atomic_write_bytes`) that killed processes left under
    ``out_dir``; those of running processes (an ``icml25 seed`` beside) stay. Returns them."""
    swept = []
    for path in out_dir.rglob(f".*{TMP_SUFFIX}"):
        m = _TMP_NAME.match(path.name)
        if (
            m
            and path.is_file()
            and int(m.group(1)) != os.getpid()
            and not pid_alive(int(m.group(1)))
        ):
            path.unlink(missing_ok=True)
            swept.append(path)
    return swept


class FolderInUse(RuntimeError):
    """Another process holds a run folder's lock (:func:`folder_lock`)."""

    def __init__(self, folder: Path, holder: str) -> None:
        super().__init__(
            f"{folder} is in use by another icml25 process ({holder}); wait for it to end, or "
            "give another folder"
        )
        self.folder, self.holder = folder, holder


LOCK_NAME = ".icml25.lock"
_held: dict[Path, int] = {}  # folders this process holds, with how many times (re-entrant)


@contextlib.contextmanager
def folder_lock(folder: Path, what: str = "icml25") -> Iterator[Path]:
    """Hold ``folder``'s lock (``<folder>/.icml25.lock``) for the block: one process at a time
    writes a run folder. Raises :class:`FolderInUse`, naming the holder's pid, when another
    process holds it. The lock is the kernel's (``flock``), so a process that dies, killed or
    not, releases it and the next run takes it over; the file (pid, command) only names the
    holder. Re-entrant within a process. On a platform without ``fcntl`` the file is created
    exclusively and a file naming a dead pid is taken over."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    if key in _held:
        _held[key] += 1
        try:
            yield folder / LOCK_NAME
        finally:
            _held[key] -= 1
        return
    path = key / LOCK_NAME
    release = _lock_flock(path) if _fcntl is not None else _lock_exclusive(path)
    info = json.dumps({"pid": os.getpid(), "what": what, "since": time.time()})
    try:
        release.write(info)
    except BaseException:
        release.close()
        raise
    _held[key] = 1
    try:
        yield path
    finally:
        del _held[key]
        release.close()


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text())
        return f"pid {int(info['pid'])}, {info.get('what', 'icml25')}"
    except (OSError, ValueError, KeyError, TypeError):
        return f"pid unknown: see {path}"


class _Release:
    """A held lock file: ``write`` names the holder in it, ``close`` removes and releases it."""

    def __init__(self, path: Path, fd: int, locked: bool) -> None:
        self.path, self.fd, self.locked = path, fd, locked

    def write(self, text: str) -> None:
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.write(self.fd, text.encode())

    def close(self) -> None:
        if self.locked:  # removed while still locked (flock): no one else holds this file
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
        else:  # an exclusive file: closed first (Windows removes no open file)
            os.close(self.fd)
            self.path.unlink(missing_ok=True)


def _lock_flock(path: Path) -> _Release:
    assert _fcntl is not None
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise FolderInUse(path.parent, _holder(path)) from None
        try:  # the holder before may have removed the file we locked: lock the one there now
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return _Release(path, fd, locked=True)
        os.close(fd)


def _lock_exclusive(path: Path) -> _Release:
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                pid = int(json.loads(path.read_text())["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                pid = None
            if pid is None or pid_alive(pid):
                raise FolderInUse(path.parent, _holder(path)) from None
            path.unlink(missing_ok=True)  # a dead process's lock: taken over
            continue
        return _Release(path, fd, locked=False)
    raise FolderInUse(path.parent, _holder(path))


def run_method(
    method: Method,
    *,
    budget: Budget,
    seeds: Sequence[int],
    out_dir: Path,
    progress: Callable[[str], None] = lambda _msg: None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Run one reproduction and return its entry of ``results.json`` (never raises for a crash).
    ``device`` is where its torch work runs (:class:`RunContext`), the CPU where the method does
    not support it (:func:`method_device`: its entry notes it)."""
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {BUDGETS}, got {budget!r}")
    seeds = tuple(int(s) for s in seeds)
    used, fallback = method_device(method, check_device("device", device))
    ctx = RunContext(
        budget=budget,
        seeds=seeds,
        out_dir=out_dir / method.slug,
        progress=progress,
        device=used,
    )
    if fallback is not None:
        ctx.note(fallback)
    start, cpu_start = time.perf_counter(), cpu_seconds()
    measured: dict[str, Measurement] = {}
    error: str | None = None
    claims: tuple[Claim, ...] = ()
    try:
        claims = method.claims(budget)
        raw = method.reproducer()(ctx)
        unknown = set(raw) - expected_keys(claims)
        if unknown:
            raise KeyError(
                f"reproduce() returned values for unknown claims, null arms or gates: "
                f"{sorted(unknown)} (a null arm or gate must be declared on its Claim)"
            )
        measured = {k: Measurement.of(v) for k, v in raw.items()}
    except KeyboardInterrupt:
        raise
    except Exception:
        error = traceback.format_exc()
    entry = make_entry(
        method,
        budget=budget,
        seeds=sorted(ctx.ran_seeds) or seeds,
        wall_s=time.perf_counter() - start,
        claims=claims,
        measured=measured,
        error=error,
        figures=ctx.figures,
        notes=ctx.notes,
    )
    # CPU seconds (user + system) of this process's threads and of the children it waited
    # for: the cost a loaded or faster machine does not distort as it does the wall time
    entry["cpu_s"] = round(cpu_seconds() - cpu_start, 2)
    entry["requested_seeds"] = list(seeds)  # what resume compares (seeds: what ran)
    entry["device"] = used  # resume compares it too
    return entry


def expected_keys(claims: Sequence[Claim]) -> set[str]:
    """The keys ``reproduce`` may return: claim ids, and the null arms (with their paired
    contrasts), gates and sensitivity arms they declare."""
    keys = {c.id for c in claims}
    with_null = [c.id for c in claims if c.null is not None and c.null.arm is not None]
    keys |= {null_key(i) for i in with_null} | {contrast_key(i) for i in with_null}
    keys |= {gate_key(c.id) for c in claims if c.gate is not None}
    keys |= {sensitivity_key(c.id) for c in claims if c.sensitivity is not None}
    return keys


def claim_entry(c: Claim, measured: dict[str, Measurement], error: str | None) -> dict[str, Any]:
    """One claim's row of ``results.json`` (schema in :mod:`icml25.core.results`)."""
    m, nm, gm = measured.get(c.id), measured.get(null_key(c.id)), measured.get(gate_key(c.id))
    cm, sm = measured.get(contrast_key(c.id)), measured.get(sensitivity_key(c.id))
    j = c.judge(m, nm, gm, cm, sm)
    row: dict[str, Any] = {
        "id": c.id,
        "kind": c.kind,
        "statement": c.statement,
        "where": c.where,
        "metric": c.metric,
        "paper_value": c.paper_value,
        "measured": m.to_json() if m is not None else None,
        "interval": m.interval.to_json() if m is not None else None,
        "rule": c.rule_text(),
        "rule_verdict": "error" if error else j.rule_verdict,
        "verdict": "error" if error else j.verdict,
        "reason": None if error else j.reason,
    }
    if c.null is None:
        row["null"] = None
    elif c.null.exempt is not None:
        row["null"] = {"exempt": c.null.exempt}
    else:
        row["null"] = {
            "arm": c.null.arm,
            "measured": nm.to_json() if nm is not None else None,
            "interval": nm.interval.to_json() if nm is not None else None,
            "verdict": j.null_verdict,
        }
        if j.contrast is not None:
            row["contrast"] = j.contrast.to_json()
    if c.sensitivity is not None:
        row["sensitivity"] = {
            "arm": c.sensitivity.arm,
            "measured": sm.to_json() if sm is not None else None,
            "interval": sm.interval.to_json() if sm is not None else None,
            "verdict": j.sensitivity_verdict,
        }
    if c.gate is not None:
        grule = c.gate_rule
        row["gate"] = {
            "check": c.gate.check,
            "rule": Rule(grule.op, grule.threshold).describe() if grule is not None else None,
            "measured": gm.to_json() if gm is not None else None,
            "interval": gm.interval.to_json() if gm is not None else None,
            "passed": j.gate_passed,
        }
        if c.gate.per_seed:
            row["gate"]["per_seed"] = True
    return row


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its waited-for children so far."""
    try:
        import resource
    except ImportError:  # not POSIX: this process only
        return time.process_time()
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def make_entry(
    method: Method,
    *,
    budget: str,
    seeds: Sequence[int],
    wall_s: float,
    claims: Sequence[Claim],
    measured: dict[str, Measurement],
    error: str | None,
    figures: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """A method's entry of ``results.json``; with ``error`` every claim's verdict is ``error``."""
    return {
        "method": method.slug,
        "paper": {
            "title": method.title,
            "authors": method.authors,
            "venue": method.venue,
            "url": method.url,
        },
        "budget": budget,
        "seeds": [int(s) for s in seeds],
        "wall_s": round(wall_s, 2),
        "claims": [claim_entry(c, measured, error) for c in claims],
        "figures": list(figures),
        "notes": list(notes),
        "error": error,
    }


def saved_entry(
    out_dir: Path, slug: str, budget: str, seeds: Sequence[int], device: str = "cpu"
) -> dict[str, Any] | None:
    """A finished, crash-free entry saved by an earlier (interrupted) run with the same settings:
    the same budget, the same requested seeds (a budget may run fewer or more seeds than
    requested; ``requested_seeds`` records what was asked) and the same device it ran on (an
    entry without one ran on the CPU). A file that is damaged, not an entry, or from other
    settings is ignored: the method runs again."""
    path = out_dir / slug / "result.json"
    try:
        entry = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("claims"), list):
        return None
    asked = entry.get("requested_seeds", entry.get("seeds"))
    same = (
        entry.get("budget") == budget
        and asked == [int(s) for s in seeds]
        and entry.get("device", "cpu") == device
    )
    return entry if same and not entry.get("error") else None


def save_entry(out_dir: Path, entry: dict[str, Any]) -> None:
    """Save a method's entry as ``out_dir/<method>/result.json``, atomically."""
    data = json.dumps(entry, indent=2).encode()
    atomic_write_bytes(out_dir / entry["method"] / "result.json", data)
