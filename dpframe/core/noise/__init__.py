"""The noise wing: randomness, exact samplers and mechanisms.

The random source (:mod:`.rng`), exact samplers with their proofs (:mod:`.samplers`,
:mod:`.discrete_gaussian`, :mod:`.permute_flip`), the Gaussian calibration (:mod:`.gaussian`)
and the mechanism specs (:mod:`.mechanisms`). Only the planning core, the engine's session,
the local model and ``dpframe.testing`` may import it (a ``protected`` import contract in
``pyproject.toml``); no backend ever does.
"""
