"""disaggsim.analysis: FCT records -> statistics, plots, FCT exports.

- ``stats``: ``summarize`` (slowdown/FCT by protocol, scope, rate, size bucket),
  ``summarize_file`` (the same of a collected ``fct.parquet``, one group at a time),
  ``format_summary``.
- ``fct_file``: ``FctFile``, a collected ``fct.parquet`` read one group of runs at a time
  (bounded memory, whatever the campaign's size).
- ``plots``: ``plot_fct_cdf`` (FCT CDFs and slowdown-by-size bars, PNG + PDF).
- ``export``: ``export_fct``, the ``<bytes> <mean_fct_us>`` table the swap device reads.
- ``report``: summary text + plots of a campaign directory.
- ``latency_budget``: Table 4 of Gao et al. (OSDI'16 §3.3), the round-trip latency budget
  of a 4 KB page by component, and its sweep over link rates against the 3/5 µs targets
  (``plots.plot_latency_sweep`` draws it).
"""
