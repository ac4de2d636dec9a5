"""Device and dtype following (issue 67) of equilibrium_planner, compositional, ipv_bench and
enzyme_rag.

The convention: a function or module follows the device (and dtype) of its inputs or of the
model it wraps; an API that builds its own model takes ``device=``; NumPy results come back
through ``.cpu()``. Without a GPU the checks run on the ``meta`` device, in three forms:

* **meta in, meta out**: a model and inputs on ``meta`` give outputs on ``meta``. A tensor the
  library made on the CPU either raises when it meets a meta tensor or (some kernels accept a
  CPU input with meta weights) turns the output into a CPU tensor: both fail here.
* **reaches the data**: an API that must read values (``.item()``, ``.tolist()``, NumPy out)
  cannot finish on ``meta``; run on a meta model it must get as far as that first read, and the
  error must be meta's "no data", not a device mismatch.
* **no default-device tensors**: under ``with torch.device("meta")`` every factory call without
  a ``device=`` lands on ``meta``; a CPU model must still give exactly its CPU results.

Plus float64 models and inputs give float64 outputs (matching float32 within tolerance), and,
where CUDA is present, CUDA against CPU.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from icml25.compositional import MultiHeadNet, embed
from icml25.enzyme_rag import (
    AxialMSADiffusion,
    EnzymeRAG,
    EnzymeSubstrateClassifier,
    msa_batch,
    oadm_loss,
    sample_oadm,
    train_classifier,
    train_generator,
)
from icml25.enzyme_rag.sequences import N_INPUT_TOKENS, N_TOKENS
from icml25.equilibrium_planner.env import make_tasks
from icml25.equilibrium_planner.equilibrium import (
    WorldModel,
    closed_loop,
    pretrain_base,
    solve_fixed_point,
    train_equilibrium,
    train_supervised,
)
from icml25.equilibrium_planner.model import (
    PlanTransformer,
    TransformerPlanner,
    build_prompt,
    collate,
    decode,
    lora_steps,
    plan_to_tokens,
    train_steps,
)
from icml25.ipv_bench import (
    FrameAverageModel,
    SingleFrameModel,
    TemporalModel,
    predict_proba,
    train_video_model,
)
from icml25.ipv_bench.models import FrameEncoder

META = torch.device("meta")


@pytest.fixture
def no_tf32() -> Any:
    """CUDA against CPU in full float32: TF32 convolutions (cuDNN's default on Ampere and
    later) round to 10 mantissa bits, which no float32 tolerance allows."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def cuda_test(fn: Callable[..., None]) -> Callable[..., None]:
    """A CUDA-against-CPU check: skipped without CUDA, run without TF32."""
    return pytest.mark.cuda(pytest.mark.usefixtures("no_tf32")(fn))


# what meta says when a value is read or an op's output shape depends on values (boolean
# masking), and not what a device mismatch says
_NO_DATA = re.compile(
    r"Cannot copy out of meta tensor|cannot be called on meta tensors|meta device type tensor"
    r"|torch\.nonzero\(\) raises unimplemented"
)


def reaches_the_data(fn: Callable[[], Any]) -> None:
    """``fn`` (on a meta model) runs until it reads a value, which meta cannot give."""
    with pytest.raises((NotImplementedError, RuntimeError, TypeError)) as err:
        fn()
    assert _NO_DATA.search(str(err.value)), f"not meta's 'no data' error: {err.value}"


def on_meta(*tensors: torch.Tensor) -> None:
    for t in tensors:
        assert t.device == META, f"a {tuple(t.shape)} output on {t.device}, not on meta"


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# =============================================================== equilibrium_planner
TASKS = make_tasks(seed=0, randomize_ids=True)["train"][:3]
PROMPTS = [build_prompt(t, [], None) for t in TASKS]
EXAMPLES = [(p, plan_to_tokens(t.gold)) for p, t in zip(PROMPTS, TASKS, strict=True)]


def _planner(device: torch.device | str = "cpu", seed: int = 0) -> PlanTransformer:
    torch.manual_seed(seed)
    return PlanTransformer(d_model=16, n_layers=1).to(device)


def test_plan_transformer_forward_and_cached_step_stay_on_meta() -> None:
    model = _planner(META)
    tok, ids, room, valid, _ = (t.to(META) for t in collate(PROMPTS, left=True))
    on_meta(model(tok, ids, room, valid))
    past: list[tuple[torch.Tensor, torch.Tensor]] = []
    on_meta(model(tok, ids, room, valid, last_only=True, past=past))
    z = torch.zeros(len(PROMPTS), 1, dtype=torch.long, device=META)
    v = torch.cat([valid, torch.ones(len(PROMPTS), 1, dtype=torch.bool, device=META)], 1)
    on_meta(model(z, z, z, v, last_only=True, past=past))  # one KV-cached decoding step


def test_plan_transformer_built_on_meta_keeps_its_buffers_there() -> None:
    with torch.device(META):
        model = PlanTransformer(d_model=16, n_layers=1)
    on_meta(*model.parameters(), *model.buffers())
    on_meta(model(*collate(PROMPTS, left=True, device=META)[:4]))


def test_collate_builds_on_the_device_asked_for() -> None:
    on_meta(*collate(PROMPTS, [[1, 2]] * 3, left=False, device=META))
    cpu = collate(PROMPTS, [[1, 2]] * 3, left=False)
    assert all(t.device.type == "cpu" for t in cpu)


def test_plan_transformer_in_float64_matches_float32() -> None:
    model = _planner()
    batch = collate(PROMPTS, left=True)[:4]
    ref = model(*batch)
    wide = model.double()(*batch)
    assert wide.dtype == torch.float64
    torch.testing.assert_close(wide.float(), ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("top_k", [1, 3])
def test_decode_on_a_meta_model_runs_on_meta_until_it_reads_tokens(top_k: int) -> None:
    # top_k = 3 also draws on the (CPU) generator: a copy out of meta, not a device mismatch
    reaches_the_data(lambda: decode(_planner(META), PROMPTS, top_k=top_k, generator=gen()))


def test_planner_apis_on_a_meta_model_reach_their_first_read_on_meta() -> None:
    planner = TransformerPlanner(_planner(META))
    reaches_the_data(lambda: solve_fixed_point(planner, TASKS, generator=gen()))
    reaches_the_data(lambda: closed_loop(planner, TASKS, mode="environment", generator=gen()))
    opt = torch.optim.SGD(planner.model.parameters(), lr=0.1)
    kw: dict[str, Any] = {"steps": 1, "batch_size": 2, "generator": gen()}
    reaches_the_data(lambda: train_steps(planner.model, EXAMPLES, optimizer=opt, **kw))
    reaches_the_data(lambda: lora_steps(planner.model, EXAMPLES, lr=0.1, rank=2, **kw))
    reaches_the_data(lambda: train_supervised(_planner(META), TASKS, steps=1, generator=gen()))
    reaches_the_data(lambda: pretrain_base(_planner(META), TASKS, steps=1, generator=gen()))
    reaches_the_data(lambda: train_equilibrium(_planner(META), TASKS, steps=1, generator=gen()))
    wm = WorldModel(_planner(META))
    pairs = [(t, t.gold, "Task success!") for t in TASKS]
    reaches_the_data(lambda: wm.fit(pairs, steps=1, generator=gen()))
    reaches_the_data(lambda: wm.feedback(TASKS, [t.gold for t in TASKS], generator=gen()))


def test_planner_inference_makes_no_tensor_on_the_default_device() -> None:
    planner = TransformerPlanner(_planner(), max_new=12)
    ref = decode(planner.model, PROMPTS, top_k=3, generator=gen(), max_new=12)
    solve = solve_fixed_point(planner, TASKS, max_iters=2, generator=gen())
    loop = closed_loop(planner, TASKS, max_iters=1, max_depth=2, generator=gen())
    wm = WorldModel(_planner(seed=1))
    fb = wm.feedback(TASKS, [t.gold for t in TASKS], generator=gen())
    with torch.device(META):
        assert decode(planner.model, PROMPTS, top_k=3, generator=gen(), max_new=12) == ref
        assert solve_fixed_point(planner, TASKS, max_iters=2, generator=gen()) == solve
        assert closed_loop(planner, TASKS, max_iters=1, max_depth=2, generator=gen()) == loop
        assert wm.feedback(TASKS, [t.gold for t in TASKS], generator=gen()) == fb


def test_lora_steps_adapt_a_float64_model_in_float64() -> None:
    model = _planner().double()
    losses = lora_steps(model, EXAMPLES, steps=2, batch_size=2, lr=1e-2, generator=gen(), rank=2)
    assert len(losses) == 2 and np.isfinite(losses).all()
    assert all(p.dtype == torch.float64 for p in model.parameters())


@cuda_test
def test_planner_on_cuda_matches_the_cpu() -> None:
    cpu, gpu = _planner(), _planner("cuda")
    batch = collate(PROMPTS, left=True)[:4]
    torch.testing.assert_close(
        gpu(*(t.cuda() for t in batch)).cpu(), cpu(*batch), atol=1e-4, rtol=1e-4
    )
    assert decode(gpu, PROMPTS, top_k=1, generator=gen()) == decode(
        cpu, PROMPTS, top_k=1, generator=gen()
    )
    sampled = decode(gpu, PROMPTS, top_k=3, generator=gen())  # a CPU generator, a CUDA model
    assert len(sampled) == len(PROMPTS)
    kw: dict[str, Any] = {"steps": 3, "batch_size": 2}
    a = train_steps(cpu, EXAMPLES, optimizer=torch.optim.SGD(cpu.parameters(), lr=0.1),
                    generator=gen(), **kw)  # fmt: skip
    b = train_steps(gpu, EXAMPLES, optimizer=torch.optim.SGD(gpu.parameters(), lr=0.1),
                    generator=gen(), **kw)  # fmt: skip
    np.testing.assert_allclose(a, b, rtol=1e-4)
    lora_steps(gpu, EXAMPLES, lr=1e-2, rank=2, generator=gen(), **kw)
    assert all(p.is_cuda for p in gpu.parameters())
    solve_fixed_point(TransformerPlanner(gpu), TASKS, max_iters=2, generator=gen())


# =============================================================== compositional
class _Spy(nn.Module):
    """Reports where and in what dtype its inputs arrive; its parameter says it lives on
    ``device`` (returns host zeros, so that embed can finish)."""

    def __init__(self, device: torch.device | str, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(1, device=device, dtype=dtype))
        self.seen: list[tuple[torch.device, torch.dtype]] = []

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> Any:
        self.seen.append((x.device, x.dtype))
        if attention_mask is not None:
            self.seen.append((attention_mask.device, attention_mask.dtype))
        return torch.zeros(len(x), 3, device="cpu")


def test_embed_moves_each_batch_to_the_encoders_device_and_dtype() -> None:
    spy = _Spy(META, torch.float64)
    Z = embed(spy, np.ones((5, 4), dtype=np.float32), batch_size=2)
    assert Z.shape == (5, 3)
    assert spy.seen == [(META, torch.float64)] * 3
    ids = {"x": torch.ones(4, 6, dtype=torch.long), "attention_mask": torch.ones(4, 6).long()}
    spy = _Spy(META)
    embed(spy, ids, batch_size=4)
    assert spy.seen == [(META, torch.long), (META, torch.long)]  # ids and masks keep their dtype


def test_embed_runs_a_float64_encoder_in_float64() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 4))
    lin = nn.Linear(4, 3).double()
    want = X @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(embed(lin, X), want, rtol=1e-12, atol=1e-12)
    # a float32 encoder still gets float32 inputs (the embeddings come back as float64)
    lin32 = nn.Linear(4, 3)
    Z = embed(lin32, X)
    assert Z.dtype == np.float64
    np.testing.assert_allclose(Z, X @ lin32.weight.detach().numpy().T + lin32.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-5)  # fmt: skip


def test_embed_makes_no_tensor_on_the_default_device() -> None:
    X = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    enc = nn.Sequential(nn.Linear(4, 5), nn.Tanh())
    ref = embed(enc, X, batch_size=4)
    flat = embed(nn.Flatten(), X)
    with torch.device(META):
        np.testing.assert_array_equal(embed(enc, X, batch_size=4), ref)
        np.testing.assert_array_equal(embed(nn.Flatten(), X), flat)


def test_multi_head_net_follows_meta_and_float64() -> None:
    def net() -> MultiHeadNet:
        return MultiHeadNet(nn.Sequential(nn.Flatten(), nn.Linear(12, 8)), feature_dim=8,
                            n_values=[3, 4])  # fmt: skip

    on_meta(*net().to(META)(torch.ones(2, 3, 4, device=META)))
    outs = net().double()(torch.ones(2, 3, 4, dtype=torch.float64))
    assert [o.dtype for o in outs] == [torch.float64] * 2


@cuda_test
def test_embed_on_cuda_matches_the_cpu() -> None:
    X = np.random.default_rng(2).normal(size=(9, 4)).astype(np.float32)
    torch.manual_seed(0)
    enc = nn.Linear(4, 5)
    ref = embed(enc, X, batch_size=4)
    np.testing.assert_allclose(embed(enc.cuda(), X, batch_size=4), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(embed(nn.Flatten(), torch.from_numpy(X).cuda()), X, rtol=1e-6)


# =============================================================== ipv_bench
VIDEO_MODELS = [SingleFrameModel, FrameAverageModel, TemporalModel]


def _video(cls: type[nn.Module], seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return cls(n_classes=3, dim=8, width=4)


def _clips(n: int = 2, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 4, 3, 16, 16, generator=g, dtype=dtype)


@pytest.mark.parametrize("cls", VIDEO_MODELS, ids=lambda c: c.__name__)
def test_video_models_stay_on_meta(cls: type[nn.Module]) -> None:
    model = _video(cls).to(META)
    on_meta(model(torch.ones(2, 4, 3, 16, 16, device=META)))
    on_meta(model(torch.ones(2, 4, 3, 16, 16, dtype=torch.uint8, device=META)))
    on_meta(FrameEncoder(dim=8, width=4).to(META)(torch.ones(2, 3, 16, 16, device=META)))


@pytest.mark.parametrize("cls", VIDEO_MODELS, ids=lambda c: c.__name__)
def test_video_models_in_float64_match_float32(cls: type[nn.Module]) -> None:
    model = _video(cls).eval()
    x = _clips()
    ref = model(x)
    wide = model.double()(x.double())
    assert wide.dtype == torch.float64
    torch.testing.assert_close(wide.float(), ref, atol=1e-5, rtol=1e-4)
    u8 = (x * 255).to(torch.uint8)  # uint8 clips are scaled in the model's dtype
    assert model(u8).dtype == torch.float64


def test_video_training_and_prediction_on_a_meta_model_reach_their_first_read() -> None:
    clips, labels = _clips(4).numpy(), np.array([0, 1, 2, 1])
    reaches_the_data(lambda: train_video_model(_video(TemporalModel).to(META), clips, labels))
    reaches_the_data(lambda: predict_proba(_video(TemporalModel).to(META), clips))


def test_video_prediction_makes_no_tensor_on_the_default_device() -> None:
    model = _video(TemporalModel).eval()
    clips = _clips(3).numpy()
    ref = predict_proba(model, clips, batch_size=2)
    with torch.device(META):
        np.testing.assert_array_equal(predict_proba(model, clips, batch_size=2), ref)


def test_video_training_in_float64_keeps_float64_weights() -> None:
    model = _video(SingleFrameModel).double()
    train_video_model(model, _clips(4).numpy(), np.array([0, 1, 2, 1]), epochs=1, batch_size=2)
    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert predict_proba(model, _clips(2).numpy()).dtype == np.float64


@cuda_test
def test_video_models_on_cuda_match_the_cpu() -> None:
    clips, labels = _clips(6).numpy(), np.array([0, 1, 2, 1, 0, 2])
    for cls in VIDEO_MODELS:
        cpu = train_video_model(_video(cls), clips, labels, epochs=1, batch_size=3)
        gpu = train_video_model(_video(cls).cuda(), clips, labels, epochs=1, batch_size=3)
        np.testing.assert_allclose(
            predict_proba(gpu, clips), predict_proba(cpu, clips), rtol=1e-3, atol=1e-4
        )


# =============================================================== enzyme_rag
L, S, F_MOL = 6, 3, 8
_rng = np.random.default_rng(0)
SEQS = _rng.integers(0, N_TOKENS, size=(4, L))
MOLS = _rng.random((S, F_MOL)).astype(np.float32)
PAIRS = np.array([[0, 0], [1, 1], [2, 2], [0, 3]])
CONTEXTS = np.array([[1, 2], [0, 2], [0, 1]])


def _generator(device: torch.device | str = "cpu", seed: int = 0) -> AxialMSADiffusion:
    torch.manual_seed(seed)
    return AxialMSADiffusion(mol_dim=F_MOL, dim=8, heads=2, layers=1, max_length=16).to(device)


def _classifier(
    length: int | None, device: torch.device | str = "cpu", seed: int = 0
) -> EnzymeSubstrateClassifier:
    torch.manual_seed(seed)
    return EnzymeSubstrateClassifier(length=length, mol_dim=F_MOL, dim=8, hidden=8).to(device)


def test_enzyme_models_stay_on_meta() -> None:
    q = torch.zeros(2, L, dtype=torch.long, device=META)
    ctx = torch.zeros(2, 3, L, dtype=torch.long, device=META)
    mol = torch.zeros(2, F_MOL, device=META)
    model = _generator(META)
    on_meta(model(q, ctx, mol), model(q), model(torch.rand(2, L, N_INPUT_TOKENS, device=META)))
    for length in (None, L):
        on_meta(_classifier(length, META)(q, mol))


def test_oadm_loss_and_sampling_stay_on_meta() -> None:
    target = torch.zeros(3, L, dtype=torch.long, device=META)
    mol = torch.zeros(3, F_MOL, device=META)
    model = _generator(META)
    for g in (None, gen()):  # a CPU generator draws on the CPU, then the draws move to meta
        out = oadm_loss(model, target, mol=mol, generator=g)
        on_meta(out.loss, out.logits, out.mask, out.t)
    ids, steps = sample_oadm(model, length=L, n=3, mol=mol, return_steps=True)
    on_meta(ids, steps)
    # host-side context and molecule go to the model's device
    on_meta(sample_oadm(model, length=L, n=2, context=torch.zeros(2, 1, L, dtype=torch.long),
                        mol=torch.zeros(2, F_MOL)))  # fmt: skip


def test_enzyme_models_in_float64_match_float32() -> None:
    q = torch.as_tensor(SEQS[:2])
    ctx = torch.as_tensor(SEQS[None, 1:3]).expand(2, -1, -1)
    mol = torch.as_tensor(MOLS[:2])
    model = _generator().eval()
    ref = model(q, ctx, mol)
    wide = model.double()(q, ctx, mol.double())
    assert wide.dtype == torch.float64
    torch.testing.assert_close(wide.float(), ref, atol=1e-5, rtol=1e-4)
    soft = torch.softmax(torch.randn(2, L, N_TOKENS, dtype=torch.float64), -1)
    assert model(soft, ctx, mol).dtype == torch.float64
    for length in (None, L):
        clf = _classifier(length).eval()
        ref = clf(q, mol)
        torch.testing.assert_close(clf.double()(q, mol).float(), ref, atol=1e-5, rtol=1e-4)
    out = oadm_loss(model, q, context=ctx, mol=mol, generator=gen())
    assert out.loss.dtype == torch.float64
    assert sample_oadm(model, length=L, n=2, generator=gen()).dtype == torch.long


def test_msa_batch_builds_on_the_device_asked_for() -> None:
    msas = [SEQS[:3], SEQS[1:4]]
    target, context = msa_batch(msas, 2, device=META)
    assert context is not None
    on_meta(target, context)
    t_cpu, _ = msa_batch(msas, 2)
    assert t_cpu.device.type == "cpu"


def test_enzyme_training_on_meta_models_reaches_its_first_read() -> None:
    kw: dict[str, Any] = {"sequences": SEQS, "mol_features": MOLS, "pairs": PAIRS, "steps": 1}
    reaches_the_data(lambda: train_classifier(_classifier(L, META), batch_size=4, **kw))
    for msas in (None, [SEQS[:3]] * len(PAIRS)):

        def fit(msas: list[np.ndarray] | None = msas) -> None:
            clf = _classifier(None, META)
            ctx = {"contexts": CONTEXTS, "depths": (0, 2), "msas": msas, "batch_size": 2}
            train_generator(_generator(META), classifier=clf, **ctx, **kw)

        reaches_the_data(fit)


def test_enzyme_sampling_makes_no_tensor_on_the_default_device() -> None:
    model = _generator().eval()
    ctx = torch.as_tensor(SEQS[None, :2]).expand(3, -1, -1)
    mol = torch.as_tensor(MOLS[:1]).expand(3, -1)
    ref = sample_oadm(model, length=L, n=3, context=ctx, mol=mol, generator=gen())
    with torch.device(META):
        got = sample_oadm(model, length=L, n=3, context=ctx, mol=mol, generator=gen())
    assert got.device.type == "cpu"
    torch.testing.assert_close(got, ref)


def test_enzyme_training_in_float64_keeps_float64_weights() -> None:
    kw: dict[str, Any] = {"sequences": SEQS, "mol_features": MOLS, "pairs": PAIRS, "steps": 2}
    clf = _classifier(L).double()
    train_classifier(clf, batch_size=4, **kw)
    model = _generator().double()
    hist = train_generator(model, contexts=CONTEXTS, depths=(0, 2), classifier=clf,
                           batch_size=2, **kw)  # fmt: skip
    assert np.isfinite(hist.loss).all()
    assert all(p.dtype == torch.float64 for p in [*clf.parameters(), *model.parameters()])


RAG_SMILES = ["CCO", "CCCO", "c1ccccc1O", "CC(=O)O"]
RAG_PAIRS = [(0, 0), (1, 1), (2, 2), (3, 3)]
RAG_KW: dict[str, Any] = {
    "d": 1, "dim": 8, "heads": 2, "layers": 1, "generator_steps": 2, "classifier_steps": 2,
    "batch_size": 2, "classifier_batch_size": 4, "aligner": "none",
}  # fmt: skip
RAG_ALIGNED = ["ACDEFGHIKL", "ACDEFGHIKM", "MNPQRSTVWY", "MNPQRSTVWA"]


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("gpu", r"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got 'gpu'"),
        (3.5, r"device must be a torch device .* got 3\.5"),
        ("cuda:7" if torch.cuda.is_available() else "cuda", r"not available on this machine"),
    ],
)
def test_enzyme_rag_refuses_a_device_by_name(device: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EnzymeRAG(device=device, **RAG_KW).fit(RAG_SMILES, RAG_ALIGNED, RAG_PAIRS)


def test_enzyme_rag_on_the_cpu_by_name_equals_the_default() -> None:
    ref = EnzymeRAG(**RAG_KW).fit(RAG_SMILES, RAG_ALIGNED, RAG_PAIRS)
    rag = EnzymeRAG(device=torch.device("cpu"), **RAG_KW).fit(RAG_SMILES, RAG_ALIGNED, RAG_PAIRS)
    assert rag.device_ == torch.device("cpu")
    assert rag.history_.loss == ref.history_.loss
    np.testing.assert_array_equal(
        rag.generate_tokens("CCCCO", n=3), ref.generate_tokens("CCCCO", n=3)
    )


def test_enzyme_rag_generates_where_its_model_is() -> None:
    rag = EnzymeRAG(**RAG_KW).fit(RAG_SMILES, RAG_ALIGNED, RAG_PAIRS)
    rag.model_.to(META)  # the retrieved rows and the molecule must follow it there
    reaches_the_data(lambda: rag.generate_tokens("CCCCO", n=2))


@cuda_test
def test_enzyme_rag_on_cuda_matches_the_cpu() -> None:
    q = torch.as_tensor(SEQS[:3])
    mol = torch.as_tensor(MOLS)
    cpu, gpu = _generator(), _generator("cuda")
    a = oadm_loss(cpu, q, mol=mol, generator=gen())
    b = oadm_loss(gpu, q.cuda(), mol=mol.cuda(), generator=gen())  # a CPU generator
    assert torch.equal(a.mask, b.mask.cpu())  # the same masks, drawn on the CPU
    torch.testing.assert_close(b.loss.cpu(), a.loss, atol=1e-4, rtol=1e-4)
    ids = sample_oadm(gpu, length=L, n=4, mol=mol[:1].expand(4, -1), generator=gen())
    assert ids.is_cuda and ids.shape == (4, L)
    ref = EnzymeRAG(**RAG_KW).fit(RAG_SMILES, RAG_ALIGNED, RAG_PAIRS)
    rag = EnzymeRAG(device="cuda", **RAG_KW).fit(RAG_SMILES, RAG_ALIGNED, RAG_PAIRS)
    assert next(rag.model_.parameters()).is_cuda and next(rag.classifier_.parameters()).is_cuda
    # the first step's reconstruction loss (later ones differ: Gumbel noise is device RNG)
    np.testing.assert_allclose(rag.history_.recon[0], ref.history_.recon[0], rtol=1e-3)
    tokens = rag.generate_tokens("CCCCO", n=3)
    assert isinstance(tokens, np.ndarray) and tokens.shape == (3, len(RAG_ALIGNED[0]))
