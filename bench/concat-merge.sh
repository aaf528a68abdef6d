#!/usr/bin/env bash
# bench/concat-merge.sh — how long a tus final upload (concatenation) takes
# to join its partial uploads into the published file, on a given
# filesystem. Not a test: prints a markdown row per round.
#
#   DIR=/var/tmp SIZE_GIB=10 PARTS=4 bash bench/concat-merge.sh
#   DIR=/dev/shm SIZE_GIB=4 bash bench/concat-merge.sh
#
# Serves DIR/wirespeed-concat-bench (removed at exit; `--no-fsync` unless
# FSYNC=1), sends PARTS partial uploads of SIZE_GIB/PARTS each with curl
# (zeros from /dev/zero: the join does not look at the bytes), then times
# the final POST (it answers once the file is published, or after 10 s
# with the join going on) and how long until `HEAD` on the final says
# offset = length (the file published whole). Peak space:
# the parts plus what is appended to the first (about 2x SIZE_GIB less a
# part, less where the filesystem clones ranges).
set -euo pipefail

DIR=${DIR:-/var/tmp}
SIZE_GIB=${SIZE_GIB:-10}
PARTS=${PARTS:-4}
ROUNDS=${ROUNDS:-2}
BENCH=concat-merge
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

WS=${WIRESPEED:-}
if [[ -z "$WS" ]]; then
    log "building wirespeed (release)"
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    WS="$REPO/target/release/wirespeed"
fi
ROOT="$DIR/wirespeed-concat-bench"
rm -rf "$ROOT" && mkdir -p "$ROOT/m"
trap 'cleanup; rm -rf "$ROOT"' EXIT
FSYNC_ARG=(--no-fsync)
[[ "${FSYNC:-0}" == 1 ]] && FSYNC_ARG=()
"$WS" serve "$ROOT" --listen 127.0.0.1:0 "${FSYNC_ARG[@]}" >"$W/serve.out" 2>"$W/serve.log" &
PIDS+=($!)
SERVER=$!
# CPU seconds (user + system) the server has used so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$SERVER/stat"; }
BASE=$(wait_listening "$W/serve.out") || { cat "$W/serve.log" >&2; exit 1; }
FS=$(stat -f -c %T "$DIR")
PART=$(((SIZE_GIB << 30) / PARTS))
log "$PARTS parts of $PART bytes on $DIR ($FS)"

echo "| filesystem | file | parts | final POST answered (s) | published after (s) | server CPU for the join (s) | load avg | publishes |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for round in $(seq "$ROUNDS"); do
    urls=()
    for i in $(seq "$PARTS"); do
        loc=$(curl -sS -o /dev/null -D - -X POST "$BASE/-/uploads/m/" -H 'Tus-Resumable: 1.0.0' \
            -H 'Upload-Concat: partial' -H "Upload-Length: $PART" \
            | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
        head -c "$PART" /dev/zero | curl -sS -f -o /dev/null -X PATCH "$BASE$loc" -T - \
            -H 'Tus-Resumable: 1.0.0' -H 'Upload-Offset: 0' \
            -H 'Content-Type: application/offset+octet-stream'
        urls+=("$loc")
    done
    sync
    meta=$(printf 'filename %s' "$(printf 'f%s.bin' "$round" | base64)")
    c0=$(cpu)
    t0=$(date +%s.%N)
    t=$(curl -sS -D "$W/final.head" -o "$W/final.body" -w '%{http_code} %{time_total}' -X POST \
        "$BASE/-/uploads/m/" -H 'Tus-Resumable: 1.0.0' -H "Upload-Concat: final;${urls[*]}" \
        -H "Upload-Metadata: $meta")
    fin=$(tr -d '\r' <"$W/final.head" | sed -n 's/^[Ll]ocation: //p')
    until curl -sS -I "$BASE$fin" -H 'Tus-Resumable: 1.0.0' | grep -qi '^upload-offset'; do
        sleep 0.2
    done
    t1=$(date +%s.%N)
    c1=$(cpu)
    load=$(cut -d' ' -f1 /proc/loadavg)
    size=$(stat -c %s "$ROOT/m/f$round.bin")
    echo "| $FS | $((size >> 30)) GiB | $PARTS | ${t#* } | $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') | $(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}') | $load | ${t% *}, $size bytes |"
    rm -f "$ROOT/m/f$round.bin"
done
