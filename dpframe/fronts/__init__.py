"""Fronts: the pandas-shaped faces (``df.dp``, ``ddf.dp``, ``pl_df.dp``, ``dpf.scan``) that build
a :class:`~dpframe.core.query.Query`, hand it to the engine and wrap what comes back. No front
computes a sensitivity or adds noise."""
