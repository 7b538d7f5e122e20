#!/bin/sh
# Cross-node fan-out latency against the single-node figure, with
# heartwheel-fanout-bench and heartwheel-chat from BUILD/bin (default build):
#   single  one node, in-process Bus, 2 x N subscribers
#   single2 the same with two workers (both cores, as two nodes get)
#   redis1  one node on Redis (--redis), 2 x N subscribers
#   redis2  two nodes on one Redis, N subscribers each, publisher on node A
# Usage: tools/fanout-bench/run.sh [N per node (5000)] [publications (50)] [BUILD] [interval ms (500)]
# Starts redis-server and the nodes on free loopback ports; stops them by PID.
# Exits 1 if any subscriber missed a publication (the smoke test relies on it).
set -eu
N=${1:-5000}
P=${2:-50}
BIN=${3:-build}/bin
I=${4:-500}
CHAT=${HEARTWHEEL_CHAT:-$BIN/heartwheel-chat}              # (Meson builds put them elsewhere)
BENCH=${HEARTWHEEL_FANOUT_BENCH:-$BIN/heartwheel-fanout-bench}
TMP=$(mktemp -d)
# Every process started, one PID a line (start_chat runs in a command
# substitution, a subshell: a variable would not reach this shell).
PIDFILE="$TMP/pids"
: > "$PIDFILE"
stop_all() {
  for p in $(cat "$PIDFILE"); do kill "$p" 2>/dev/null || true; done
  for p in $(cat "$PIDFILE"); do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
  : > "$PIDFILE"
}
cleanup() { stop_all; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_chat() {  # name, workers, flags...: prints HOST:PORT
  name=$1; workers=$2; shift 2
  "$CHAT" --listen 127.0.0.1:0 --workers "$workers" --ping-interval 0 --no-join-leave \
    --history-size 100 "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" &
  echo $! >> "$PIDFILE"
  for _ in $(seq 100); do
    if grep -q '^listening on' "$TMP/$name.out"; then
      sed -n 's/^listening on //p' "$TMP/$name.out"; return; fi
    sleep 0.1
  done
  echo "heartwheel-chat did not start: $(cat "$TMP/$name.err")" >&2; exit 1
}

# One driver run: prints "LABEL JSON"; exits 1 if a delivery is missing.
measure() {
  label=$1; shift
  line=$("$BENCH" --subscribers "$N" --publications "$P" --interval-ms "$I" "$@")
  printf '%-7s %s\n' "$label" "$line"
  case $line in *'"missing":0,'*) ;; *) echo "fanout bench: deliveries missing in $label" >&2; exit 1 ;; esac
}


# A port found free just before each start: picked once at the top, as it
# was, it stayed free through the runs without Redis (seconds) and between
# the two Redis runs, and a parallel test's listener could take it.
start_redis() {
  RPORT=$(free_port)
  redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
    > "$TMP/redis.log" 2>&1 &
  echo $! >> "$PIDFILE"
  for _ in $(seq 100); do redis-cli -p "$RPORT" ping 2>/dev/null | grep -q PONG && return; sleep 0.1; done
  echo "redis-server did not start on $RPORT: $(tail -5 "$TMP/redis.log")" >&2; exit 1
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
A=$(start_chat single 1)
measure single --connect "$A" --connect "$A"
stop_all

A=$(start_chat single2 2)
measure single2 --connect "$A" --connect "$A"
stop_all

start_redis
A=$(start_chat r1 1 --redis "127.0.0.1:$RPORT")
measure redis1 --connect "$A" --connect "$A" --channel one
stop_all

start_redis
A=$(start_chat a 1 --redis "127.0.0.1:$RPORT")
B=$(start_chat b 1 --redis "127.0.0.1:$RPORT")
measure redis2 --connect "$A" --connect "$B" --channel two
stop_all
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
