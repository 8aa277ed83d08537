# The two commands: `make up` runs the whole system, `make test` passes every test.
.PHONY: up test build setup setup-test lint bench clean

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

clean:
	npm run clean
