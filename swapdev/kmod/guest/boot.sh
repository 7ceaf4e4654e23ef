#!/bin/sh
# Boot check (run-tests.sh with RMEM_GUEST_SCRIPT=boot, bench/kmod_guest_boots.py): the
# guest reached /init, loaded its modules and mounted the share. Writes /host/results.txt:
# kernel, done 1.
R=/host/results.txt
echo "kernel $(uname -r)" > $R
echo "done 1" >> $R
