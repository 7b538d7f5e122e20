#!/bin/bash
# usage: ab.sh BIN ROUNDS  -> alternates plain / uring
BIN=$1; R=${2:-3}
for r in $(seq 1 $R); do
 for mode in plain uring; do
  if [ $mode = uring ]; then export HW_URING_HTTP=1; else unset HW_URING_HTTP; fi
  $BIN --listen 127.0.0.1:18081 > /dev/null 2>&1 &
  PID=$!; sleep 0.3
  t0=$(awk '{print $14+$15}' /proc/$PID/stat)
  out=$(wrk -t1 -c50 -d8s --latency http://127.0.0.1:18081/)
  t1=$(awk '{print $14+$15}' /proc/$PID/stat)
  kill $PID; wait $PID 2>/dev/null
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  req=$(echo "$out" | awk '/requests in/{print $1}')
  echo "$mode rps=$rps p99=$p99 cpu_us_per_req=$(echo "($t1-$t0)*10000/$req" | bc -l | cut -c1-6)"
 done
done
