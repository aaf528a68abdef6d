# bench/wan-lab.sh — sourced by bench/wan.sh: the emulated WAN link.
# Two network namespaces (ws-wan-a-ID: the server side, ws-wan-b-ID: the client
# side) joined by bench/wan's user-space forwarder between two TUN devices
# (this kernel has no netem): rate, one-way delay, random loss and a
# drop-tail router buffer, the same each way. Both namespaces run CUBIC by
# default, as distributions ship, with TCP buffers large enough for the
# link's bandwidth-delay product.
#
#   wan_up RATE_MBIT RTT_MS LOSS_PERCENT   # e.g. wan_up 200 100 0.1
#   wan_down
#   in_a CMD… / in_b CMD…                   # run in a namespace
# Addresses: A=10.77.0.1, B=10.77.0.2 (only inside these namespaces).
# Names of this run's own (ID: the shell's pid), so two runs at once (two
# worktrees) do not take each other's link down; they still share the CPU.
WAN_ID=${WAN_ID:-$$}
WAN_A=ws-wan-a-$WAN_ID
WAN_B=ws-wan-b-$WAN_ID
WAN_DEV_A=wsa-$WAN_ID
WAN_DEV_B=wsb-$WAN_ID
WAN_IP_A=10.77.0.1
WAN_IP_B=10.77.0.2
WAN_LINK_BIN=${WAN_LINK_BIN:-$REPO/bench/wan/target/release/wan-link}
WAN_LINK_PID=

in_a() { ip netns exec "$WAN_A" "$@"; }
in_b() { ip netns exec "$WAN_B" "$@"; }

wan_build() {
    [[ -x $WAN_LINK_BIN ]] && return 0
    log "building the link forwarder (bench/wan)"
    (cd "$REPO/bench/wan" && cargo build --release --quiet) >&2
}

wan_ns_setup() { # NS DEV MY_IP PEER_IP
    local ns=$1 dev=$2 me=$3 peer=$4
    ip link set "$dev" netns "$ns"
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$me" peer "$peer" dev "$dev"
    ip netns exec "$ns" ip link set "$dev" mtu 1500 txqueuelen 10000 up
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control=cubic
    # 64 MiB: room for a BDP (1 Gbit/s x 20 ms = 2.5 MB; 200 Mbit/s x 100 ms
    # = 2.5 MB) with autotuning's overhead; per namespace.
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="4096 131072 67108864"
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_wmem="4096 16384 67108864"
    # Each row starts from a fresh path: no cached ssthresh/RTT from the last.
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_no_metrics_save=1
}

# A namespace may only default to an algorithm in the (global)
# net.ipv4.tcp_allowed_congestion_control list; CUBIC is added for the run
# and the list put back by wan_down.
WAN_ALLOWED_BEFORE=
wan_allow_cubic() {
    local f=/proc/sys/net/ipv4/tcp_allowed_congestion_control
    grep -qw cubic "$f" && return 0
    WAN_ALLOWED_BEFORE=$(cat "$f")
    echo "$WAN_ALLOWED_BEFORE cubic" >"$f"
}

wan_up() { # RATE_MBIT RTT_MS LOSS_PERCENT [BUFFER_MS]
    local rate=$1 rtt=$2 loss=$3 buf=${4:-$2}
    wan_down
    wan_build
    wan_allow_cubic
    ip netns add "$WAN_A"
    ip netns add "$WAN_B"
    local out="$W/wan-link.out"
    rm -f "$out"
    "$WAN_LINK_BIN" "$WAN_DEV_A" "$WAN_DEV_B" --rate-mbit "$rate" --delay-ms "$(awk -v r="$rtt" 'BEGIN{print r/2}')" \
        --loss "$(awk -v l="$loss" 'BEGIN{print l/100}')" --buffer-ms "$buf" --seed 7 >"$out" 2>"$W/wan-link.err" &
    WAN_LINK_PID=$!
    PIDS+=("$WAN_LINK_PID")
    for _ in $(seq 100); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
    grep -q ready "$out" || { cat "$W/wan-link.err" >&2; return 1; }
    wan_ns_setup "$WAN_A" "$WAN_DEV_A" "$WAN_IP_A" "$WAN_IP_B"
    wan_ns_setup "$WAN_B" "$WAN_DEV_B" "$WAN_IP_B" "$WAN_IP_A"
}

wan_down() {
    if [[ -n $WAN_LINK_PID ]]; then kill "$WAN_LINK_PID" 2>/dev/null || true; wait "$WAN_LINK_PID" 2>/dev/null || true; fi
    WAN_LINK_PID=
    ip netns del "$WAN_A" 2>/dev/null || true
    ip netns del "$WAN_B" 2>/dev/null || true
    if [[ -n $WAN_ALLOWED_BEFORE ]]; then
        echo "$WAN_ALLOWED_BEFORE" >/proc/sys/net/ipv4/tcp_allowed_congestion_control
        WAN_ALLOWED_BEFORE=
    fi
}
