#!/usr/bin/env bash
# The whole test suite, as CI runs it: install dependencies, build, run
# every ctest tier (unit, fuzz-replay, integration), then build again with
# AddressSanitizer + UndefinedBehaviorSanitizer and run the tiers there.
# WEIR_TEST_QUICK=1 skips the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
jobs=$(nproc)

echo "== build (RelWithDebInfo)"
BUILD_DIR=build deploy/build.sh -DBUILD_TESTING=ON
echo "== tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 900)

if [ "${WEIR_TEST_QUICK:-0}" != 1 ]; then
    echo "== build (ASan + UBSan)"
    BUILD_DIR=build-asan BUILD_TYPE=Debug deploy/build.sh -DWEIR_SANITIZE=ON -DBUILD_TESTING=ON
    echo "== tests under ASan + UBSan"
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j "$jobs" --timeout 1800)
fi
