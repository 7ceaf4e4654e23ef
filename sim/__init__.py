"""disaggsim.sim: flows -> ns-3 runs -> FCT records, and campaigns of runs.

- ``config``: campaign config (TOML/YAML), validated; keys in ``configs/README.md``.
- ``workloads``: workload -> cached flow table (trace samples, flow tables, YAPS, synthetic).
- ``placement``: blades -> simulated hosts (rack- or datacenter-scale) -> ``SIM_FLOWS``
- ``replication``: copies of the traced cluster that load the fabric (replay, pair-cdf)
- ``runner``: one ns-3 run (``run_one``).
- ``rundir``: a campaign run's key, directory, atomic execution and ``runs.csv`` row.
- ``slurm``: the Slurm executor (one job array).
- ``campaign``: grid expansion, run keys, resumable parallel execution (``run_campaign``).
- ``hashing``: content hashes behind run keys and caches.
"""
