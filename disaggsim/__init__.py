"""disaggsim: network requirements of disaggregated datacenters, simulated on ns-3.

Pipeline stages (see README.md): ``disaggsim.traces`` (traces -> per-blade flows),
``disaggsim.sim`` (flows -> ns-3 runs -> FCT records, campaigns), ``disaggsim.analysis``
(FCT statistics, plots, FCT exports for the latency-injection swap device).
"""

__version__ = "0.1.0"
