#!/bin/bash
cd /work/wt/hpecm
for r in $(seq 1 ${ROUNDS:-8}); do
  for c in 0 1; do
    echo "{\"utc\": \"$(date -u +%T)\", \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\"}"
    /tmp/hpecm/micro2 $c
    DELAYS=0 .venv/bin/python /tmp/hpecm/probe.py all$c 1
  done
done
