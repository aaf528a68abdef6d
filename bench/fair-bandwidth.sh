#!/usr/bin/env bash
# bench/fair-bandwidth.sh — the rules file's `[rate]` held over 1, 4 and 16
# connections: one principal downloads (then uploads) RATE x SECS bytes
# split over N parallel curl transfers; the row is the total bytes over the
# wall time from the first start to the last finish, as a share of RATE.
# Two principals: an anonymous address (`"*" = RATE`) and a signed-in user
# (`alice = RATE`, curl -u). Not a test: prints a markdown table, then
# every sample.
#
#   bash bench/fair-bandwidth.sh                 # RATE_MIB=20 SECS=8 ROUNDS=3
#   WS=/path/wirespeed ROUNDS=5 bash bench/fair-bandwidth.sh
#   RATE_MIB=5 SECS=4 ROUNDS=1 bash bench/fair-bandwidth.sh   # smoke test
#
# The server runs --no-fsync on loopback (the disk is not the limit);
# downloads are served from the page cache (each file is read once before
# the first round). Target: every row within 0.95–1.05 of RATE.
set -euo pipefail
BENCH=fair-bandwidth
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
RATE_MIB=${RATE_MIB:-20}
SECS=${SECS:-8}
ROUNDS=${ROUNDS:-3}
RATE=$((RATE_MIB << 20))
TOTAL=$((RATE * SECS))
command -v curl >/dev/null || { log "curl is missing"; exit 1; }
if [[ -z "${WS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    WS="$REPO/target/release/wirespeed"
fi

mkdir -p "$W/data/up"
: >"$W/rules.toml"
echo "alice-pw" | "$WS" passwd alice --file "$W/rules.toml" >/dev/null 2>&1
cat >>"$W/rules.toml" <<EOF
[paths."/"]
"*" = "rw"
alice = "rw"
[rate.user]
alice = "${RATE_MIB}M"
"*" = "${RATE_MIB}M"
EOF
# One file per connection count: N parts of TOTAL/N bytes each.
for n in 1 4 16; do
    head -c $((TOTAL / n)) /dev/urandom >"$W/part.$n"
    for i in $(seq "$n"); do ln "$W/part.$n" "$W/data/d$n.$i" 2>/dev/null || cp "$W/part.$n" "$W/data/d$n.$i"; done
done
cat "$W"/data/d* >/dev/null
"$WS" serve "$W/data" --auth "$W/rules.toml" --no-fsync --listen 127.0.0.1:0 >"$W/addr" 2>"$W/log" &
PIDS+=($!)
URL=$(wait_listening "$W/addr")

# one DIR N WHO: N parallel transfers, prints MB/s of the total.
one() {
    local dir=$1 n=$2 who=$3 t0 t1 auth=() pids=()
    [[ $who == alice ]] && auth=(-u alice:alice-pw)
    # The password check is remembered once made: not part of the timing.
    curl -sS -o /dev/null "${auth[@]}" -I "$URL/d$n.1"
    t0=$(date +%s.%N)
    for i in $(seq "$n"); do
        if [[ $dir == down ]]; then
            curl -sS -f -o /dev/null "${auth[@]}" "$URL/d$n.$i" &
        else
            curl -sS -f -o /dev/null "${auth[@]}" -T "$W/part.$n" "$URL/up/$who.$n.$i" &
        fi
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || log "a transfer failed ($dir $n $who)"; done
    t1=$(date +%s.%N)
    if [[ $dir == up ]]; then
        for i in $(seq "$n"); do
            [[ $(stat -c %s "$W/data/up/$who.$n.$i") == $((TOTAL / n)) ]] || log "up/$who.$n.$i has the wrong size"
        done
        rm -f "$W"/data/up/*
    fi
    awk -v b="$TOTAL" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.3f", b / (t1 - t0) / 1048576}'
}

declare -A S
for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    for who in anon alice; do
        for dir in down up; do
            for n in 1 4 16; do
                S[$who,$dir,$n]+="$(one "$dir" "$n" "$who") "
            done
        done
    done
done

echo "| principal | direction | connections | MiB/s (median of $ROUNDS) | of the $RATE_MIB MiB/s rate | min–max |"
echo "|---|---|---:|---:|---:|---|"
for who in anon alice; do
    for dir in down up; do
        for n in 1 4 16; do
            v=${S[$who,$dir,$n]}
            m=$(printf '%s\n' $v | median)
            lo=$(printf '%s\n' $v | sort -g | head -1)
            hi=$(printf '%s\n' $v | sort -g | tail -1)
            label=$([[ $who == anon ]] && echo 'anonymous ("*")' || echo 'alice (signed in)')
            echo "| $label | $dir | $n | $m | $(ratio "$m" "$RATE_MIB") | $lo–$hi |"
        done
    done
done
echo
echo "samples (MiB/s):"
for k in "${!S[@]}"; do echo "  $k: ${S[$k]}"; done | sort
