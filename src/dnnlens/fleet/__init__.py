"""Fleets of runs: many runs analysed on a distributed engine into one dataset to query.

``dnnlens fleet build`` analyses each run (a log file, or the files of one run's ranks)
exactly as ``dnnlens analyze`` does, one task per run (and per byte range of a large file)
on Dask, and writes five Parquet tables under the dataset directory
(:mod:`dnnlens.fleet.schema`); ``fleet query`` runs DuckDB over them with a few views
(:mod:`dnnlens.fleet.views`); ``fleet diff`` finds the runs and primitives that got slower
than a baseline run (:mod:`dnnlens.fleet.diff`).

A run's rows are copied from the JSON report of that run's
:class:`~dnnlens.analysis.analysis.Analysis` (:mod:`dnnlens.fleet.rows`), so the dataset
and ``analyze --format json`` never disagree. Dask and DuckDB are optional
(``pip install 'dnnlens[fleet]'``) and imported only by the modules that use them.
"""
