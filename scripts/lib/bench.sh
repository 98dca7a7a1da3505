# APNs Sandbox — what the bash benchmarks share (scripts/bench-h2, bench-store, bench-extensions): sourced, not run.
#
# The script sets BENCH_NAME (its name, for messages) and SANDBOX_BIN before sourcing, and `work` (its
# temporary directory) before calling bench_config or start_sandbox. start_sandbox sets sbpid, sbport, sbtls and
# base; the script's cleanup kills "$sbpid" when it is set.

bench_log() { echo "$BENCH_NAME: $*" >&2; }

# free_port → a TCP port free on 127.0.0.1 now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# mib KB → the size in MiB with one decimal.
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# status_field KEY [PID] → a field of /proc/PID/status (default: the sandbox), e.g. VmRSS (kB) or Threads.
status_field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/${2:-$sbpid}/status"; }

# bench_require TOOL… : exits with a hint when one is missing.
bench_require() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || { bench_log "'$tool' not found: run scripts/setup --test"; exit 1; }
    done
}

# bench_build: the release build, first, so that compiling never overlaps a measurement (SKIP_BUILD=1: as built).
bench_build() {
    if [[ ${SKIP_BUILD:-} != 1 ]]; then
        bench_log "swift build -c release --product apns-sandbox"
        swift build -c release --product apns-sandbox >&2
    fi
    [[ -x $SANDBOX_BIN ]] || { bench_log "no executable at $SANDBOX_BIN"; exit 1; }
}

# bench_config FILE [SECTIONS]: the configuration every benchmark runs: the demo team and key of config/keys, and
# "one stream until a valid provider token" switched off (h2load opens all its streams before it reads SETTINGS).
# SECTIONS: more top-level members, as JSON text ending in a comma (e.g. '"storage": {…},').
bench_config() {
    cat >"$1" <<JSON
{
  "eventLoops": ${EVENT_LOOPS:-0},
  "apns": { "streamsBeforeAuthentication": 0 },
  ${2:-}
  "teams": [ { "teamID": "DEMOTEAM01", "apps": ["$TOPIC"],
               "keys": [ { "keyID": "DEMOKEY123", "privateKeyFile": "$PWD/config/keys/AuthKey_DEMOKEY123.p8" } ] } ]
}
JSON
}

# wait_for URL PID NAME LOG [SECONDS]: polls URL (HTTP/2 with prior knowledge, which the sandbox and nghttpd both
# speak in cleartext) until it answers; exits with the log's tail when PID ends first or after SECONDS (60).
wait_for() {
    local url=$1 pid=$2 name=$3 log=$4 seconds=${5:-60} i
    for ((i = 0; i < seconds * 20; i++)); do
        if curl -s -o /dev/null --http2-prior-knowledge --max-time 1 "$url"; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            bench_log "$name exited before it answered $url; its log:"
            tail -n 40 "$log" >&2 || true
            exit 1
        fi
        sleep 0.05
    done
    bench_log "$name did not answer $url within $seconds s; its log:"
    tail -n 40 "$log" >&2 || true
    exit 1
}

# start_sandbox CONFIG: the release server on free loopback ports (the same ones again on a restart) with its data
# in $work/data, its log appended to $work/sandbox.log; returns once /healthz answers (up to 300 s: a restart on a
# big store recovers first). More environment for the server: SANDBOX_ENV=(NAME=value …).
start_sandbox() {
    [[ -n ${sbport:-} ]] || sbport=$(free_port)
    [[ -n ${sbtls:-} ]] || sbtls=$(free_port)
    base="http://127.0.0.1:$sbport"
    mkdir -p "$work/data"
    env "${SANDBOX_ENV[@]}" "$SANDBOX_BIN" serve --config "$1" --host 127.0.0.1 --http-port "$sbport" \
        --tls-port "$sbtls" --data-dir "$work/data" >>"$work/sandbox.log" 2>&1 &
    sbpid=$!
    wait_for "$base/healthz" "$sbpid" apns-sandbox "$work/sandbox.log" 300
}

# stop_sandbox: SIGTERM, and waits for the graceful stop.
stop_sandbox() {
    kill -TERM "$sbpid" 2>/dev/null || true
    wait "$sbpid" 2>/dev/null || true
    sbpid=
}

SANDBOX_ENV=()
