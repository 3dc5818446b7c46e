"""Frequency estimators from local reports (post-processing: nothing is charged).

Unbiased category frequencies from randomized-response or RAPPOR reports, with standard errors
and normal intervals, and the projection of estimates onto the probability simplex.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..errors import ValidationError
from ._design import design_for, rappor_design
from ._encoding import (
    CATEGORIES,
    CategoriesArg,
    check_categories,
    codes_of,
    invalid_error,
    missing_error,
    read_values,
    resolve_categories,
)

Method = Literal["auto", "rr", "krr", "rappor"]


def project_simplex(v: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Euclidean projection onto the probability simplex {p >= 0, sum p = 1}.

    Post-processing of already private estimates: it costs no privacy, but it trades the
    estimator's unbiasedness for a valid distribution. Sort descending, find the largest ``r``
    with ``u_r > (sum_{i<=r} u_i - 1) / r``, shift by that threshold and clip at zero.
    """
    x = np.asarray(v, dtype=np.float64).reshape(-1)
    if x.size == 0 or not bool(np.isfinite(x).all()):
        raise ValidationError("project_simplex needs a non-empty finite vector")
    u = np.sort(x)[::-1]
    css = np.cumsum(u) - 1.0
    r = np.arange(1, x.size + 1)
    rho = int(np.flatnonzero(u - css / r > 0)[-1]) + 1
    theta = css[rho - 1] / rho
    return np.maximum(x - theta, 0.0)


def _ci_z(ci: object) -> float:
    if isinstance(ci, bool) or not isinstance(ci, numbers.Real):
        raise ValidationError("ci must be a number in (0, 1)")
    c = float(ci)
    if not 0 < c < 1:
        raise ValidationError("ci must be a number in (0, 1)")
    return NormalDist().inv_cdf((1 + c) / 2)


@dataclass(frozen=True)
class _Tally:
    """Counts of reports per category and the two report probabilities of the mechanism:
    ``p_hi`` for the true category, ``p_lo`` for any other one."""

    counts: npt.NDArray[np.int64]
    n: int
    cats: list[Any]
    p_hi: float
    p_lo: float
    epsilon: float
    mechanism: dict[str, Any]


# --------------------------------------------------------------------------------------------
# RAPPOR reports
# --------------------------------------------------------------------------------------------


def _frame_bits(reports: pd.DataFrame, cats: list[Any] | None,
                name: str) -> tuple[npt.NDArray[Any], list[Any]]:
    """The report columns in category order (the columns are the categories when none are
    declared)."""
    cols = list(reports.columns)
    if cats is None:
        cats = check_categories(cols, "the report columns")
    if any(c not in cols for c in cats) or len(cols) != len(cats):
        raise ValidationError(f"{name} must have exactly one column per category")
    if bool(reports.isna().any().any()):
        raise missing_error(name)
    if not len(reports):
        return np.zeros((0, len(cats))), cats
    return np.column_stack([reports[c].to_numpy() for c in cats]), cats


def _only_bits(mat: npt.NDArray[Any]) -> bool:
    try:
        return bool(np.isin(mat, [0, 1]).all())
    except TypeError:
        return False


def _bit_sums(mat: npt.NDArray[Any], name: str) -> npt.NDArray[np.int64]:
    if mat.dtype.kind == "b":
        return mat.sum(axis=0, dtype=np.int64)
    if mat.dtype.kind not in "iufO" or not _only_bits(mat):
        raise ValidationError(f"{name} must contain only bits (bool or 0/1)")
    return mat.astype(np.int64).sum(axis=0)


def _read_bits(reports: Any, cats: list[Any] | None,
               name: str) -> tuple[npt.NDArray[np.int64], int, list[Any]]:
    """Column sums of RAPPOR reports (2-D bool/0-1), in category order."""
    if isinstance(reports, pd.DataFrame):
        mat, cats = _frame_bits(reports, cats, name)
    else:
        mat = np.asarray(reports)
        if cats is None:
            raise ValidationError("categories is required for RAPPOR reports given as an array")
    if mat.ndim != 2 or mat.shape[1] != len(cats):
        raise ValidationError(f"{name} must be 2-D with one column per category")
    return _bit_sums(mat, name), int(mat.shape[0]), cats


def _rappor_tally(reports: Any, epsilon: float | None, cats: list[Any] | None,
                  preset: str | None, name: str) -> _Tally:
    if preset is not None:
        raise ValidationError("preset applies to randomized response, not RAPPOR")
    design, eps = rappor_design(epsilon)
    counts, n, cats = _read_bits(reports, cats, name)
    p1, q1 = design.probabilities()
    return _Tally(counts, n, cats, p1, q1, eps, {"mechanism": "rappor", "f": 2 * q1})


# --------------------------------------------------------------------------------------------
# Randomized-response reports
# --------------------------------------------------------------------------------------------


def _rr_tally(reports: Any, epsilon: float | None, categories: object,
              preset: str | None, method: str, name: str) -> _Tally:
    """RR / k-RR reports tallied over the declared categories (or the opt-in's, or the bool /
    numeric dtype's): ``k``, and so ``method="auto"``'s choice, never comes from the reports."""
    inp = read_values(reports, name)
    cats = resolve_categories(inp, categories, name)
    k = len(cats)
    if method == "auto":
        method = "rr" if k == 2 else "krr"
    if method == "rr" and k != 2:
        raise ValidationError("method 'rr' needs exactly 2 categories; use 'krr'")
    design, eps = design_for(epsilon, k, preset)
    enc = codes_of(inp, cats)
    if enc.invalid is not None:  # reports are the randomizers' output: always declared
        raise invalid_error(name)
    codes = enc.codes
    counts = np.bincount(codes.astype(np.int64, copy=False), minlength=k)
    p_hi, p_lo = design.probabilities()
    mech = {"mechanism": "randomized_response" if k == 2 else "k_rr",
            "p_keep": p_hi, "p_other": p_lo}
    if preset is not None:
        mech["preset"] = preset
    return _Tally(counts, int(codes.size), cats, p_hi, p_lo, eps, mech)


def _tally(reports: Any, epsilon: float | None, categories: object, method: str,
           preset: str | None, name: str) -> _Tally:
    """The reports tallied by ``method``; ``"auto"``: RAPPOR for 2-D reports, else RR for 2
    categories and k-RR otherwise (the declared categories' count)."""
    two_d = isinstance(reports, pd.DataFrame) or (
        isinstance(reports, np.ndarray) and reports.ndim == 2)
    if method == "auto" and two_d:
        method = "rappor"
    if method == "rappor":
        if isinstance(categories, str) and categories == CATEGORIES:
            raise ValidationError("categories='categories' reads a Categorical Series of RR "
                                  "reports; RAPPOR reports declare categories=[...] (or "
                                  "their columns are the categories)")
        cats = None if categories is None else check_categories(categories)
        return _rappor_tally(reports, epsilon, cats, preset, name)
    if two_d:
        raise ValidationError(f"{name} must be one-dimensional for method '{method}'")
    return _rr_tally(reports, epsilon, categories, preset, method, name)


# --------------------------------------------------------------------------------------------
# Estimates
# --------------------------------------------------------------------------------------------


def _frequency_table(t: _Tally, z: float, ci: float, project: bool) -> pd.DataFrame:
    """Unbiased shares, their standard errors and normal intervals (the formulas are in
    :func:`estimate_frequencies`)."""
    gap = t.p_hi - t.p_lo
    share = t.counts.astype(np.float64) / t.n
    est = (share - t.p_lo) / gap
    fc = np.clip(est, 0.0, 1.0)
    var = (fc * t.p_hi * (1 - t.p_hi) + (1 - fc) * t.p_lo * (1 - t.p_lo)) / (t.n * gap * gap)
    se = np.sqrt(var)
    lower, upper = est - z * se, est + z * se
    data: dict[str, Any] = {"estimate": est, "std_error": se, "lower": lower, "upper": upper}
    if project:
        data["estimate"] = project_simplex(est)
        data["lower"] = np.clip(lower, 0.0, 1.0)
        data["upper"] = np.clip(upper, 0.0, 1.0)
        data["unbiased"] = est
    out = pd.DataFrame(data, index=pd.Index(t.cats, tupleize_cols=False))
    out.attrs["dp"] = {
        "model": "local",
        **t.mechanism,
        "epsilon": t.epsilon,
        "categories": len(t.cats),
        "n_reports": t.n,
        "ci": float(ci),
        "z": z,
        "projected": bool(project),
        "estimand": "share of the respondents in each category",
        "charged": False,
    }
    return out


def estimate_frequencies(reports: Any, epsilon: float | None = None,
                         categories: CategoriesArg | None = None, *,
                         method: Method = "auto", ci: float = 0.95, project: bool = False,
                         preset: str | None = None, name: str = "reports") -> pd.DataFrame:
    """Unbiased category frequencies from randomized reports, with standard errors and CIs.

    ``method``: ``"rr"`` (binary), ``"krr"`` or ``"rappor"``; ``"auto"`` picks RAPPOR for 2-D
    reports, else RR for 2 categories and k-RR otherwise, counting the declared categories.
    ``categories`` are declared as for the randomizers (a list; for a Categorical Series the
    opt-in ``"categories"``; without them ``[False, True]`` for a bool dtype, ``[0, 1]`` for a
    numeric one, and for RAPPOR the report columns); anything else is refused by its dtype,
    never read from the reports' values or a Categorical's levels.

    With ``n`` reports and ``c_j`` of them equal to (RR/k-RR) or with a 1 bit for (RAPPOR)
    category ``j``:

    * RR / k-RR: ``f_j = (c_j / n - p') / (p - p')``, variance
      ``(f_j p (1 - p) + (1 - f_j) p' (1 - p')) / (n (p - p')^2)``;
    * RAPPOR: ``f_j = (c_j / n - f/2) / (1 - f)``, variance ``(f/2)(1 - f/2) / (n (1 - f)^2)``.

    The estimand is the frequency among the ``n`` respondents (the variance is over the
    randomization only; for a random sample from a larger population add ``f_j (1 - f_j) / n``).
    Standard errors plug in the estimate clipped to [0, 1]; intervals are normal,
    ``estimate +- z * std_error``. ``project=True`` replaces the estimates by their Euclidean
    projection onto the probability simplex (post-processing: no privacy cost, but biased) and
    clips the intervals to [0, 1]; the unprojected estimates stay in column ``unbiased``.
    Estimation is post-processing of the reports: nothing is charged.

    Respondents whose value was missing or not a declared category reported a uniformly random
    category (the randomizers' default, ``invalid="uniform"``); each adds ``1/k`` to every
    category's expected share: with a share ``r`` of them and shares ``f_j`` among the others,
    ``E[estimate_j] = (1 - r) f_j + r / k`` (RR, k-RR and RAPPOR alike), and ``std_error`` omits
    their extra variance ``r (1/k) (1 - 1/k) / n``. Reports themselves must all be declared
    categories: any other report is refused with one message that never quotes it.

    Returns a DataFrame indexed by category with columns ``estimate``, ``std_error``,
    ``lower``, ``upper``; ``.attrs["dp"]`` describes the mechanism.
    """
    if method not in ("auto", "rr", "krr", "rappor"):
        raise ValidationError("method must be 'auto', 'rr', 'krr' or 'rappor'")
    z = _ci_z(ci)
    if categories is not None and not (isinstance(categories, str) and categories == CATEGORIES):
        check_categories(categories)  # a bad declaration is refused before the reports are read
    tally = _tally(reports, epsilon, categories, method, preset, name)
    if tally.n < 2:
        raise ValidationError(f"{name} needs at least 2 reports")
    return _frequency_table(tally, z, ci, project)
