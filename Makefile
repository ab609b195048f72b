.PHONY: check lint test bench
check: lint test
lint:
	.venv/bin/ruff check src tests bench examples
	.venv/bin/ruff format --check src tests bench examples
	.venv/bin/mypy
test:
	.venv/bin/pytest
bench:
	.venv/bin/python bench/bench_parser.py
	.venv/bin/python bench/bench_overhead.py
