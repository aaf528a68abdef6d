#!/usr/bin/env bash
# bench/client.sh — the wirespeed client next to curl, and HTTPS next to
# plain HTTP, end to end on loopback in one run. Not a test: prints a
# markdown table.
#
#   bash bench/client.sh                  # SIZE_MB=1024 ROUNDS=3
#   SIZE_MB=256 ROUNDS=5 KEEP=1 bash bench/client.sh
#
# Rows (the same random file each time; interleaved rounds — round 1 runs
# every row, then round 2, … — so all rows see the same machine state;
# the median over ROUNDS is reported):
#   put  wirespeed put FILE URL                (sha-256 while streaming, checked
#                                               against the server's Repr-Digest)
#   put  wirespeed put --digest-first          (hash first, then sendfile)
#   put  wirespeed put --no-verify             (no client-side hash: sendfile, like curl)
#   put  curl -T FILE URL                      (the baseline: no hashing at all)
#   get  wirespeed get URL -o FILE             (via FILE.part + rename)
#   get  curl -o FILE URL
#   and the same over HTTPS (TLS 1.3, self-signed cert via --cacert), both
#   clients.
#
# The server is `wirespeed serve --no-fsync` (the fsync before the upload's
# rename is the same for every client and would mostly measure the disk);
# HTTPS uses `serve --tls-self-signed` when the binary has it, else the
# crates/tls/examples/serve_tls stand-in (same service, same settings).
# Every stored and downloaded file is checked against the source's sha-256
# in round 1. MB = 10^6 bytes.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SIZE_MB=${SIZE_MB:-1024}
BENCH=client
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

log "building wirespeed and the TLS example (release)"
(cd "$REPO" && cargo build --release -q -p wirespeed && cargo build --release -q -p wirespeed-tls --example serve_tls)
WS="$REPO/target/release/wirespeed"
TLS_EXAMPLE="$REPO/target/release/examples/serve_tls"

now() { date +%s.%N; }

# ---- data and servers ---------------------------------------------------------
SRC=$W/src.bin
mkdir -p "$W/data"
log "generating a ${SIZE_MB} MiB random file"
head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC"
BYTES=$(stat -c %s "$SRC")
WANT=$(sha256sum "$SRC" | cut -d' ' -f1)
cp "$SRC" "$W/data/dl.bin"

wait_line() { for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; echo "server did not start: $(cat "$1")" >&2; exit 1; }

"$WS" serve "$W/data" --listen 127.0.0.1:0 --no-fsync >"$W/plain.out" 2>"$W/plain.log" &
PIDS+=($!)
wait_line "$W/plain.out" listening
PLAIN=$(sed -n 's/^listening on //p' "$W/plain.out" | head -1)

if "$WS" serve --help | grep -q -- --tls-self-signed; then
    "$WS" serve "$W/data" --listen 127.0.0.1:0 --no-fsync --tls-self-signed >"$W/tls.out" 2>"$W/tls.log" &
    TLS_SERVER="wirespeed serve --tls-self-signed"
else
    "$TLS_EXAMPLE" "$W/data" 127.0.0.1:0 >"$W/tls.out" 2>"$W/tls.log" &
    TLS_SERVER="examples/serve_tls (serve has no --tls-self-signed yet)"
fi
PIDS+=($!)
wait_line "$W/tls.out" listening
HTTPS=$(sed -n 's/^listening on //p' "$W/tls.out" | head -1)
# The certificate path: the line naming a .pem file.
CERT=$(grep -o '/[^ ]*\.pem' "$W/tls.out" | head -1)
[[ -f "$CERT" ]] || { echo "no certificate path in: $(cat "$W/tls.out")" >&2; exit 1; }
HTTPS=${HTTPS/127.0.0.1/localhost}
log "plain $PLAIN, https $HTTPS ($TLS_SERVER), cert $CERT"

# ---- rows --------------------------------------------------------------------
ROWS=(ws_put ws_put_df ws_put_nv curl_put ws_get curl_get ws_put_tls curl_put_tls ws_get_tls curl_get_tls)
declare -A DESC=(
    [ws_put]="put | HTTP | wirespeed put"
    [ws_put_df]="put | HTTP | wirespeed put --digest-first"
    [ws_put_nv]="put | HTTP | wirespeed put --no-verify"
    [curl_put]="put | HTTP | curl -T"
    [ws_get]="get | HTTP | wirespeed get"
    [curl_get]="get | HTTP | curl -o"
    [ws_put_tls]="put | HTTPS | wirespeed put"
    [curl_put_tls]="put | HTTPS | curl -T"
    [ws_get_tls]="get | HTTPS | wirespeed get"
    [curl_get_tls]="get | HTTPS | curl -o"
)
CURL=(curl -sS --fail --max-time 600)

run_row() { # row -> runs it; the stored/downloaded file is left for checking
    case "$1" in
        ws_put) "$WS" put -q "$SRC" "$PLAIN/up_ws_put.bin" ;;
        ws_put_df) "$WS" put -q --digest-first "$SRC" "$PLAIN/up_ws_put_df.bin" ;;
        ws_put_nv) "$WS" put -q --no-verify "$SRC" "$PLAIN/up_ws_put_nv.bin" ;;
        curl_put) "${CURL[@]}" -o /dev/null -T "$SRC" "$PLAIN/up_curl_put.bin" ;;
        ws_get) "$WS" get -q "$PLAIN/dl.bin" -o "$W/out_ws_get.bin" ;;
        curl_get) "${CURL[@]}" -o "$W/out_curl_get.bin" "$PLAIN/dl.bin" ;;
        ws_put_tls) "$WS" put -q --cacert "$CERT" "$SRC" "$HTTPS/up_ws_put_tls.bin" ;;
        curl_put_tls) "${CURL[@]}" --cacert "$CERT" -o /dev/null -T "$SRC" "$HTTPS/up_curl_put_tls.bin" ;;
        ws_get_tls) "$WS" get -q --cacert "$CERT" "$HTTPS/dl.bin" -o "$W/out_ws_get_tls.bin" ;;
        curl_get_tls) "${CURL[@]}" --cacert "$CERT" -o "$W/out_curl_get_tls.bin" "$HTTPS/dl.bin" ;;
    esac
}
result_file() {
    case "$1" in
        *put*) echo "$W/data/up_$1.bin" ;;
        *) echo "$W/out_$1.bin" ;;
    esac
}

declare -A T
for round in $(seq "$ROUNDS"); do
    for row in "${ROWS[@]}"; do
        f=$(result_file "$row")
        rm -f "$f"
        sync -f "$W" 2>/dev/null || true
        t0=$(now)
        run_row "$row"
        t1=$(now)
        T[$row]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b-a}') "
        if [[ $round == 1 ]]; then
            got=$(sha256sum "$f" | cut -d' ' -f1)
            [[ "$got" == "$WANT" ]] || { echo "$row: sha-256 mismatch ($got)" >&2; exit 1; }
        fi
        rm -f "$f"
        log "round $round $row $(awk -v a="$t0" -v b="$t1" -v n="$BYTES" 'BEGIN {printf "%.0f MB/s", n/(b-a)/1e6}')"
    done
done

mbps() { local s; s=$(echo ${T[$1]} | tr ' ' '\n' | median); awk -v n="$BYTES" -v s="$s" 'BEGIN {printf "%.0f", n/s/1e6}'; }
secs() { echo ${T[$1]} | tr ' ' '\n' | median; }

declare -A M
for row in "${ROWS[@]}"; do M[$row]=$(mbps "$row"); done

echo
echo "### wirespeed client vs curl, ${SIZE_MB} MiB, loopback, median of $ROUNDS"
echo
echo "$(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); curl $(curl --version | head -1 | cut -d' ' -f2); TLS server: $TLS_SERVER"
echo
echo "| op | scheme | client | seconds | MB/s | vs curl | HTTPS/HTTP |"
echo "|---|---|---|---|---|---|---|"
for row in "${ROWS[@]}"; do
    base=${row%_tls}
    case "$row" in
        ws_put|ws_put_df|ws_put_nv) vs=$(ratio "${M[$row]}" "${M[curl_put]}") ;;
        ws_get) vs=$(ratio "${M[$row]}" "${M[curl_get]}") ;;
        ws_put_tls) vs=$(ratio "${M[$row]}" "${M[curl_put_tls]}") ;;
        ws_get_tls) vs=$(ratio "${M[$row]}" "${M[curl_get_tls]}") ;;
        *) vs="" ;;
    esac
    tls=""
    [[ "$row" == *_tls ]] && tls=$(ratio "${M[$row]}" "${M[$base]}")
    echo "| ${DESC[$row]} | $(secs "$row") | ${M[$row]} | $vs | $tls |"
done
echo
echo "Targets: wirespeed >= curl; HTTPS >= 0.5x HTTP."
