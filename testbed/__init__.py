"""The testbed: an emulated server cluster on one machine, and the trace collector.

Root-level code that changes machine state (network namespaces, memory cgroups, swap
areas, loop devices, tracefs) and runs the applications on it. Used by the collector
(``disaggsim collect``) and by the latency-injection experiments
(``disaggsim.swapdev.emulate``); the trace formats it writes are read by the pure
converters in ``disaggsim.traces``, whose cached conversions do not depend on this code.

- ``collect``: ``disaggsim collect``, a sample directory of real traces
- ``collect_apps``: the cluster and the applications it runs (``apps/``)
- ``collect_blk``, ``collect_paging``: blktrace and paging recorders
- ``collect_env``: namespaces, cgroups, swap and loop devices, each undone on exit
- ``collect_tracefs``: tracefs state saved and restored
- ``memcg_oom``: memory cgroups v1 at their limit without OOM killer (collect and emulate)
"""
