#!/usr/bin/env bash
# bench/s3.sh — the S3 backend against a local MinIO (target/minio/minio,
# built by .ci/run):
#  1. PUT and GET of a SIZE_MB file through `wirespeed serve --storage s3://…`
#     (client: curl, which hashes nothing; `wirespeed put` would add a
#     sha-256 on both sides) vs the same transfer
#     straight to MinIO with boto3 (multipart upload and ranged parallel
#     download, its defaults: 8 MiB parts, 10 threads); ROUNDS interleaved
#     rounds, medians and wirespeed/direct ratios;
#  2. the server's peak RSS (VmHWM) over one MEM_GB upload (a sparse file,
#     Content-Length) through the S3 backend.
#
#   bash bench/s3.sh                          # SIZE_MB=1024 ROUNDS=5 MEM_GB=4
#   SIZE_MB=256 ROUNDS=3 MEM_GB=1 bash bench/s3.sh
#
# Everything runs on this machine (MinIO's data in the temp dir, which needs
# SIZE_MB * 3 + MEM_GB free): run it when nothing else is busy and quote the
# load average it prints. MB/s = 10^6 bytes per second.
set -euo pipefail
shopt -s inherit_errexit # a failed transfer inside $(secs …) stops the run
BENCH=s3
source "$(dirname "$0")/lib.sh"

SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-5}
MEM_GB=${MEM_GB:-4}
MINIO=${WIRESPEED_MINIO:-$REPO/target/minio/minio}
[[ -x "$MINIO" ]] || { echo "no MinIO at $MINIO: run bash .ci/run (or set WIRESPEED_MINIO)" >&2; exit 1; }
python3 -c 'import boto3' || { echo "boto3 is needed (pip install boto3)" >&2; exit 1; }

(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"
export AWS_ACCESS_KEY_ID=wirespeed-bench AWS_SECRET_ACCESS_KEY=wirespeed-bench-secret AWS_REGION=us-east-1

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MPORT=$(port)
EP="http://127.0.0.1:$MPORT"
mkdir -p "$W/minio"
MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY MINIO_BROWSER=off \
    "$MINIO" server --quiet --address "127.0.0.1:$MPORT" --console-address "127.0.0.1:$(port)" "$W/minio" >"$W/minio.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -fs "$EP/minio/health/live" >/dev/null && break; sleep 0.1; done

# The direct client: boto3 with its default multipart/ranged transfers.
cat >"$W/direct.py" <<EOF
import sys, boto3, botocore
s3 = boto3.client('s3', endpoint_url='$EP', config=botocore.config.Config(s3={'addressing_style': 'path'}))
op, key, path = sys.argv[1:4]
if op == 'mb':
    s3.create_bucket(Bucket=key)
elif op == 'put':
    s3.upload_file(path, 'bench', key)
else:
    s3.download_file('bench', key, path)
EOF
python3 "$W/direct.py" mb bench -

# A fresh server per measured phase: its peak RSS is that phase's own.
start_ws() {
    "$WS" serve --storage s3://bench/ws --s3-endpoint "$EP" --listen 127.0.0.1:0 >"$W/addr" 2>"$W/ws.log" &
    WSPID=$!
    PIDS+=($WSPID)
    URL=$(wait_listening "$W/addr") || { cat "$W/ws.log" >&2; exit 1; }
}
stop_ws() { kill "$WSPID"; wait "$WSPID" 2>/dev/null || true; }
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f\n", e-s}'; }
mbps() { awk -v t="$1" -v m="$SIZE_MB" 'BEGIN {printf "%.0f", m*1048576/1e6/t}'; }

log "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
head -c "$((SIZE_MB << 20))" /dev/urandom >"$W/src.bin"
start_ws
: >"$W/times"
for r in $(seq "$ROUNDS"); do
    a=$(secs python3 "$W/direct.py" put direct.bin "$W/src.bin")
    b=$(secs curl -fsS -o /dev/null -T "$W/src.bin" "$URL/f.bin")
    c=$(secs python3 "$W/direct.py" get direct.bin "$W/direct-back.bin")
    d=$(secs curl -fsS -o "$W/ws-back.bin" "$URL/f.bin")
    cmp -s "$W/src.bin" "$W/ws-back.bin" || { echo "wirespeed GET bytes differ" >&2; exit 1; }
    cmp -s "$W/src.bin" "$W/direct-back.bin" || { echo "direct GET bytes differ" >&2; exit 1; }
    rm -f "$W/ws-back.bin" "$W/direct-back.bin"
    echo "$a $b $c $d" >>"$W/times"
    log "round $r: PUT direct $(mbps "$a") MB/s, wirespeed $(mbps "$b") MB/s; GET direct $(mbps "$c") MB/s, wirespeed $(mbps "$d") MB/s"
done
# Room for the big upload below: the rounds' objects go.
curl -fsS -o /dev/null -X DELETE "$URL/f.bin"
python3 -c "import boto3, botocore; boto3.client('s3', endpoint_url='$EP', config=botocore.config.Config(s3={'addressing_style': 'path'})).delete_object(Bucket='bench', Key='direct.bin')"
stop_ws
col() { awk -v c="$1" '{print $c}' "$W/times" | median; }
pa=$(col 1) pb=$(col 2) ga=$(col 3) gb=$(col 4)
echo "S3 (MinIO on this machine), ${SIZE_MB} MiB, median of $ROUNDS interleaved rounds:"
printf "  PUT  direct (boto3) %5s MB/s   through wirespeed %5s MB/s   ratio %s\n" "$(mbps "$pa")" "$(mbps "$pb")" "$(ratio "$pa" "$pb")"
printf "  GET  direct (boto3) %5s MB/s   through wirespeed %5s MB/s   ratio %s\n" "$(mbps "$ga")" "$(mbps "$gb")" "$(ratio "$ga" "$gb")"
rm -f "$W/src.bin"

# Memory: one MEM_GB upload through the S3 backend.
truncate -s "${MEM_GB}G" "$W/sparse.bin"
start_ws
t=$(secs curl -fsS -o /dev/null -T "$W/sparse.bin" "$URL/big.bin")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$WSPID/status")
stop_ws
awk -v g="$MEM_GB" -v t="$t" -v h="$hwm" \
    'BEGIN {printf "  %d GiB PUT through the S3 backend: %.1f s, %.0f MB/s, server peak RSS %.1f MiB\n", g, t, g*1073741824/1e6/t, h/1024}'
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
