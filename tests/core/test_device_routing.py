"""Reproductions on a device (issue 67): ``icml25 reproduce --device``, ``RunContext.device``,
``Method.devices`` (the CPU, with a note, for a method that does not support the device asked
for), Ray's ``--gpus`` mapped to ``cuda``, and ``environment.device`` in ``results.json``."""

import json
import sys
import types

import numpy as np
import pytest
import torch

from icml25 import cli
from icml25.core import parallel
from icml25.core import results as rs
from icml25.core.claims import Claim, Rule
from icml25.core.registry import Method
from icml25.core.results_schema import check_results
from icml25.core.runner import RunContext, run_method, save_entry, saved_entry
from icml25.methods import load_all


def _fake(monkeypatch, seen, devices=("cpu",), name="icml25_fake_device"):
    """A registered-looking method whose reproduction records the device it was given."""
    mod = types.ModuleType(name)
    mod.CLAIMS = (Claim("acc", "accuracy is high", "Table 1", "accuracy", Rule(">=", 0.5), 0.9),)

    def reproduce(ctx):
        seen.append(ctx.device)
        return {"acc": [0.9 for _ in ctx.seeds]}

    mod.reproduce = reproduce
    monkeypatch.setitem(sys.modules, name, mod)
    return Method("fake", "Fake", "A. B.", "ICML 2025", "http://x", "s", 1.0, name, devices=devices)


def _cuda(monkeypatch, available=True):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1 if available else 0)


def _parse(argv):
    return cli._parser().parse_args(argv)


# ------------------------------------------------------------------------ --device parsing


def test_device_option_defaults_to_cpu_and_accepts_cpu():
    assert _parse(["reproduce", "x"]).device == "cpu"
    assert _parse(["reproduce", "x", "--device", "cpu"]).device == "cpu"
    assert _parse(["seed", "x", "0", "--out", "o"]).device == "cpu"


@pytest.mark.parametrize("bogus", ["gpu", "cuda:x", "tpu", "meta", "cpu:2x"])
def test_a_bogus_device_is_refused_naming_it(bogus, capsys):
    with pytest.raises(SystemExit) as exc:
        _parse(["reproduce", "x", "--device", bogus])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--device" in err and repr(bogus) in err


def test_cuda_is_refused_without_cuda_and_accepted_with_it(monkeypatch, capsys):
    _cuda(monkeypatch, available=False)
    with pytest.raises(SystemExit):
        _parse(["reproduce", "x", "--device", "cuda"])
    assert "--device cuda: torch.cuda.is_available() is False on this machine" in (
        capsys.readouterr().err
    )
    _cuda(monkeypatch, available=True)
    assert _parse(["reproduce", "x", "--device", "cuda"]).device == "cuda"
    assert _parse(["reproduce", "x", "--device", "cuda:0"]).device == "cuda:0"
    with pytest.raises(SystemExit):  # one device: cuda:1 is not there
        _parse(["reproduce", "x", "--device", "cuda:1"])
    assert "cuda:1" in capsys.readouterr().err


def test_run_context_device_is_validated(monkeypatch):
    assert RunContext(budget="tiny", seeds=(0,), out_dir=None).device == "cpu"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="device"):
        RunContext(budget="tiny", seeds=(0,), out_dir=None, device="gpu")  # type: ignore[arg-type]
    _cuda(monkeypatch, available=False)
    with pytest.raises(ValueError, match="device 'cuda' is not available"):
        RunContext(budget="tiny", seeds=(0,), out_dir=None, device="cuda")  # type: ignore[arg-type]


# ------------------------------------------------------------------------ the registry


def test_method_devices_default_to_cpu_and_are_checked():
    m = Method("m", "T", "A", "V", "u", "s", 1.0, "mod")
    assert m.devices == ("cpu",)
    for bad in (("cuda",), ("cpu", "tpu"), ["cpu"]):
        with pytest.raises(ValueError, match="devices"):
            Method("m", "T", "A", "V", "u", "s", 1.0, "mod", devices=bad)  # type: ignore[arg-type]


def test_the_wired_methods_declare_cuda_and_the_others_cpu_only():
    methods = load_all()
    assert methods["drift_calibration"].devices == ("cpu", "cuda")
    assert methods["pointwise_info"].devices == ("cpu", "cuda")
    assert all(m.devices == ("cpu",) for s, m in methods.items() if s not in {
        "drift_calibration", "pointwise_info"})  # fmt: skip


def test_list_shows_a_devices_column(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "name" in line and "quick" in line)
    assert "devices" in header
    row = next(line for line in out.splitlines() if "drift_calibration" in line)
    assert "cpu, cuda" in row


# ------------------------------------------------------------------------ the device reaches it


def test_the_device_reaches_a_method_that_supports_it(tmp_path, monkeypatch):
    _cuda(monkeypatch)
    seen: list[str] = []
    m = _fake(monkeypatch, seen, devices=("cpu", "cuda"))
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path, device="cuda")
    assert entry["error"] is None and seen == ["cuda"]
    assert entry["device"] == "cuda" and entry["notes"] == []


def test_a_cpu_only_method_asked_for_cuda_runs_on_cpu_with_a_note(tmp_path, monkeypatch):
    _cuda(monkeypatch)  # so that the CLI accepts --device cuda
    seen: list[str] = []
    m = _fake(monkeypatch, seen)
    monkeypatch.setattr(cli, "load_all", lambda: {"fake": m})
    monkeypatch.setattr(cli, "_published_results", lambda: None)
    out = tmp_path / "run"
    argv = ["reproduce", "fake", "--budget", "tiny", "--seeds", "0", "--out", str(out)]
    assert cli.main([*argv, "--device", "cuda"]) == 0
    assert seen == ["cpu"]
    results = json.loads((out / "results.json").read_text())
    (entry,) = results["methods"]
    assert "ran on cpu: this reproduction does not support cuda" in entry["notes"]
    assert entry["device"] == "cpu"
    assert results["environment"]["device"] == "cuda"  # what the run asked for


def test_resume_reuses_an_entry_only_from_the_same_device(tmp_path, monkeypatch):
    _cuda(monkeypatch)
    seen: list[str] = []
    m = _fake(monkeypatch, seen, devices=("cpu", "cuda"))
    save_entry(tmp_path, run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path))
    assert saved_entry(tmp_path, "fake", "tiny", [0]) is not None
    assert saved_entry(tmp_path, "fake", "tiny", [0], "cuda") is None
    parallel.run_methods([m], budget="tiny", seeds=[0], out_dir=tmp_path, device="cuda")
    assert seen == ["cpu", "cuda"]  # run again on cuda, not reused


def test_seed_command_gives_its_device_to_the_run_context(tmp_path, monkeypatch):
    _cuda(monkeypatch)
    seen: list[str] = []
    m = _fake(monkeypatch, seen, devices=("cpu", "cuda"))
    sys.modules[m.module].one_seed = lambda ctx, seed: seen.append(ctx.device)  # type: ignore[attr-defined]
    monkeypatch.setattr(cli, "load_all", lambda: {"fake": m})
    assert cli.main(["seed", "fake", "0", "--out", str(tmp_path), "--device", "cuda"]) == 0
    assert seen == ["cuda"]


# ------------------------------------------------------------------------ Ray


def test_ray_tasks_given_gpus_run_on_cuda_only_then():
    assert parallel.task_device(1.0, "cpu") == "cuda"
    assert parallel.task_device(0.25, "cpu") == "cuda"
    assert parallel.task_device(2, "cuda:1") == "cuda"
    assert parallel.task_device(0.0, "cpu") == "cpu"
    assert parallel.task_device(0.0, "cuda:1") == "cuda:1"


def test_the_ray_path_gets_the_mapped_device(tmp_path, monkeypatch):
    got = []
    monkeypatch.setattr(parallel, "_run_ray", lambda *args: got.append(args[-1]))
    m = Method("m", "T", "A", "V", "u", "s", 1.0, "mod")
    for gpus in (1.0, 0.0):
        with pytest.raises(KeyError):  # no entry came back from the stand-in
            parallel.run_methods(
                [m], budget="tiny", seeds=[0], out_dir=tmp_path, executor="ray", gpus=gpus
            )
    assert got == ["cuda", "cpu"]


# ------------------------------------------------------------------------ results.json


def test_environment_records_the_device_and_old_files_load(tmp_path):
    results = rs.build_results([], "icml25 reproduce", device="cuda:1")
    assert results["environment"]["device"] == "cuda:1"
    check_results(results, "r")
    old = rs.build_results([], "icml25 reproduce")
    assert "device" not in old["environment"]
    check_results(old, "r")
    results["environment"]["device"] = 3
    with pytest.raises(ValueError, match="device"):
        check_results(results, "r")


# ------------------------------------------------------------------------ the wired reproductions


class _Built(Exception):
    pass


def test_drift_calibration_builds_its_learners_on_ctx_device(tmp_path, monkeypatch):
    from icml25.drift_calibration import experiments as ex

    _cuda(monkeypatch)
    seen = {}
    X0, y0 = np.zeros((4, 1, 28, 28), np.float32), np.array([0, 0, 1, 1])
    data = {"tasks": [np.array([0, 1])], "train": [(X0, y0)], "test": [(X0, y0)], "name": "d"}
    monkeypatch.setattr(ex, "_data", lambda cfg, seed: data)

    def pretrain(cfg, seed, X, y, classes, device="cpu"):
        seen["pretrain"] = device
        return torch.nn.Identity()

    def learner(net, **kw):
        seen["learner"] = kw.get("device")
        raise _Built

    monkeypatch.setattr(ex, "_pretrain", pretrain)
    monkeypatch.setattr(ex, "DriftCalibratedLearner", learner)
    ctx = RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path, device="cuda")
    with pytest.raises(_Built):
        ex._run_seed(ex.BUDGETS["tiny"], 0, ctx)
    assert seen == {"pretrain": "cuda", "learner": "cuda"}


def test_pointwise_info_trains_its_models_on_ctx_device(tmp_path, monkeypatch):
    from icml25.core.models import MLP
    from icml25.pointwise_info import experiments as ex

    _cuda(monkeypatch)
    rng = np.random.default_rng(0)

    def images(n):
        return torch.tensor(rng.random((n, 784), dtype=np.float32))

    labels = np.arange(60) % 10
    sp = ex.Split(
        "d", images(60), torch.tensor(labels), images(60), labels, images(60), labels,
        lambda: MLP(784, (16, 8), 10), 1, "net.3",
    )  # fmt: skip
    monkeypatch.setattr(ex, "_split", lambda setting, b, seed: sp)
    seen: dict[str, list[str]] = {"fit": [], "PVI": [], "PMI": []}
    real_fit, real_pvi, real_pmi = ex._fit, ex.PVI, ex.PMI

    def fit(model, sp, seed, device="cpu"):
        seen["fit"].append(device)
        return real_fit(model, sp, seed)  # on the CPU: this machine may have no GPU

    def on_cpu(name, real):
        def build(*args, **kw):
            seen[name].append(str(kw.pop("device", "cpu")))
            return real(*args, **kw)

        return build

    monkeypatch.setattr(ex, "_fit", fit)
    monkeypatch.setattr(ex, "PVI", on_cpu("PVI", real_pvi))
    monkeypatch.setattr(ex, "PMI", on_cpu("PMI", real_pmi))
    ctx = RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path, device="cuda")
    out = ex.run_setting("mlp", ex.BUDGETS["tiny"], 0, ctx)
    assert 0 <= out["acc"] <= 1
    assert seen["fit"] == ["cuda"] and seen["PMI"] == ["cuda"]
    assert seen["PVI"][0] == "cuda"  # the one that builds g' and the null model
