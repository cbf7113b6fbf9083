# claim-judge: `make run` sets up and judges the sample batch with the embedded model;
# `make test` runs the test suite. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)
DB ?= out/sample.db
SAMPLE ?= gold/samples/answers.jsonl

.PHONY: run test test-fast lint bench eval eval-large eval-all setup browser clean

# pyproject.toml declares ranges; constraints.txt holds the exact versions tested.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[embedded,dev,ray]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

setup: $(STAMP)

# Debian's Chromium for the browser tests (no browser download at test time).
browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "noto sans cjk" || \
	  { (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-cjk >/dev/null) \
	    || echo "warning: could not install chromium; browser tests will be skipped"; }

run: $(STAMP)
	mkdir -p out
	$(BIN)/judge run $(SAMPLE) --db $(DB); status=$$?; \
	  $(BIN)/judge export --db $(DB) --format jsonl -o out/sample_verdicts.jsonl && \
	  echo "verdicts: out/sample_verdicts.jsonl; inspect one with: $(BIN)/judge show ANSWER_ID --db $(DB)"; \
	  test $$status -eq 0 -o $$status -eq 2

test: $(STAMP) browser
	$(BIN)/ruff check judge calibration tests bench
	$(BIN)/python -m mypy judge calibration
	$(BIN)/python -m pytest -q -ra

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not embedded and not browser and not peers"

lint: $(STAMP)
	$(BIN)/ruff check judge calibration tests bench
	$(BIN)/python -m mypy judge calibration

# Side by side with the peers' recorded figures on shared/bench (see bench/README.md); prints
# figures, asserts nothing. BENCH_ARGS=--embedded adds the embedded model's seconds per claim.
bench: $(STAMP)
	$(BIN)/python bench/bench.py $(BENCH_ARGS)

# Judge the fixed external-gold check subset (358 claims, gold/eval_xl.jsonl) with the embedded
# default model (about 40 min on 2 cores from an empty store; resumable, stored calls are
# reused), print the calibration report, and regenerate from it the README quality table
# (between <!-- quality:start --> and <!-- quality:end -->), the detailed figures of
# research/README.md and its judge-version history.
EVAL_DB ?= out/eval.db
EVAL_GOLD ?= gold/eval_xl.jsonl
# The per-dataset fits and learning curves (research/fit_per_domain.py) join the README block.
FIT_REPORT ?= research/reports/fit_per_domain.json
# Chinese beside English: the default's (head v8) reports of the OCNLI check draw, one per script
# (judge eval-gold gold/ocnli_check.jsonl and gold/ocnli_check.zh-tw.jsonl, research/README.md).
CHINESE_REPORTS ?= research/reports/ocnli_check_v8.json research/reports/ocnli_check_v8.zh-tw.json

eval: $(STAMP)
	mkdir -p out
	$(BIN)/judge eval-gold $(EVAL_GOLD) --db $(EVAL_DB) --output-json out/eval.json --html out/eval.html
	$(BIN)/python -m research.quality_block --update-readme out/eval.json --readme README.md --details research/README.md $(if $(wildcard $(FIT_REPORT)),--fit $(FIT_REPORT)) $(if $(wildcard $(CHINESE_REPORTS)),--chinese $(wildcard $(CHINESE_REPORTS)))
	$(BIN)/python -m research.history --readme research/README.md

# The 156-item check subset (gold/eval_large.jsonl, inside the 358; about 20 min from an empty
# store); its report goes to out/eval_large.{json,html}. The 48-item one (about 6 min):
# make eval EVAL_GOLD=gold/eval_subset.jsonl.
eval-large: $(STAMP)
	mkdir -p out
	$(BIN)/judge eval-gold gold/eval_large.jsonl --db $(EVAL_DB) --output-json out/eval_large.json --html out/eval_large.html

# Every check item (785, gold/eval_all.jsonl; it holds the 358; about 45 min more once the 358
# are stored): its report goes to out/eval_all.{json,html}.
eval-all: $(STAMP)
	mkdir -p out
	$(BIN)/judge eval-gold gold/eval_all.jsonl --db $(EVAL_DB) --output-json out/eval_all.json --html out/eval_all.html

clean:
	rm -rf out .pytest_cache .ruff_cache
