"""The engine: the release order (:mod:`.release`), the session's budget (:mod:`.session`) and the
ledger that records every charge (:mod:`.ledger`). It knows no pandas beyond the ledger's view."""
