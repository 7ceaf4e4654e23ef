#!/bin/bash
# scratch monitor: every 40 s, under the machine lock, microbench + one default-placement pagefault pair
cd /work/wt/hpecm
end=$(date -d 10:44 +%s)
while [ $(date +%s) -lt $end ]; do
  flock /tmp/disaggsim-machine.lock bash -c '
    echo "{\"utc\": \"$(date -u +%T)\", \"loadavg\": \"$(cut -d" " -f1-3 /proc/loadavg)\", \"stat\": \"$(grep "^cpu " /proc/stat)\"}"
    /tmp/hpecm/micro
    .venv/bin/python /tmp/hpecm/probe.py default,all0 1
    /tmp/hpecm/micro
    echo "{\"stat_end\": \"$(grep "^cpu " /proc/stat)\"}"
  ' >> /tmp/hpecm/mon.jsonl 2>&1
  sleep 40
done
