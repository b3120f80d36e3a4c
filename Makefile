# The commands the README names. Each runs a script under platform/scripts.
.PHONY: run train-demo test lint format bench bench-sandbox bench-agreement bench-verify bench-duplicates bench-difficulty bench-export bench-reward bench-trainer bench-load bench-sessions bench-synthesis bench-explore bench-languages sandbox-image

run:   ## set up and start the platform on embedded defaults (http://127.0.0.1:8000)
	@bash platform/scripts/run.sh

train-demo:  ## with `make run` running: a few trainer steps of the replay policy, then of a tiny local model
	@bash platform/scripts/train-demo.sh

test:  ## install what the tests need, lint, and run the whole suite on PostgreSQL
	@bash platform/scripts/test.sh $(PYTEST_ARGS)

lint:  ## ruff lint and format check, and the import contract (docs/architecture.md)
	@.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/lint-imports --no-cache

format:  ## apply ruff's formatting and safe fixes
	@.venv/bin/ruff check --fix . && .venv/bin/ruff format .

bench:  ## run every benchmark under bench/; each prints a JSON line of ratios
	@for b in bench/*.py; do .venv/bin/python "$$b" || exit 1; done

bench-sandbox:  ## the sandbox benchmark alone (warm, cold, Docker, HumanEval throughput)
	@.venv/bin/python bench/sandbox.py

bench-agreement:  ## references a plain process accepts and the judge rejects (HumanEval, catalogue, boundary tasks), probes held out
	@.venv/bin/python bench/reference_agreement.py

bench-explore:  ## one explore run (30 mutants, 200 inputs) beside the verdict runs of its mutants, on HumanEval
	@.venv/bin/python bench/explore.py

bench-verify:  ## the verification benchmark alone (all of HumanEval through the pipeline vs the raw engine)
	@.venv/bin/python bench/verify.py

bench-duplicates:  ## precision and recall of the near-duplicate detector on planted copies of HumanEval
	@.venv/bin/python bench/duplicates.py

bench-difficulty:  ## the 1PL fit on 100,000 outcomes and the near-duplicate search over 10,000 tasks
	@.venv/bin/python bench/difficulty.py

bench-export:  ## snapshot export (JSONL, Parquet) rows/s and peak RSS at 10,000 and 100,000 members, on PostgreSQL
	@.venv/bin/python bench/export.py

bench-reward:  ## reward API throughput (HTTP, a Celery worker, batches of 16) against the raw sandbox engine, p50/p99
	@.venv/bin/python bench/reward.py

bench-trainer:  ## share of a training step spent waiting for rewards, concurrent vs one by one (tiny model, CPU)
	@.venv/bin/python bench/trainer.py

bench-sessions:  ## agent sessions: a step against docker exec_run, create and fork, step kinds, sessions per core
	@.venv/bin/python bench/sessions.py

bench-synthesis:  ## generated inputs on all of HumanEval: survivors proven or probably equivalent, weak and hackable tasks before and after the proposed tests
	@.venv/bin/python bench/synthesis.py

bench-languages:  ## programs in other languages: compile cache hit over miss, sandboxed over bare, per-case cost, mixed throughput
	@.venv/bin/python bench/languages.py

bench-load:  ## the platform under load: 16 reward clients over HTTP (lost/errors/latency), then 500 verifications on 2 workers
	@.venv/bin/python bench/load.py $(BENCH_LOAD_ARGS)

sandbox-image:  ## start the Docker engine if needed (no bridge) and build the sandbox image offline
	@bash platform/scripts/ensure-docker.sh
