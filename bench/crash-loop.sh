#!/usr/bin/env bash
# kill -9 crash loop: ROUNDS rounds (default 100) of 50 concurrent uploads
# against the release binary, each round ended by a SIGKILL at a seeded random
# moment and checked after a restart (see crates/wirespeed/tests/crash_loop.rs).
# Prints rounds, uploads, acknowledged uploads and torn files (must be 0).
# SEED=N repeats a run's choices (the seed is printed either way).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-100}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
export CRASH_ROUNDS=$ROUNDS
if [[ -n ${SEED:-} ]]; then export CRASH_SEED=$SEED; fi
cargo test --release -q -p wirespeed --test crash_loop -- --nocapture --test-threads 1 \
    >"$out" 2>&1 || status=$?
grep -E '^round ' "$out" | tail -n 2 >&2
summary=$(grep -E '^crash loop: seed [0-9]+ rounds' "$out" || true)
if [[ $status -ne 0 || -z $summary ]]; then
    cat "$out" >&2
    echo "crash loop FAILED (exit $status)" >&2
    exit 1
fi
echo "$summary"
