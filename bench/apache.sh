# bench/apache.sh — sourced by bench scripts (after lib.sh): Apache httpd with
# mod_dav + mod_dav_fs serving a folder, the WebDAV reference (litmus 104/104),
# from a config of its own under $W (nothing in /etc/apache2 is read or
# changed; apt `apache2` provides the binary and modules).
#
#   start_apache DIR [rw] → sets AURL (http://127.0.0.1:PORT) and APID (parent
#                           pid); `rw` lets it write there (litmus)
#   apache_rss         → peak RSS (VmHWM) of the parent and its children, MiB
APACHE_BIN=${APACHE_BIN:-$(command -v apache2 || command -v httpd || echo /usr/sbin/apache2)}
APACHE_MODS=${APACHE_MODS:-/usr/lib/apache2/modules}

have_apache() { [[ -x "$APACHE_BIN" && -f "$APACHE_MODS/mod_dav_fs.so" ]]; }

start_apache() {
    local dir=$1 mode=${2:-ro} port conf="$W/apache"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$conf/lock"
    local user=""
    if [[ $(id -u) == 0 ]]; then
        # httpd will not serve as root: its worker user must reach the folder.
        user=$'User nobody\nGroup nogroup'
        chmod o+rx "$W" "$dir"
        [[ $mode == rw ]] && chown nobody "$dir"
        chown nobody "$conf/lock"
    fi
    # One child process (event MPM, 25 threads): its RSS is the server's.
    cat >"$conf/httpd.conf" <<CONF
ServerRoot "$conf"
PidFile "$conf/httpd.pid"
ErrorLog "$conf/error.log"
LogLevel warn
Listen 127.0.0.1:$port
ServerName 127.0.0.1
$user
LoadModule mpm_event_module $APACHE_MODS/mod_mpm_event.so
LoadModule authz_core_module $APACHE_MODS/mod_authz_core.so
LoadModule mime_module $APACHE_MODS/mod_mime.so
LoadModule dav_module $APACHE_MODS/mod_dav.so
LoadModule dav_fs_module $APACHE_MODS/mod_dav_fs.so
TypesConfig /etc/mime.types
StartServers 1
ServerLimit 1
MinSpareThreads 1
MaxSpareThreads 25
ThreadsPerChild 25
MaxRequestWorkers 25
DAVLockDB "$conf/lock/DAVLock"
DocumentRoot "$dir"
<Directory "$dir">
    Dav On
    Require all granted
</Directory>
CONF
    "$APACHE_BIN" -f "$conf/httpd.conf" -DFOREGROUND >"$conf/stdout.log" 2>&1 &
    APID=$!; PIDS+=($APID)
    AURL=http://127.0.0.1:$port
    local _
    for _ in $(seq 100); do curl -s -o /dev/null "$AURL/" && return 0; sleep 0.1; done
    echo "Apache did not start; its log:" >&2
    cat "$conf/error.log" "$conf/stdout.log" >&2
    return 1
}

apache_rss() {
    local total=0 p
    for p in $APID $(pgrep -P "$APID"); do
        total=$((total + $(awk '/VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    echo $((total / 1024))
}
