"""The pit's reports (design §3.16, docs/reports.md): what the store holds, over a period of the
floor's days or shifts, for the console's report pages and ``/api/reports/{name}`` (JSON and CSV).

Each report is computed in the store, with SQL over the projections, in one snapshot
(:mod:`.sql`); what it is asked for is read and checked by :mod:`.params` over the floor's
calendar (:mod:`.periods`). The shuffler randomness audit's statistics are pure functions
(:mod:`.randomness`, over the laws of :mod:`.shuffle_laws` and the tails of :mod:`.chi_square`).
"""
