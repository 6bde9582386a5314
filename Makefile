# make demo: install what is missing, build, simulate the bundled GPT-3 175B example and print its summary.
# make test: install what is missing, build, run the test suite, the ASan+UBSan suite and the fuzzers.
JOBS ?= $(shell nproc)
BUILD ?= build
FUZZ_SECONDS ?= 10

.PHONY: deps build build-tests demo test test-unit test-sanitize fuzz bench clean

deps:
	@bash scripts/install-deps

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_BENCH=ON >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The test suite's release configuration: the same build folder without the benchmarks (`make bench` adds them).
build-tests: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_BENCH=OFF >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# demo builds only what it runs (the CLI and its library), not the tests, benchmarks or Python module.
demo: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target stepsim
	@./$(BUILD)/stepsim simulate examples/gpt3-175b-h800.yaml

test-unit: build-tests
	@echo "make: release suite starts at $$(date +%T)"
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# One sanitizer configuration serves the ASan+UBSan suite and the fuzzers: clang with ASan, UBSan and libFuzzer's
# coverage instrumentation (-fsanitize=fuzzer-no-link), so `make test` compiles the library twice, not three times.
SAN_BUILD ?= $(BUILD)-san

test-sanitize: deps
	@echo "make: sanitizer build starts at $$(date +%T)"
	@bash scripts/configure-sanitizer $(SAN_BUILD)
	@cmake --build $(SAN_BUILD) -j$(JOBS)
	@echo "make: sanitizer suite starts at $$(date +%T)"
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(SAN_BUILD) --output-on-failure -j$(JOBS)

fuzz: deps
	@echo "make: fuzzers start at $$(date +%T)"
	@bash scripts/run-fuzzers $(FUZZ_SECONDS) $(SAN_BUILD)

test: test-unit test-sanitize fuzz

bench: build
	@./$(BUILD)/bench_engine
	@bash bench/run-scale 5

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(SAN_BUILD) build-fuzz
