#!/usr/bin/env bash
# bench/encoded.sh — encoded uploads next to a raw PUT, end to end
# on loopback, in one run: interleaved rounds (round 1: every row, round 2:
# every row, …) so all rows see the same machine state; medians over ROUNDS.
# Not a test: prints a markdown table.
#
#   bash bench/encoded.sh                 # SIZE_MB=256 ROUNDS=3; a few minutes
#   SIZE_MB=64 ROUNDS=5 FSYNC=1 KEEP=1 bash bench/encoded.sh
#
# Rows (the same random file each time):
#   PUT raw          curl -T file                                (the baseline)
#   multipart POST   curl -F file=@file                          (POST /dir/)
#   SOAP b64 CRLF/76 curl --data-binary @envelope, text/xml      (?element=data)
#   SOAP b64 no LF   same, base64 on one line
#   JSON b64         curl --data-binary @doc, application/json   (?field=data)
# MB/s is of the *decoded payload* (the file's size / curl's time_total), so
# the base64 rows move ~4/3 as many bytes over the wire. MB = 10^6 bytes.
#
# The server runs with --no-fsync unless FSYNC=1: the fsync before the
# rename is the same for every row and would otherwise mostly measure the
# disk. Every stored file is checked against the source's sha-256.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SIZE_MB=${SIZE_MB:-256}
BENCH=encoded
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

log "building wirespeed (release)"
(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"


# ---- data ------------------------------------------------------------------
SRC=$W/src.bin
mkdir -p "$W/data"
log "generating a ${SIZE_MB} MiB random file and the envelopes"
head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC"
python3 - "$SRC" "$W" <<'EOF'
import base64, sys
src, w = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
b = base64.b64encode(data)
del data
head = (b'<?xml version="1.0" encoding="utf-8"?>\n'
        b'<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns="urn:wirespeed:bench">'
        b'<soap:Body><ns:Upload><ns:name>src.bin</ns:name><ns:data>')
tail = b'</ns:data></ns:Upload></soap:Body></soap:Envelope>\n'
with open(w + "/soap-nolf.xml", "wb") as f:
    f.write(head); f.write(b); f.write(tail)
with open(w + "/soap-crlf.xml", "wb") as f:
    f.write(head)
    for i in range(0, len(b), 76 * 4096):
        block = b[i:i + 76 * 4096]
        f.write(b"\r\n".join(block[j:j + 76] for j in range(0, len(block), 76)))
        if i + 76 * 4096 < len(b):
            f.write(b"\r\n")
    f.write(tail)
with open(w + "/doc.json", "wb") as f:
    f.write(b'{"name": "src.bin", "data": "'); f.write(b); f.write(b'"}\n')
EOF
WANT=$(sha256sum "$SRC" | cut -d' ' -f1)
ls -l "$W"/*.xml "$W"/*.json >&2

# ---- server ------------------------------------------------------------------
EXTRA=(--no-fsync)
[[ "${FSYNC:-0}" == 1 ]] && EXTRA=()
"$WS" serve "$W/data" --listen 127.0.0.1:0 "${EXTRA[@]}" >"$W/ws.addr" 2>"$W/ws.log" &
PIDS+=($!)
WS_PID=$!
for _ in $(seq 100); do grep -q listening "$W/ws.addr" 2>/dev/null && break; sleep 0.05; done
URL=$(sed 's/^listening on //' "$W/ws.addr")
log "server at $URL"

ROWS=(put form soap_crlf soap_nolf json)
declare -A LABEL=(
    [put]="PUT raw (curl -T)"
    [form]="multipart POST (curl -F)"
    [soap_crlf]="SOAP base64, CRLF every 76"
    [soap_nolf]="SOAP base64, no line breaks"
    [json]="JSON base64"
)
declare -A STORED=(
    [put]=put.bin [form]=form/src.bin [soap_crlf]=soap-crlf.bin [soap_nolf]=soap-nolf.bin [json]=json.bin
)

# CPU seconds (user+sys) the server has used so far: per row, a measure of
# the server's own cost that other load on a shared machine disturbs less
# than wall time does.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14+$15)/hz}' "/proc/$WS_PID/stat"; }

# Runs one upload; prints curl's total time in seconds. Fails on a non-2xx.
run() {
    local out code t
    case $1 in
    put) out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' -T "$SRC" "$URL/put.bin") ;;
    form) out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' -F "file=@$SRC" "$URL/form/") ;;
    soap_crlf) out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' --data-binary @"$W/soap-crlf.xml" \
        -H 'Content-Type: text/xml' "$URL/soap-crlf.bin?element=data") ;;
    soap_nolf) out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' --data-binary @"$W/soap-nolf.xml" \
        -H 'Content-Type: text/xml' "$URL/soap-nolf.bin?element=data") ;;
    json) out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' --data-binary @"$W/doc.json" \
        -H 'Content-Type: application/json' "$URL/json.bin?field=data") ;;
    esac
    code=${out%% *}
    t=${out##* }
    if [[ $code != 2* ]]; then
        log "$1 answered $code"
        exit 1
    fi
    echo "$t"
}

# Warm-up (page cache for the sources, first-touch allocations).
for r in "${ROWS[@]}"; do run "$r" >/dev/null; done
declare -A TIMES CPUS
for round in $(seq "$ROUNDS"); do
    for r in "${ROWS[@]}"; do
        c0=$(cpu)
        t=$(run "$r")
        c=$(awk -v a="$c0" -v b="$(cpu)" 'BEGIN {printf "%.2f", b-a}')
        TIMES[$r]="${TIMES[$r]:-} $t"
        CPUS[$r]="${CPUS[$r]:-} $c"
        log "round $round $r ${t}s (server CPU ${c}s)"
    done
done
for r in "${ROWS[@]}"; do
    got=$(sha256sum "$W/data/${STORED[$r]}" | cut -d' ' -f1)
    [[ $got == "$WANT" ]] || { log "$r stored wrong bytes"; exit 1; }
done

BYTES=$((SIZE_MB << 20))
declare -A MBS
for r in "${ROWS[@]}"; do
    med=$(printf '%s\n' ${TIMES[$r]} | median)
    MBS[$r]=$(awk -v b="$BYTES" -v t="$med" 'BEGIN {printf "%.0f", b/1e6/t}')
done

echo
echo "Encoded uploads, ${SIZE_MB} MiB random payload, loopback, median of $ROUNDS interleaved rounds" \
    "($([[ ${#EXTRA[@]} -eq 0 ]] && echo fsync || echo no-fsync); $(nproc) CPUs)"
echo
echo "| upload | MB/s (decoded payload) | vs raw PUT | server CPU s (median) | times (s) |"
echo "|---|---:|---:|---:|---|"
for r in "${ROWS[@]}"; do
    echo "| ${LABEL[$r]} | ${MBS[$r]} | $(ratio "${MBS[$r]}" "${MBS[put]}") | $(printf '%s\n' ${CPUS[$r]} | median) |${TIMES[$r]} |"
done
echo
echo "SOAP CRLF/76 vs no line breaks: $(ratio "${MBS[soap_crlf]}" "${MBS[soap_nolf]}") (time ratio $(ratio "${MBS[soap_nolf]}" "${MBS[soap_crlf]}"))"
echo "targets: multipart >= 0.9x PUT; SOAP CRLF within 1.1x of no-LF (time); SOAP >= 0.6x PUT"
