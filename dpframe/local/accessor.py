"""``df.dp.local``: the local randomizers and estimators on a DataFrame's columns."""

from __future__ import annotations

from collections.abc import Hashable

import pandas as pd

from ..core.noise.rng import RandomSource
from ..errors import ValidationError
from ._encoding import CategoriesArg
from .estimators import Method, estimate_frequencies
from .randomizers import Invalid, randomized_response, rappor


class LocalAccessor:
    """Local-model randomizers on a DataFrame's columns: ``df.dp.local``.

    Nothing is charged to a session: each respondent's report is eps-LDP on its own.
    """

    def __init__(self, df: pd.DataFrame) -> None:
        if not isinstance(df, pd.DataFrame):
            raise ValidationError("LocalAccessor needs a pandas DataFrame")
        self._df = df

    def _column(self, column: Hashable) -> pd.Series:
        if column not in self._df.columns:
            raise ValidationError(f"unknown column {column!r}")
        col = self._df[column]
        if isinstance(col, pd.DataFrame):
            raise ValidationError(f"column {column!r} is not unique")
        return col

    def randomized_response(self, column: Hashable, epsilon: float | None = None,
                            categories: CategoriesArg | None = None, *,
                            preset: str | None = None, seed: int | None = None,
                            rng: RandomSource | None = None,
                            invalid: Invalid = "uniform") -> pd.Series:
        """The column randomized by RR / k-RR (see :func:`randomized_response`)."""
        return randomized_response(self._column(column), epsilon, categories, preset=preset,
                                   seed=seed, rng=rng, invalid=invalid,
                                   name=f"column {column!r}")

    def rappor(self, column: Hashable, epsilon: float, categories: CategoriesArg, *,
               seed: int | None = None, rng: RandomSource | None = None,
               invalid: Invalid = "uniform") -> pd.DataFrame:
        """RAPPOR bit vectors of the column, one bool column per category (see :func:`rappor`)."""
        return rappor(self._column(column), epsilon, categories, seed=seed, rng=rng,
                      invalid=invalid, name=f"column {column!r}")

    def estimate_frequencies(self, column: Hashable, epsilon: float | None = None,
                             categories: CategoriesArg | None = None, *,
                             method: Method = "auto", ci: float = 0.95, project: bool = False,
                             preset: str | None = None) -> pd.DataFrame:
        """Frequencies from a column of RR / k-RR reports (see :func:`estimate_frequencies`)."""
        return estimate_frequencies(self._column(column), epsilon, categories, method=method,
                                    ci=ci, project=project, preset=preset,
                                    name=f"column {column!r}")
