"""Krippendorff's alpha of long-format ratings, for the ``alpha`` column beside every ICC.

Alpha needs no complete table (a rater who did not rate a unit has no value there), so it is
computed on every rating of a group, the incomplete targets an ICC drops included; with the
interval metric it is the ICC's close relative (Krippendorff 2011) and reads the same data a
random-assignment study gives, where no two annotators share a response.
"""

from __future__ import annotations

from typing import Literal, cast

import krippendorff
import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError

KRIPPENDORFF_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def alpha_of(long: pd.DataFrame, targets: str, raters: str, ratings: str,
             level: str = "interval", label: str = "") -> float:
    """Krippendorff's alpha of one rater x unit table given as long rows (NaN = missing).

    Parameters
    ----------
    long : pandas.DataFrame
        One row per rating; a (target, rater) pair rated twice is averaged first.
    targets, raters, ratings : str
        Columns of the unit, the coder and the value.
    level : {"nominal", "ordinal", "interval", "ratio"}
        The metric (``interval`` beside an ICC).
    label : str
        Names the data in a refusal.

    Raises
    ------
    DegenerateDataError
        No unit rated twice (alpha compares values within a unit), or every value the same
        (no expected disagreement: alpha is 0/0).

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication Departmental Papers 43. Computed by the ``krippendorff`` package.

    Examples
    --------
    >>> rows = pd.DataFrame({"unit": [1, 1, 2, 2, 3, 3], "coder": list("ababab"),
    ...                      "value": [1.0, 1.0, 2.0, 3.0, 5.0, 5.0]})
    >>> round(alpha_of(rows, "unit", "coder", "value"), 4)
    0.9505
    """
    if level not in KRIPPENDORFF_LEVELS:
        raise UserError(f"level must be one of {', '.join(KRIPPENDORFF_LEVELS)}, not {level!r}")
    rated = long[long[ratings].notna()]
    matrix = (rated.groupby([raters, targets], observed=True)[ratings].mean()
              .unstack(targets).to_numpy(float))
    prefix = f"{label}: " if label else ""
    paired = int((np.isfinite(matrix).sum(axis=0) >= 2).sum()) if matrix.size else 0
    if matrix.shape[0] < 2 or paired == 0:
        raise DegenerateDataError(
            f"{prefix}Krippendorff's alpha needs a response rated by at least 2 raters "
            f"({matrix.shape[0]} rater(s), {paired} response(s) rated twice or more)")
    if np.unique(matrix[np.isfinite(matrix)]).size < 2:
        raise DegenerateDataError(f"{prefix}every rating is the same, alpha is undefined")
    if level == "interval":
        return _interval_alpha(matrix)
    metric = cast(Literal["nominal", "ordinal", "interval", "ratio"], level)
    domain = np.unique(matrix[np.isfinite(matrix)]).size
    if matrix.shape[1] * domain * domain > _MAX_CELLS:
        raise DegenerateDataError(
            f"{prefix}{domain} distinct values are too many for the {level} metric's "
            "coincidence table; use the interval metric or round the scores")
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=metric))


# The krippendorff package builds a units x values x values array: with means of judge
# samples (thousands of distinct values) on 6,775 responses that is ~100 GiB. The interval
# metric's disagreements are sums of squared differences, which reduce to sums and sums of
# squares, so it is computed here in O(ratings) (Krippendorff 2011, section C.3, with
# delta^2 = (c - k)^2); tests check it against the package to 1e-12.
_MAX_CELLS = 50_000_000


def _interval_alpha(matrix: np.ndarray) -> float:
    """Interval alpha of a raters x units matrix (NaN = missing) from sums of squares."""
    finite = np.isfinite(matrix)
    m_u = finite.sum(axis=0)
    pairable = m_u >= 2
    values = np.where(finite, matrix, 0.0)[:, pairable]
    m = m_u[pairable].astype(float)
    s1, s2 = values.sum(axis=0), (values**2).sum(axis=0)
    # sum over ordered pairs i != j of (v_i - v_j)^2 = 2 m sum(v^2) - 2 (sum v)^2
    within = (2 * m * s2 - 2 * s1**2) / (m - 1)
    n = m.sum()
    observed = within.sum() / n
    expected = (2 * n * s2.sum() - 2 * s1.sum() ** 2) / (n * (n - 1))
    return float(1.0 - observed / expected)


def alpha_cell(long: pd.DataFrame, targets: str, raters: str,
               ratings: str) -> tuple[float, str]:
    """Interval alpha of a group and an empty note, or NaN and the reason it is undefined."""
    try:
        return alpha_of(long, targets, raters, ratings), ""
    except DegenerateDataError as error:
        return float("nan"), f"alpha undefined: {error}"
