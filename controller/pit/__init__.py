"""The pit service (design §3.11, docs/pit.md): every table's events, stored exactly once.

``tablectl pit run --config FILE`` runs one pit process: the ingest of the tables' event streams
from the broker (:mod:`controller.pit.ingest`), the store (:mod:`controller.pit.store`), the gap
repair that asks a table to replay what never arrived (:mod:`controller.pit.repair`), the web
app, its API and console (:mod:`controller.pit.web`), and the Prometheus metrics
(:mod:`controller.pit.metrics`).
"""
