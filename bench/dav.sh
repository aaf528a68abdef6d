#!/usr/bin/env bash
# bench/dav.sh — WebDAV, side by side in interleaved rounds, medians:
#  1. PROPFIND Depth 1 of a folder of ENTRIES files (rclone's own property
#     query) on `wirespeed serve` vs Apache httpd's mod_dav (bench/apache.sh:
#     its own config, event MPM, one child; apt `apache2`, skipped with a
#     note when missing) vs `rclone serve webdav` (its default 5-minute
#     directory cache: with --dir-cache-time 0 it rereads the folder per
#     entry, 160 s for 2,000 entries), plus wirespeed's JSON listing of the
#     same folder; time (curl) and each server's peak RSS (VmHWM; Apache's
#     parent and child summed).
#  2. rclone's webdav backend copying SIZE_MB up and down through wirespeed
#     vs the same bytes over plain HTTP on the same server: down, rclone's
#     http backend; up, curl -T (rclone's http backend cannot upload).
#
#   bash bench/dav.sh                      # ENTRIES=100000 SIZE_MB=1024 ROUNDS=5
#   ENTRIES=10000 SIZE_MB=64 ROUNDS=3 bash bench/dav.sh
#   SKIP_COPY=1 ...                        # part 1 only
# litmus against the same Apache (the reference, 104/104): bash bench/litmus-apache.sh
set -euo pipefail
BENCH=dav
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/apache.sh"
ENTRIES=${ENTRIES:-100000}
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-5}
command -v rclone >/dev/null || { echo "rclone is needed (bash .ci/run installs it)" >&2; exit 1; }

if [[ -z "${BIN:-}" ]]; then
    cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
    BIN=$REPO/target/release/wirespeed
fi
mkdir -p "$W/big" "$W/files" "$W/down"
python3 - "$W/big" "$ENTRIES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(root, f"file-{i:06d}.dat"), "wb") as f:
        f.write(b"x" * (i % 100))
PY
[[ "${SKIP_COPY:-0}" == 1 ]] || head -c "$((SIZE_MB << 20))" /dev/urandom >"$W/payload.bin"

"$BIN" serve "$W" --listen 127.0.0.1:0 --no-fsync --access-log off >"$W/serve.out" 2>"$W/serve.log" &
WS=$!; PIDS+=($WS)
WURL=$(wait_listening "$W/serve.out")
RPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rclone serve webdav "$W" --addr "127.0.0.1:$RPORT" --config /dev/null >"$W/rclone.log" 2>&1 &
RS=$!; PIDS+=($RS)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$RPORT/" && break; sleep 0.1; done
RURL=http://127.0.0.1:$RPORT
APACHE=0
if have_apache; then
    start_apache "$W" && APACHE=1
else
    log "Apache httpd with mod_dav not found (apt install apache2): its row is skipped"
fi

BODY='<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:displayname/><d:getlastmodified/><d:getcontentlength/><d:resourcetype/><d:getcontenttype/></d:prop></d:propfind>'
pf() { curl -s -o "$W/pf.out" -X PROPFIND -H 'Depth: 1' -H 'Content-Type: application/xml' --data "$BODY" -w '%{time_total}\n' "$1/big/"; }
log "PROPFIND Depth 1, $ENTRIES entries, $ROUNDS interleaved rounds"
# Apache writes <D:response xmlns:lp1=...>: counted with or without attributes.
responses() { grep -oE '<D:response[ >]' "$W/pf.out" | wc -l; }
: >"$W/ws.t"; : >"$W/rc.t"; : >"$W/ap.t"; : >"$W/json.t"
n_ap=
for _ in $(seq "$ROUNDS"); do
    pf "$WURL" >>"$W/ws.t"; n_ws=$(responses)
    if ((APACHE)); then pf "$AURL" >>"$W/ap.t"; n_ap=$(responses); fi
    pf "$RURL" >>"$W/rc.t"; n_rc=$(responses)
    curl -s -o /dev/null -w '%{time_total}\n' "$WURL/big/?format=json" >>"$W/json.t"
done
rss() { awk '/VmHWM/ {print int($2/1024)}' "/proc/$1/status"; }
ws=$(median <"$W/ws.t"); rc=$(median <"$W/rc.t"); js=$(median <"$W/json.t")
echo "| PROPFIND Depth 1, $ENTRIES entries | median s | responses | server peak RSS MiB |"
echo "|---|---|---|---|"
echo "| wirespeed serve | $ws | $n_ws | $(rss $WS) |"
if ((APACHE)); then
    ap=$(median <"$W/ap.t")
    echo "| Apache httpd $("$APACHE_BIN" -v | sed -n 's|^Server version: Apache/\([^ ]*\).*|\1|p') mod_dav_fs | $ap | $n_ap | $(apache_rss) |"
fi
echo "| rclone serve webdav | $rc | $n_rc | $(rss $RS) |"
echo "| wirespeed JSON listing (GET ?format=json) | $js | | |"
echo "ratio rclone/wirespeed time: $(ratio "$rc" "$ws")x; wirespeed PROPFIND/JSON: $(ratio "$ws" "$js")x"
if ((APACHE)); then echo "ratio Apache/wirespeed time: $(ratio "$ap" "$ws")x"; fi

[[ "${SKIP_COPY:-0}" == 1 ]] && exit 0
log "rclone webdav vs plain HTTP, $SIZE_MB MiB, $ROUNDS interleaved rounds"
RC=(rclone --config /dev/null --low-level-retries 1 --retries 1)
: >"$W/up_dav.t"; : >"$W/up_put.t"; : >"$W/down_dav.t"; : >"$W/down_http.t"
t() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
for _ in $(seq "$ROUNDS"); do
    rm -f "$W/files/payload.bin"
    t "${RC[@]}" copyto "$W/payload.bin" :webdav:files/payload.bin --webdav-url "$WURL" --webdav-vendor other >>"$W/up_dav.t"
    rm -f "$W/files/payload.bin"
    t curl -s -T "$W/payload.bin" "$WURL/files/payload.bin" >>"$W/up_put.t"
    rm -f "$W/down/payload.bin"
    t "${RC[@]}" copyto :webdav:files/payload.bin "$W/down/payload.bin" --webdav-url "$WURL" --webdav-vendor other >>"$W/down_dav.t"
    cmp -s "$W/payload.bin" "$W/down/payload.bin" || { echo "webdav download differs" >&2; exit 1; }
    rm -f "$W/down/payload.bin"
    t "${RC[@]}" copyto :http:payload.bin "$W/down/payload.bin" --http-url "$WURL/files/" >>"$W/down_http.t"
    cmp -s "$W/payload.bin" "$W/down/payload.bin" || { echo "http download differs" >&2; exit 1; }
done
ud=$(median <"$W/up_dav.t"); up=$(median <"$W/up_put.t"); dd_=$(median <"$W/down_dav.t"); dh=$(median <"$W/down_http.t")
echo "| $SIZE_MB MiB | WebDAV (rclone webdav) s | plain HTTP s | WebDAV speed / plain |"
echo "|---|---|---|---|"
echo "| up (plain: curl -T) | $ud | $up | $(ratio "$up" "$ud")x |"
echo "| down (plain: rclone http) | $dd_ | $dh | $(ratio "$dh" "$dd_")x |"
