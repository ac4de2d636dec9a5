"""Bad input at every public entry point of soup_of_experts: a clear error naming the argument.

# BatchSampler and MetaDistribution are protocols a user's class follows:
# not entry points: TrainLog, BatchSampler, MetaDistribution
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from icml25.soup_of_experts import (
    ByteGPT,
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    check_domain_weights,
    domain_centroids,
    encode_bytes,
    estimate_domain_weights,
    next_token_loss,
    train_on_mixture,
    train_soup,
)

NAN = float("nan")


def lm() -> ByteGPT:
    return ByteGPT(dim=8, layers=1, heads=2, context=8)


def soup(**kw: Any) -> SoupOfExperts:
    return SoupOfExperts(lm(), **{"n_domains": 3, "n_experts": 2, **kw})


def sampler(k: int = 3) -> MixtureSampler:
    return MixtureSampler([torch.arange(50) % 256 for _ in range(k)], seq_len=8)


H = [0.2, 0.3, 0.5]
CASES: list[tuple[str, Any, type[BaseException], str]] = [
    # h not on the simplex, wrong length, NaN: at every entry point that takes h
    ("instantiate:sum", lambda: soup().instantiate([0.5, 0.5, 0.5]), ValueError, "simplex"),
    ("instantiate:neg", lambda: soup().instantiate([1.5, -0.5, 0.0]), ValueError, "simplex"),
    ("instantiate:len", lambda: soup().instantiate([0.5, 0.5]), ValueError, "3 domain weights"),
    ("instantiate:nan", lambda: soup().instantiate([NAN, 0.5, 0.5]), ValueError, "finite"),
    ("instantiate:2-D", lambda: soup().instantiate(np.eye(3)), ValueError, "1-D"),
    ("instantiate:str", lambda: soup().instantiate("abc"), ValueError, "h must"),
    (
        "forward:nan",
        lambda: soup()(torch.tensor([NAN, 0, 1]), torch.zeros(1, 4).long()),
        ValueError,
        "finite",
    ),
    ("coefficients:len", lambda: soup().coefficients([1.0]), ValueError, "h must"),
    ("parameters_for:sum", lambda: soup().parameters_for([0, 0, 0]), ValueError, "simplex"),
    ("check_domain_weights:len", lambda: check_domain_weights([1.0], 2), ValueError, "h must"),
    (
        "SoupOfExperts:model",
        lambda: SoupOfExperts("x", n_domains=2, n_experts=2),
        TypeError,
        "model must",
    ),
    ("SoupOfExperts:n_domains", lambda: soup(n_domains=0), ValueError, "n_domains"),
    ("SoupOfExperts:n_experts", lambda: soup(n_experts=1.5), ValueError, "n_experts"),
    (
        "SoupOfExperts:routerless",
        lambda: soup(router=False, n_experts=2),
        ValueError,
        "n_experts must equal n_domains",
    ),
    ("SoupOfExperts:router", lambda: soup(router="yes"), TypeError, "router must"),
    ("SoupOfExperts:output", lambda: soup(router_output="relu"), ValueError, "router_output"),
    ("SoupOfExperts:rank", lambda: soup(rank=0), ValueError, "rank"),
    ("SoupOfExperts:std", lambda: soup(expert_init_std=NAN), ValueError, "expert_init_std"),
    ("SoupOfExperts:hidden", lambda: soup(router_hidden=0), ValueError, "router_hidden"),
    (
        "SoupOfExperts:no params",
        lambda: SoupOfExperts(torch.nn.ReLU(), n_domains=2, n_experts=2),
        ValueError,
        "at least one parameter",
    ),
    (
        "SparseDirichlet:support",
        lambda: SparseDirichlet(3, max_support=4),
        ValueError,
        "max_support",
    ),
    (
        "SparseDirichlet:conc",
        lambda: SparseDirichlet(3, concentration=0.0),
        ValueError,
        "concentration",
    ),
    ("SparseDirichlet.sample:rng", lambda: SparseDirichlet(3).sample(0), TypeError, "rng"),
    ("MixtureSampler:empty", lambda: MixtureSampler([], seq_len=4), ValueError, "domains"),
    (
        "MixtureSampler:float",
        lambda: MixtureSampler([torch.zeros(50)], seq_len=4),
        ValueError,
        "domains[0]",
    ),
    (
        "MixtureSampler:short",
        lambda: MixtureSampler([torch.arange(5)], seq_len=4),
        ValueError,
        "more than seq_len",
    ),
    (
        "MixtureSampler:seq_len",
        lambda: MixtureSampler([torch.arange(50)], seq_len=0),
        ValueError,
        "seq_len",
    ),
    (
        "MixtureSampler.sample:h",
        lambda: sampler().sample([1.0, 0.0], 4, np.random.default_rng()),
        ValueError,
        "h must",
    ),
    (
        "MixtureSampler.sample:batch",
        lambda: sampler().sample(H, 0, np.random.default_rng()),
        ValueError,
        "batch_size",
    ),
    (
        "train_soup:steps",
        lambda: train_soup(soup(), sampler(), SparseDirichlet(3), steps=0),
        ValueError,
        "steps",
    ),
    (
        "train_soup:lr",
        lambda: train_soup(soup(), sampler(), SparseDirichlet(3), steps=1, lr=-1.0),
        ValueError,
        "lr",
    ),
    (
        "train_soup:meta k",
        lambda: train_soup(soup(), sampler(), SparseDirichlet(2, max_support=2), steps=1),
        ValueError,
        "domains",
    ),
    (
        "train_soup:soup",
        lambda: train_soup(lm(), sampler(), SparseDirichlet(3), steps=1),
        TypeError,
        "soup must",
    ),
    (
        "train_soup:sampler",
        lambda: train_soup(soup(), [1], SparseDirichlet(3), steps=1),
        TypeError,
        "sampler must",
    ),
    (
        "train_soup:clip",
        lambda: train_soup(soup(), sampler(), SparseDirichlet(3), steps=1, grad_clip=0.0),
        ValueError,
        "grad_clip",
    ),
    (
        "train_on_mixture:h",
        lambda: train_on_mixture(lm(), sampler(), [NAN, 0, 1], steps=1),
        ValueError,
        "finite",
    ),
    (
        "train_on_mixture:batch",
        lambda: train_on_mixture(lm(), sampler(), H, steps=1, batch_size=0),
        ValueError,
        "batch_size",
    ),
    (
        "train_on_mixture:model",
        lambda: train_on_mixture(None, sampler(), H, steps=1),
        TypeError,
        "model must",
    ),
    (
        "next_token_loss:shape",
        lambda: next_token_loss(torch.zeros(2, 5, 256), torch.zeros(2, 5).long()),
        ValueError,
        "output must be logits",
    ),
    (
        "next_token_loss:float",
        lambda: next_token_loss(torch.zeros(2, 4, 256), torch.zeros(2, 5)),
        ValueError,
        "batch must",
    ),
    ("ByteGPT:heads", lambda: ByteGPT(dim=10, heads=4), ValueError, "multiple of heads"),
    ("ByteGPT:context", lambda: ByteGPT(context=0), ValueError, "context"),
    ("ByteGPT.forward:long", lambda: lm()(torch.zeros(1, 9).long()), ValueError, "at most 8"),
    ("encode_bytes:type", lambda: encode_bytes(b"abc"), TypeError, "text must"),
    (
        "domain_centroids:missing",
        lambda: domain_centroids(np.zeros((3, 2)), [0, 0, 2], 3),
        ValueError,
        "every domain",
    ),
    (
        "domain_centroids:label",
        lambda: domain_centroids(np.zeros((3, 2)), [0, 1, 5], 3),
        ValueError,
        "labels must be in",
    ),
    (
        "domain_centroids:nan",
        lambda: domain_centroids(np.full((3, 2), NAN), [0, 1, 2], 3),
        ValueError,
        "features must be finite",
    ),
    (
        "estimate_domain_weights:dim",
        lambda: estimate_domain_weights(np.zeros((4, 2)), np.zeros((3, 5))),
        ValueError,
        "dimension",
    ),
    (
        "estimate_domain_weights:metric",
        lambda: estimate_domain_weights(np.ones((4, 2)), np.ones((3, 2)), metric="l1"),
        ValueError,
        "metric",
    ),
    (
        "estimate_domain_weights:smoothing",
        lambda: estimate_domain_weights(np.ones((4, 2)), np.ones((3, 2)), smoothing=-1.0),
        ValueError,
        "smoothing",
    ),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_error(call: Any, exc: type[BaseException], words: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert words.lower() in str(info.value).lower(), str(info.value)
