"""disaggsim.analysis: FCT records -> statistics, plots, FCT exports.

- ``stats``: ``summarize`` (slowdown/FCT by protocol, scope, rate, size bucket),
  ``format_summary``.
- ``plots``: ``plot_fct_cdf`` (FCT CDFs and slowdown-by-size bars, PNG + PDF).
- ``export``: ``export_fct``, the ``<bytes> <mean_fct_us>`` table the swap device reads.
- ``report``: summary text + plots of a campaign directory.
"""
