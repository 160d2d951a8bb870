"""Judge self-consistency: do a judge's k samples agree, and does their mean track humans better?

A judge run with ``--samples K`` stores K judgments per response. Krippendorff's alpha among
the samples (samples as coders) says how repeatable one judgment is; the Pearson correlation
with the human score of the first sample alone, of the mean of the first two, ... up to all K
says whether paying for more samples buys agreement with humans.
"""

from __future__ import annotations

import pandas as pd

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.agreement import evaluator_correlation
from elitr_core.stats.frame import RESPONSE_KEY, check_not_empty, per_response
from elitr_core.stats.icc import krippendorff_alpha
from elitr_core.vocab import EXPORT_COLUMNS

CONSISTENCY_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["self-consistency"]
"""Columns of ``export self-consistency``."""


def _samples(df: pd.DataFrame, judge: str) -> tuple[pd.DataFrame, int]:
    """The judge's rows of responses holding every one of its K samples, and K."""
    rows = df[(df["evaluator"] == judge) & df["score"].notna()]
    check_not_empty(rows, what=f"the judge {judge}")
    k = int(rows["sample"].nunique())
    if k < 2:
        raise DegenerateDataError(f"{judge} has one sample per response: run the judge with "
                                  "--samples 2 or more to measure its self-consistency")
    keys = list(RESPONSE_KEY)
    counts = rows.groupby(keys, dropna=False, sort=False)["sample"].transform("nunique")
    return rows[counts == k], k


def mean_of_first(rows: pd.DataFrame, m: int, name: str) -> pd.DataFrame:
    """Per response, the mean of the judge's first ``m`` samples, as evaluator ``name``."""
    first = sorted(rows["sample"].unique())[:m]
    out = per_response(rows[rows["sample"].isin(first)].assign(annotator=None))
    return out.assign(evaluator=name, annotator=None, sample=0)


def self_consistency(df: pd.DataFrame, judge: str, human: str, n_bootstrap: int = 1000,
                     seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Agreement among a judge's samples and its correlation with humans by number of samples.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table; the judge's rows carry ``sample`` 0..K-1.
    judge, human : str
        Evaluator slugs.
    n_bootstrap, seed, confidence
        Cluster-bootstrap interval of the correlations, as
        :func:`~elitr_core.stats.agreement.evaluator_correlation`.

    Returns
    -------
    pandas.DataFrame
        ``CONSISTENCY_COLUMNS``: first ``krippendorff-alpha`` (interval metric, the K samples
        as coders, responses holding all K; no interval), then ``pearson`` for
        ``samples`` = 1..K: the correlation of the mean of the first ``samples`` samples with
        the human score, with its 95% cluster-bootstrap interval. A statistic undefined on
        the data (every sample the same score; a constant human or judge mean; no response
        both scored) is empty and its ``note`` says why.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication Departmental Papers 43.
    Wang, X., et al. (2023). Self-consistency improves chain of thought reasoning in language
    models. ICLR 2023.
    """
    rows, k = _samples(df, judge)
    coded = rows.assign(annotator="sample " + rows["sample"].astype(str))
    n_responses = rows.groupby(list(RESPONSE_KEY), dropna=False).ngroups
    try:
        alpha, note = krippendorff_alpha(coded, evaluator=judge), ""
    except DegenerateDataError as error:  # every sample the same score: alpha undefined
        alpha, note = float("nan"), str(error)
    out = [(judge, human, "krippendorff-alpha", k, n_responses, alpha, None, None, note)]
    humans = per_response(df[df["evaluator"] == human]).assign(annotator=None, sample=0)
    for m in range(1, k + 1):
        name = f"{judge} (mean of {m})"
        pair = pd.concat([mean_of_first(rows, m, name), humans], ignore_index=True)
        try:
            r = evaluator_correlation(pair, [name, human], ["pearson"], n_bootstrap, seed,
                                      confidence).iloc[0]
        except DegenerateDataError as error:  # a constant judge mean or human: r undefined
            out.append((judge, human, "pearson", m, 0, float("nan"), None, None, str(error)))
            continue
        # a constant judge mean or human now comes back as an empty row with its note
        out.append((judge, human, "pearson", m, int(r["n"]), float(r["r"]), r["ci_low"],
                    r["ci_high"], str(r.get("note", "") or "")))
    table = pd.DataFrame(out, columns=list(CONSISTENCY_COLUMNS))
    for column in ("ci_low", "ci_high"):
        table[column] = table[column].astype("Float64")
    return table
