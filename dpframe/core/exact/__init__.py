"""The exact wing: what a backend may run.

Requests (:mod:`.compute`), the primitives every backend implements (:mod:`.primitives`), the
exact transforms and contribution bounding (:mod:`.transform`, :mod:`.bounding`), the canonical
value model (:mod:`.values`), hashing, parallel helpers and caches. Nothing here draws noise,
holds a budget or knows a plan: of the core, these modules import only ``core.numbers``
(``pyproject.toml``'s import contracts enforce it), so a backend that imports only this wing
cannot add noise or spend.
"""
