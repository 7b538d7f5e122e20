#!/bin/sh
# Cross-node fan-out latency against the single-node figure, with
# heartwheel-fanout-bench and heartwheel-chat from BUILD/bin (default build):
#   single  one node, in-process Bus, 2 x N subscribers
#   redis1  one node on Redis (--redis), 2 x N subscribers
#   redis2  two nodes on one Redis, N subscribers each, publisher on node A
# Usage: tools/fanout-bench/run.sh [N per node (5000)] [publications (50)] [BUILD] [interval ms (500)]
# Starts redis-server and the nodes on free loopback ports; stops them by PID.
set -eu
N=${1:-5000}
P=${2:-50}
BIN=${3:-build}/bin
I=${4:-500}
TMP=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_chat() {  # name, flags...: prints HOST:PORT
  name=$1; shift
  "$BIN/heartwheel-chat" --listen 127.0.0.1:0 --workers 1 --ping-interval 0 --no-join-leave \
    --history-size 100 "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" &
  PIDS="$PIDS $!"
  for _ in $(seq 100); do
    if grep -q '^listening on' "$TMP/$name.out"; then
      sed -n 's/^listening on //p' "$TMP/$name.out"; return; fi
    sleep 0.1
  done
  echo "heartwheel-chat did not start: $(cat "$TMP/$name.err")" >&2; exit 1
}

stop_all() { for p in $PIDS; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; PIDS=""; }

RPORT=$(free_port)
start_redis() {
  redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
    > "$TMP/redis.log" 2>&1 &
  PIDS="$PIDS $!"
  for _ in $(seq 100); do redis-cli -p "$RPORT" ping 2>/dev/null | grep -q PONG && return; sleep 0.1; done
  echo "redis-server did not start" >&2; exit 1
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
A=$(start_chat single)
printf 'single  '; "$BIN/heartwheel-fanout-bench" --connect "$A" --connect "$A" --subscribers "$N" --publications "$P" --interval-ms "$I"
stop_all

start_redis
A=$(start_chat r1 --redis "127.0.0.1:$RPORT")
printf 'redis1  '; "$BIN/heartwheel-fanout-bench" --connect "$A" --connect "$A" --subscribers "$N" --publications "$P" --interval-ms "$I" --channel one
stop_all

start_redis
A=$(start_chat a --redis "127.0.0.1:$RPORT")
B=$(start_chat b --redis "127.0.0.1:$RPORT")
printf 'redis2  '; "$BIN/heartwheel-fanout-bench" --connect "$A" --connect "$B" --subscribers "$N" --publications "$P" --interval-ms "$I" --channel two
stop_all
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
