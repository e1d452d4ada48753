#!/usr/bin/env bash
# The whole test suite, as CI runs it: install dependencies, build, run
# every ctest tier (unit, fuzz-replay, integration, security, faults: the
# fault tests mount small tmpfs file systems, so run as root), then the
# failover harness, plain and with mutual TLS (chaos: against
# docker-compose when a Docker engine answers, else against local
# processes), then every fuzz target for a bounded time (clang, libFuzzer),
# then build again with AddressSanitizer + UndefinedBehaviorSanitizer and
# run the tiers and the process chaos scenarios there. WEIR_TEST_QUICK=1
# skips fuzzing and the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
jobs=$(nproc)

echo "== build (RelWithDebInfo)"
BUILD_DIR=build deploy/build.sh -DBUILD_TESTING=ON
echo "== tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 900 -LE chaos)

# The compose scenarios when a Docker engine answers, else the same
# scenarios as local processes.
chaos_env=process
if command -v docker >/dev/null 2>&1 && command -v docker-compose >/dev/null 2>&1 &&
    timeout 30 docker info >/dev/null 2>&1; then
    chaos_env=compose
fi
echo "== failover harness ($chaos_env)"
(cd build && ctest --output-on-failure --timeout 1800 -R "^chaos_${chaos_env}(_tls|_scram)?\$")

if [ "${WEIR_TEST_QUICK:-0}" != 1 ]; then
    # Every decoder's libFuzzer target under ASan + UBSan for a bounded
    # time (WEIR_FUZZ_SECONDS each, 30 by default), from its seed corpus.
    echo "== fuzzing (clang, libFuzzer, ASan + UBSan, ${WEIR_FUZZ_SECONDS:-30} s per target)"
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DWEIR_FUZZ=ON -DBUILD_TESTING=ON \
        -DWEIR_FUZZ_SECONDS="${WEIR_FUZZ_SECONDS:-30}" >/dev/null
    cmake --build build-fuzz -j "$jobs" --target fuzz_all
    (cd build-fuzz && ctest --output-on-failure -j "$jobs" -L '^fuzz$')

    echo "== build (ASan + UBSan)"
    BUILD_DIR=build-asan BUILD_TYPE=Debug deploy/build.sh -DWEIR_SANITIZE=ON -DBUILD_TESTING=ON
    echo "== tests under ASan + UBSan"
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j "$jobs" --timeout 1800 -LE chaos)
    echo "== failover harness under ASan + UBSan (process)"
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure --timeout 1800 -R '^chaos_process$')
fi
