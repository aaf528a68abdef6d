#!/usr/bin/env bash
# Runs every libFuzzer target in fuzz/ for SECONDS each and prints a table:
# target, executions, crashes. Installs cargo-fuzz if missing; builds the
# targets on the stable toolchain (RUSTC_BOOTSTRAP=1 lets it use the
# nightly-only sanitizer flags); seeds fuzz/corpus/ from tests/corpora/.
#
#   bash bench/fuzz.sh                        # 60 s per target
#   SECONDS_PER_TARGET=20 bash bench/fuzz.sh  # SECONDS=20 works too
#   TARGETS="chunked base64" bash bench/fuzz.sh
#
# A crash leaves its input in fuzz/artifacts/<target>/ and the libFuzzer log
# in $LOGS (kept); replay it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/<file>
# Exits 1 if any target crashed.
set -uo pipefail
# bash's own $SECONDS counts up from the start of the script; a value given
# in the environment is taken over, so read it before anything else runs.
SECS=${SECONDS_PER_TARGET:-${SECONDS:-0}}
[ "$SECS" -gt 0 ] 2>/dev/null || SECS=60
cd "$(dirname "$0")/.."

export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked >&2 || exit 1
fi
export RUSTC_BOOTSTRAP=1

echo "== seeding fuzz/corpus from tests/corpora" >&2
bash fuzz/seed.sh >&2 || exit 1

TARGETS=${TARGETS:-$(cd fuzz && cargo fuzz list)}
echo "== building $(echo $TARGETS | wc -w) targets" >&2
(cd fuzz && cargo fuzz build -O) >&2 || exit 1

LOGS=${LOGS:-$(mktemp -d /tmp/wirespeed-fuzz.XXXXXX)}
rows=()
failed=0
for t in $TARGETS; do
  echo "== $t: ${SECS} s" >&2
  log="$LOGS/$t.log"
  (cd fuzz && cargo fuzz run -O "$t" -- -max_total_time="$SECS" -print_final_stats=1) >"$log" 2>&1
  rc=$?
  # libFuzzer's last "#N DONE" line, or the final stats when it stopped early.
  execs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')
  [ -n "$execs" ] || execs=$(grep -aoE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  crashes=0
  if [ "$rc" -ne 0 ]; then
    crashes=$(grep -ac 'Test unit written' "$log")
    [ "$crashes" -gt 0 ] || crashes=1
    failed=1
    echo "   $t failed (exit $rc), log: $log" >&2
    grep -aE "panicked at|artifact_prefix|Test unit written" "$log" | head -5 >&2
  fi
  rows+=("| $t | ${execs:-?} | $crashes |")
done

echo
echo "fuzz: ${SECS} s per target, $(nproc) CPUs, logs in $LOGS"
echo
echo "| target | executions | crashes |"
echo "|---|---:|---:|"
printf '%s\n' "${rows[@]}"
exit $failed
