# The two commands: `make up` runs the whole system, `make test` passes every test.
.PHONY: up test build setup setup-test lint bench fuzz clean

setup:
	@scripts/setup

setup-test:
	@scripts/setup --test

build: setup
	npm run build

up: build
	node packages/testenv/dist/up.js

test: setup-test
	npm run build
	node scripts/run-tests.js

lint: build
	node scripts/lint.js

bench: build
	node bench/dist/main.js

# 10,000 seeded hostile requests against the whole system (SVC_FUZZ_SEED, SVC_FUZZ_REQUESTS).
fuzz: build
	node test/dist/fuzz/main.js

clean:
	npm run clean
