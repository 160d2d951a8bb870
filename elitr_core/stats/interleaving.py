"""Interleaved conversations (the LTM benchmark's axis): isolated versus interleaved, and score
against memory span.

An interleaved run (mode ``int2``/``int3``, ``generation/interleave.py``) asks the questions of
K meetings inside one conversation, each answer stored with its memory span (tokens between
its transcript and its question). Two tables:

- ``interleaving``: per model, the same question answered isolated (the model's Conv-mt run,
  the same setting in mode mt, or its QA-st run) and interleaved, paired; the mean of
  interleaved - isolated with the meeting as the unit (:func:`.paired.paired_by_meeting`, the
  st-vs-mt code path: bootstrap interval over meetings, sign-flip test over meetings).
- ``interleaving-span``: the interleaved answers' mean score per span bucket, and a trend row:
  the OLS slope of score on span (per 1,000 tokens) with a cluster-robust (CR1) standard error
  over meetings and a t-test on G - 1 degrees of freedom, G the number of meetings, as
  statsmodels' ``OLS(...).fit(cov_type="cluster")`` does.

References
----------
Castillo-Bolado, D., et al. (2024). Beyond Prompts: Dynamic Conversational Benchmarking of
Large Language Models (LTM benchmark). NeurIPS 2024 Datasets and Benchmarks.
Cameron, A. C., & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
Journal of Human Resources, 50(2), 317-372.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.frame import RESPONSE_KEY, contract_types
from elitr_core.stats.leaderboard import response_scores
from elitr_core.stats.paired import paired_by_meeting
from elitr_core.vocab import EXPORT_COLUMNS, INTERLEAVED_MODES, setting_mode_label

INTERLEAVING_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["interleaving"]
SPAN_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["interleaving-span"]
#: Width of a span bucket (tokens) of ``interleaving-span``.
SPAN_BUCKET = 4000
#: What an interleaved question is compared with: its own setting in mode mt, and QA-st.
ISOLATED: tuple[tuple[str | None, str], ...] = ((None, "mt"), ("qa", "st"))
_SPAN_KEYS = [*RESPONSE_KEY, "base_model", "span"]


def with_spans(df: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """One score per response (:func:`~.leaderboard.response_scores`) with its ``run`` (the
    run's label), ``model`` (an interleaved run's model without its span) and ``span``.

    ``spans``: one row per interleaved response, the columns of ``RESPONSE_KEY`` (``model``
    the run's label) plus ``base_model`` and ``span`` (empty where not recorded).
    """
    missing = [c for c in _SPAN_KEYS if c not in spans.columns]
    if missing:
        raise UserError(f"the spans frame lacks column(s) {', '.join(missing)}")
    responses = _plain(response_scores(df))
    right = _plain(spans[_SPAN_KEYS].copy())
    merged = responses.merge(right, on=list(RESPONSE_KEY), how="left", validate="many_to_one")
    merged["run"] = merged["model"]
    merged["model"] = merged["base_model"].where(merged["base_model"].notna(), merged["model"])
    merged["span"] = pd.to_numeric(merged["span"], errors="coerce")
    return merged.drop(columns="base_model")


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """The response keys as plain values on both sides of the merge: text as ``str`` (the
    scores table holds categoricals), question numbers and seeds as nullable integers."""
    for column in RESPONSE_KEY:
        if column in ("question_id", "seed"):
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
        else:
            frame[column] = frame[column].astype(str)
    return frame


def _interleaved(responses: pd.DataFrame) -> pd.DataFrame:
    found = responses[responses["mode"].isin(INTERLEAVED_MODES)]
    if found.empty:
        raise DegenerateDataError("no interleaved run under the current filters: generate one "
                                  "with `generate --interleave 2 --span TOKENS` (mode int2)")
    return found


def isolated_vs_interleaved(df: pd.DataFrame, spans: pd.DataFrame, n_bootstrap: int = 1000,
                            seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Interleaved minus isolated score per model, interleaved run, isolated mode and
    evaluator, paired by question (several seeds averaged first).

    Returns
    -------
    pandas.DataFrame
        ``INTERLEAVING_COLUMNS``: ``run`` the interleaved run's label, ``isolated`` what it is
        compared with (``Conv-mt``, ``QA-st``); ``n`` the questions answered in both,
        ``n_meetings`` their meetings; the statistics of :func:`.paired.paired_by_meeting`.
    """
    responses = with_spans(df, spans)
    interleaved = _interleaved(responses)
    question = ["split", "meeting", "question_id", "evaluator"]
    rows = []
    for (model, run, setting, mode, evaluator), group in interleaved.groupby(
            ["model", "run", "setting", "mode", "evaluator"], sort=True):
        mine = group.groupby(question)["score"].mean().rename("interleaved")
        for iso_setting, iso_mode in ISOLATED:
            iso_setting = iso_setting or str(setting)
            alone = responses[(responses["run"] == model) & (responses["mode"] == iso_mode)
                              & (responses["setting"] == iso_setting)
                              & (responses["evaluator"] == evaluator)]
            paired = pd.concat([alone.groupby(question)["score"].mean().rename("isolated"),
                                mine], axis=1, join="inner").reset_index()
            if paired.empty:
                continue
            label = setting_mode_label(iso_setting, iso_mode)
            rows.append({
                "model": model, "run": run, "setting": setting, "mode": mode,
                "isolated": label, "evaluator": evaluator,
                "mean_isolated": float(paired["isolated"].mean()),
                "mean_interleaved": float(paired["interleaved"].mean()),
                **paired_by_meeting(
                    (paired["interleaved"] - paired["isolated"]).to_numpy(float),
                    (paired["split"] + "/" + paired["meeting"]).to_numpy(),
                    (str(run), label, str(evaluator), "interleaving"),
                    n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                    same=f"interleaved and {label} scores are the same")})
    if not rows:
        raise DegenerateDataError("no interleaved question was also answered isolated under "
                                  "the current filters: include the model's mt or QA-st run")
    return contract_types(pd.DataFrame(rows), INTERLEAVING_COLUMNS,
                          ["model", "run", "setting", "mode", "isolated", "evaluator"])


def cluster_slope(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                  confidence: float = 0.95) -> dict[str, float]:
    """OLS slope of ``y`` on ``x`` with a CR1 cluster-robust standard error.

    ``V = (X'X)^-1 (sum_g X_g' u_g u_g' X_g) (X'X)^-1 * G/(G-1) * (N-1)/(N-2)``, a t-test
    and interval on ``G - 1`` degrees of freedom (statsmodels' defaults for
    ``cov_type="cluster"``; Cameron & Miller 2015, section VI).
    """
    codes = pd.factorize(clusters)[0]
    n, g = x.size, int(codes.max()) + 1
    design = np.column_stack([np.ones(n), x])
    bread = np.linalg.inv(design.T @ design)
    beta = bread @ design.T @ y
    scores = design * (y - design @ beta)[:, None]
    summed = np.zeros((g, 2))
    np.add.at(summed, codes, scores)
    cov = bread @ (summed.T @ summed) @ bread * g / (g - 1) * (n - 1) / (n - 2)
    se = float(np.sqrt(cov[1, 1]))
    t = float(beta[1] / se) if se > 0 else float("nan")
    half = stats.t.ppf(0.5 + confidence / 2, g - 1) * se
    return {"slope": float(beta[1]), "se": se, "t": t,
            "p": float(2 * stats.t.sf(abs(t), g - 1)),
            "ci_low": float(beta[1] - half), "ci_high": float(beta[1] + half)}


def span_trend(df: pd.DataFrame, spans: pd.DataFrame, bucket: int = SPAN_BUCKET,
               confidence: float = 0.95) -> pd.DataFrame:
    """Interleaved answers' mean score per span bucket, and the trend over span.

    Returns
    -------
    pandas.DataFrame
        ``SPAN_COLUMNS``, per model, setting and evaluator: one row per bucket of ``bucket``
        tokens (``span_low`` <= span < ``span_high``; ``n``, ``n_meetings``, ``mean_span``,
        ``mean``), then a ``trend`` row over all of them: ``slope`` (score per 1,000 tokens
        of span) with its cluster-robust interval and ``p`` (:func:`cluster_slope`, meetings
        as clusters). ``note`` says why a trend cell is empty (one meeting, one span).
    """
    responses = _interleaved(with_spans(df, spans))
    responses = responses[responses["span"].notna()]
    if responses.empty:
        raise DegenerateDataError("no interleaved answer has a recorded span")
    rows = []
    for (model, setting, evaluator), group in responses.groupby(
            ["model", "setting", "evaluator"], sort=True):
        key = {"model": model, "setting": setting, "evaluator": evaluator}
        meeting = (group["split"] + "/" + group["meeting"]).to_numpy()
        low = (group["span"] // bucket * bucket).astype(int)
        for start, part in group.groupby(low.to_numpy(), sort=True):
            rows.append({**key, "bucket": f"{start:g}-{start + bucket:g}", "span_low": start,
                         "span_high": start + bucket, "n": len(part),
                         "n_meetings": part["meeting"].nunique(),
                         "mean_span": float(part["span"].mean()),
                         "mean": float(part["score"].mean())})
        rows.append({**key, "bucket": "trend", "n": len(group),
                     "n_meetings": len(set(meeting)), "mean_span": float(group["span"].mean()),
                     "mean": float(group["score"].mean()),
                     **_trend(group["span"].to_numpy(float) / 1000,
                              group["score"].to_numpy(float), meeting, confidence)})
    return contract_types(pd.DataFrame(rows), SPAN_COLUMNS,
                          ["model", "setting", "evaluator", "bucket"])


def _trend(x: np.ndarray, y: np.ndarray, meetings: np.ndarray,
           confidence: float) -> dict[str, object]:
    if len(set(meetings)) < 2:
        return {"note": "one meeting: the trend test needs 2 meetings or more"}
    if np.ptp(x) == 0:
        return {"note": "every answer has the same span: no trend to fit"}
    if np.ptp(y) == 0:
        return {"slope": 0.0, "note": f"every score is {y[0]:g}: the residuals are all 0, "
                                      "no interval"}
    fit = cluster_slope(x, y, meetings, confidence)
    if not fit["se"] > 0:
        return {"slope": fit["slope"], "note": "the residuals are all 0: no interval"}
    return {k: fit[k] for k in ("slope", "ci_low", "ci_high", "p")} | {"note": ""}
