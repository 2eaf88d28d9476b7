"""Vivy's development tools, installed beside the product in a development checkout only.

Benchmarks (:mod:`vivy_lab.bench`), the offline retrieval evals and their data
(:mod:`vivy_lab.eval`, ``data/``), synthetic loads (:mod:`vivy_lab.synthetic`), the raw
baselines the ingest benchmark measures against (:mod:`vivy_lab.baseline`), throwaway
PostgreSQL databases (:mod:`vivy_lab.scratch`) and loopback fakes of the LLM providers
(:mod:`vivy_lab.fakes`). ``vivy bench`` and ``vivy eval`` come from here: this package
registers them in the ``vivy.commands`` entry-point group the product's command line reads.
Vivy itself imports nothing from this package.
"""

from __future__ import annotations

__all__: list[str] = []
