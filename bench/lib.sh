# bench/lib.sh — sourced by the bench scripts (set BENCH=name first):
# a work dir $W removed at exit (kept with KEEP=1), background $PIDS killed at
# exit, $REPO, log, median (of numbers on stdin) and ratio.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=$(mktemp -d "/tmp/wirespeed-$BENCH.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ "${KEEP:-0}" == 1 ]] && echo "kept $W" >&2 || rm -rf "$W"
}
trap cleanup EXIT
log() { echo "[$BENCH] $*" >&2; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"} else if (NR%2) {print a[(NR+1)/2]} else {print (a[NR/2]+a[NR/2+1])/2}}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b>0) printf "%.2f", a/b; else print "n/a"}'; }

# wait_listening FILE: prints the URL of `wirespeed serve`'s "listening on URL"
# line once FILE (its stdout) has it; fails after 10 s, saying so.
wait_listening() {
    local _
    for _ in $(seq 200); do grep -q '^listening on ' "$1" 2>/dev/null && break; sleep 0.05; done
    grep -q '^listening on ' "$1" 2>/dev/null \
        || { echo "the server did not start within 10 s (no 'listening on' in $1)" >&2; return 1; }
    sed -n 's/^listening on //p' "$1" | head -n 1
}
