"""Interleaved conversations (the LTM benchmark's axis): isolated versus interleaved, and score
against memory span.

An interleaved run (mode ``int2``/``int3``, ``generation/interleave.py``) asks the questions of
K meetings inside one conversation, each answer stored with its memory span (tokens between
its transcript and its question).

The unit of inference is the *conversation*: an ``--interleave K`` run asks K meetings in one
conversation, so whatever happens to a conversation (its length, a confusion carried from one
meeting's questions to the next) moves all its meetings' scores together. Treating those
meetings as independent rejects a true null far too often (a conversation effect of sd 0.5-1
beside question noise 1: the meetings' sign-flip test at 0.14-0.36 and the span trend
clustered by meeting at up to 0.68 instead of 0.05, ``bench/bench_validity.py``); by
conversation both hold their level (0.04-0.06 with 10-20 conversations). Two tables:

- ``interleaving``: per model, the same question answered isolated (the model's Conv-mt run,
  the same setting in mode mt, or its QA-st run) and interleaved, paired; the mean of
  interleaved - isolated with the interleaved conversation as the unit
  (:func:`.paired.paired_by_meeting`, the st-vs-mt code path with conversations as the
  clusters: bootstrap interval and sign-flip test over conversations).
- ``interleaving-span``: the interleaved answers' mean score per span bucket, and a trend row:
  the OLS slope of score on span (per 1,000 tokens) with a cluster-robust interval over
  conversations, CR2 with Satterthwaite degrees of freedom (:func:`.cluster_robust.cr2_slope`),
  and ``p`` from the wild cluster bootstrap over conversations
  (:func:`.cluster_tests.wild_cluster_p`). The CR1 t-test (:func:`cluster_slope`, as
  statsmodels' ``OLS(...).fit(cov_type="cluster")``) rejects a true null too often with few
  conversations when the span varies between them (runs at several spans: 0.21-0.62 at 0.05
  with 2-4 conversations, 0.08-0.11 with 10-20), the bootstrap does not; the CR1 interval
  printed beside ``p`` until 28 Nov covered a true zero trend as seldom (coverage of CR1
  against CR2: ``bench/bench_validity.py``, section ``trend-interval``).

An answer's conversation comes from the run's stored plan (``data.scores.span_table``); an
answer without one (a run stored without its plan) counts its meeting as its conversation,
and ``note`` says so.

References
----------
Castillo-Bolado, D., et al. (2024). Beyond Prompts: Dynamic Conversational Benchmarking of
Large Language Models (LTM benchmark). NeurIPS 2024 Datasets and Benchmarks.
Cameron, A. C., & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
Journal of Human Resources, 50(2), 317-372.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.sparse.csgraph import connected_components

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.cluster_robust import cr2_slope
from elitr_core.stats.cluster_tests import EXACT_WILD, wild_cluster_p
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
#: The note of a row with an answer whose conversation is not known.
NO_PLAN = ("a run stored without its conversations: each of its meetings is taken as its own "
           "conversation, so the test is too small if they were asked together")


def with_spans(df: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """One score per response (:func:`~.leaderboard.response_scores`) with its ``run`` (the
    run's label), ``model`` (an interleaved run's model without its span), ``span`` and
    ``conversation`` (the cluster: the answer's conversation; ``split/meeting`` where none is
    known, marked by ``planless``).

    ``spans``: one row per interleaved response, the columns of ``RESPONSE_KEY`` (``model``
    the run's label) plus ``base_model``, ``span`` (empty where not recorded) and, optionally,
    ``conversation`` (empty where not known).
    """
    missing = [c for c in _SPAN_KEYS if c not in spans.columns]
    if missing:
        raise UserError(f"the spans frame lacks column(s) {', '.join(missing)}")
    responses = _plain(response_scores(df))
    right = _plain(spans[_SPAN_KEYS].copy())
    right["conversation"] = (spans["conversation"].astype("string") if "conversation" in
                             spans.columns else pd.NA)
    merged = responses.merge(right, on=list(RESPONSE_KEY), how="left", validate="many_to_one")
    merged["run"] = merged["model"]
    merged["model"] = merged["base_model"].where(merged["base_model"].notna(), merged["model"])
    merged["span"] = pd.to_numeric(merged["span"], errors="coerce")
    merged["planless"] = merged["conversation"].isna().to_numpy()
    merged["conversation"] = merged["conversation"].astype(object).where(
        ~merged["planless"], merged["split"] + "/" + merged["meeting"])
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
        ``n_meetings`` their meetings, ``n_conversations`` the interleaved conversations
        those were asked in; the statistics of :func:`.paired.paired_by_meeting` with the
        conversation as the cluster (interval over conversations, sign-flip ``p`` over
        conversations; ``note`` says when there are too few for ``p`` to reach 0.05).
    """
    responses = with_spans(df, spans)
    interleaved = _interleaved(responses)
    question = ["split", "meeting", "question_id", "evaluator", "conversation", "planless"]
    rows = []
    for (model, run, setting, mode, evaluator), group in interleaved.groupby(
            ["model", "run", "setting", "mode", "evaluator"], sort=True):
        mine = group.groupby(question)["score"].mean().rename("interleaved")
        for iso_setting, iso_mode in ISOLATED:
            iso_setting = iso_setting or str(setting)
            alone = responses[(responses["run"] == model) & (responses["mode"] == iso_mode)
                              & (responses["setting"] == iso_setting)
                              & (responses["evaluator"] == evaluator)]
            paired = pd.concat([alone.groupby(question[:4])["score"].mean().rename("isolated"),
                                mine.reset_index(question[4:])], axis=1,
                               join="inner").reset_index()
            if paired.empty:
                continue
            label = setting_mode_label(iso_setting, iso_mode)
            rows.append({
                "model": model, "run": run, "setting": setting, "mode": mode,
                "isolated": label, "evaluator": evaluator,
                "mean_isolated": float(paired["isolated"].mean()),
                "mean_interleaved": float(paired["interleaved"].mean()),
                **_by_conversation(paired, (str(run), label, str(evaluator), "interleaving"),
                                   n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                                   same=f"interleaved and {label} scores are the same")})
    if not rows:
        raise DegenerateDataError("no interleaved question was also answered isolated under "
                                  "the current filters: include the model's mt or QA-st run")
    return contract_types(pd.DataFrame(rows), INTERLEAVING_COLUMNS,
                          ["model", "run", "setting", "mode", "isolated", "evaluator"])


def _by_conversation(paired: pd.DataFrame, names: tuple[str, ...], **options: Any
                     ) -> dict[str, object]:
    """:func:`.paired.paired_by_meeting` with the conversation as the cluster, its count as
    ``n_conversations`` and the meetings counted apart."""
    row = paired_by_meeting((paired["interleaved"] - paired["isolated"]).to_numpy(float),
                            conversation_clusters(paired), names, unit="conversation",
                            **options)
    row["n_conversations"] = row.pop("n_meetings")
    row["n_meetings"] = (paired["split"] + "/" + paired["meeting"]).nunique()
    return _planless_note(row, paired["planless"])


def _planless_note(row: dict[str, object], planless: pd.Series) -> dict[str, object]:
    if planless.any():
        row["note"] = "; ".join(n for n in (str(row.get("note") or ""), NO_PLAN) if n)
    return row


def cluster_slope(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                  confidence: float = 0.95) -> dict[str, float]:
    """OLS slope of ``y`` on ``x`` with a CR1 cluster-robust standard error (the trend's
    interval before 28 Nov, too narrow with few clusters: :func:`.cluster_robust.cr2_slope`
    replaced it; kept for the benchmark that compares the two).

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
        tokens (``span_low`` <= span < ``span_high``; ``n``, ``n_meetings``,
        ``n_conversations``, ``mean_span``, ``mean``), then a ``trend`` row over all of them:
        ``slope`` (score per 1,000 tokens of span) with its cluster-robust interval (CR2,
        Satterthwaite degrees of freedom, :func:`.cluster_robust.cr2_slope`) and ``p`` (wild
        cluster bootstrap), conversations as clusters (conversations of several runs that
        share a meeting count as one cluster, :func:`conversation_clusters`). ``note`` says
        why a trend cell is empty (one conversation, one span) or what limits it.
    """
    responses = _interleaved(with_spans(df, spans))
    responses = responses[responses["span"].notna()]
    if responses.empty:
        raise DegenerateDataError("no interleaved answer has a recorded span")
    rows = []
    for (model, setting, evaluator), group in responses.groupby(
            ["model", "setting", "evaluator"], sort=True):
        key = {"model": model, "setting": setting, "evaluator": evaluator}
        clusters = conversation_clusters(group)
        low = (group["span"] // bucket * bucket).astype(int)
        for start, part in group.groupby(low.to_numpy(), sort=True):
            rows.append({**key, "bucket": f"{start:g}-{start + bucket:g}", "span_low": start,
                         "span_high": start + bucket, "n": len(part),
                         "n_meetings": part["meeting"].nunique(),
                         "n_conversations": len(set(clusters[(low == start).to_numpy()])),
                         "mean_span": float(part["span"].mean()),
                         "mean": float(part["score"].mean())})
        trend = _trend(group["span"].to_numpy(float) / 1000, group["score"].to_numpy(float),
                       clusters, confidence)
        rows.append({**key, "bucket": "trend", "n": len(group),
                     "n_meetings": (group["split"] + "/" + group["meeting"]).nunique(),
                     "n_conversations": len(set(clusters)),
                     "mean_span": float(group["span"].mean()),
                     "mean": float(group["score"].mean()),
                     **_planless_note(trend, group["planless"])})
    return contract_types(pd.DataFrame(rows), SPAN_COLUMNS,
                          ["model", "setting", "evaluator", "bucket"])


def conversation_clusters(answers: pd.DataFrame) -> np.ndarray:
    """The cluster of each answer: its conversation, conversations that share a meeting
    (two runs of one model at two spans, or two seeds' groupings) joined into one, since a
    meeting's own difficulty is a cause they share. The components of the graph linking each
    conversation to its meetings (``scipy.sparse.csgraph.connected_components``)."""
    conversation = pd.factorize(answers["conversation"].astype(str))[0]
    meeting = pd.factorize(answers["split"] + "/" + answers["meeting"])[0]
    n_conv = int(conversation.max()) + 1
    nodes = n_conv + int(meeting.max()) + 1
    graph = sparse.coo_matrix((np.ones(conversation.size), (conversation, n_conv + meeting)),
                              shape=(nodes, nodes))
    return connected_components(graph, directed=False)[1][conversation]


def _trend(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
           confidence: float) -> dict[str, object]:
    if len(set(clusters)) < 2:
        return {"note": "one conversation: the trend test needs 2 conversations or more"}
    if np.ptp(x) == 0:
        return {"note": "every answer has the same span: no trend to fit"}
    if np.ptp(y) == 0:
        return {"slope": 0.0, "note": f"every score is {y[0]:g}: the residuals are all 0, "
                                      "no interval"}
    fit = cr2_slope(x, y, clusters, confidence)
    if not fit["se"] > 0:
        return {"slope": fit["slope"], "note": "the residuals are all 0: no interval"}
    g = len(set(clusters))
    out: dict[str, object] = {k: fit[k] for k in ("slope", "ci_low", "ci_high")}
    out["note"] = ""
    out["p"] = wild_cluster_p(x, y, clusters, rng=np.random.default_rng(0))
    if g <= EXACT_WILD and 2.0 / (1 << g) > 1 - confidence:
        out["note"] = (f"with {g} conversations no trend can reach p < {1 - confidence:.2g} "
                       f"(the smallest p is {2.0 / (1 << g):.3g}); the interval rests on "
                       f"{fit['df']:.2g} degrees of freedom")
    return out
