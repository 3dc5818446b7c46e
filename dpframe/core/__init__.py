"""The privacy core: randomness, exact samplers, mechanisms, sensitivities, accounting.

Nothing in this package knows pandas.
"""
