# GRPO Lab's two quick-start commands; each sets everything up from a fresh clone first.
#   make run    set up .venv, then train `tiny` (the embedded default) on the CPU as a Ray job, end to end
#   make test   set up .venv (plus shellcheck), lint (ruff check + ruff format --check), then run every test
#               (pytest + nbval); CI runs exactly this
.PHONY: run test

run:
	bash scripts/setup.sh
	.venv/bin/grpolab run tiny --wait

test:
	bash scripts/setup.sh --tools
	.venv/bin/ruff check lib tests scripts benchmarks
	.venv/bin/ruff format --check lib tests scripts benchmarks
	.venv/bin/python -m pytest
