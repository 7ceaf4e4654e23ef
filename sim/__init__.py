"""disaggsim.sim: flows -> ns-3 runs -> FCT records, and campaigns of runs.

- ``config``: campaign config (TOML/YAML), validated; keys in ``configs/README.md``.
- ``workloads``: workload -> cached flow table (trace samples, flow tables, YAPS, synthetic).
- ``runner``: one ns-3 run (``run_one``).
- ``campaign``: grid expansion, run keys, resumable parallel execution (``run_campaign``).
- ``hashing``: content hashes behind run keys and caches.
"""
