"""The judge audit's tables: one builder per table, from the scores frame and the audit options.

``python -m elitr_core export NAME --judge SLUG --human SLUG ...`` and the Judge audit page
both call :func:`audit_table`, so a page download is byte-identical to the CLI's output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.vocab import AUDIT_TABLES  # re-exported: the names live in vocab

#: Tables whose judge effects need the response texts (their length in words).
NEEDS_LENGTHS: tuple[str, ...] = ("judge-effects", "length-controlled", "length-controlled-tau")
#: Tables that read the interleaved answers' memory spans (``data.scores.span_table``).
NEEDS_SPANS: tuple[str, ...] = ("interleaving", "interleaving-span")


@dataclass(frozen=True)
class AuditOptions:
    """Options of the judge-audit tables (hashable, so pages can cache on them).

    ``groups`` are the model families (``--group``) used by self-preference; the judge's own
    family is ``judge_family`` or, when empty, the family holding a model named like the judge
    (``gpt-4`` -> ``GPT-4`` -> ``GPT``).
    """

    judge: str = "gpt-4"
    human: str = "gold-human"
    confidence: float = 0.95
    half_width: float = 0.5
    budget: int = 100
    replicates: int = 1000
    folds: int = 5
    seed: int = 0
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    judge_family: str = ""


def families(options: AuditOptions) -> dict[str, str]:
    """Model -> family from the options' groups (the default families when none are given)."""
    from elitr_core.export.groups import parse_groups
    from elitr_core.export.views import DEFAULT_FAMILIES

    groups = options.groups or parse_groups(DEFAULT_FAMILIES)
    return {model: name for name, models in groups for model in models}


def judge_family(options: AuditOptions) -> str:
    """The judge's family: ``options.judge_family``, else the family of the model named like
    the judge slug (case-insensitive), else a clear error."""
    if options.judge_family:
        return options.judge_family
    by_model = {m.lower(): f for m, f in families(options).items()}
    family = by_model.get(options.judge.lower())
    if family is None:
        raise UserError(f"no model family matches the judge {options.judge}: pass "
                        "--judge-family NAME (one of the --group names)")
    return family


def response_lengths(responses: pd.DataFrame) -> pd.DataFrame:
    """Word count (whitespace-separated) of each response text, with the response key."""
    from elitr_core.stats.frame import RESPONSE_KEY

    keys = list(RESPONSE_KEY)
    if responses.empty:
        return pd.DataFrame(columns=[*keys, "length"])
    words = responses["response"].fillna("").astype(str).str.split().str.len()
    return responses[keys].assign(length=words.astype(float))


def ppi_rankings(ppi: pd.DataFrame) -> pd.DataFrame:
    """Rank of each model (1 = best) by the judge, human-only, PPI and PPI++ means.

    Only models with a human mean are ranked; ties share the lowest rank (``method="min"``).
    """
    rows = ppi[ppi["human_mean"].notna()].reset_index(drop=True)
    out = rows[["split", "setting", "mode", "model"]].copy()
    for label, column in (("judge", "judge_mean"), ("human", "human_mean"),
                          ("ppi", "ppi_mean"), ("ppi++", "ppipp_mean")):
        ranks = rows.groupby(["split", "setting", "mode"])[column].rank(
            ascending=False, method="min")
        out[f"rank_{label}"] = ranks.astype("Int64")
    return out


def _judge_effects(df: pd.DataFrame, o: AuditOptions,
                   lengths: pd.DataFrame | None) -> pd.DataFrame:
    """Verbosity, self-preference and answer position; an effect that cannot be measured
    under the filters is one row with empty numbers and a ``note`` naming the cause."""
    from elitr_core.stats import judge_effects as fx

    boot = (o.replicates, o.seed, o.confidence)  # n_bootstrap, seed, confidence
    effects: list[tuple[str, Callable[[], pd.DataFrame]]] = [
        ("verbosity", lambda: fx.verbosity(df, o.judge, o.human, _texts(lengths), *boot)),
        ("self-preference", lambda: fx.self_preference(
            df, o.judge, o.human, families(o), judge_family(o), *boot)),
        ("answer position", lambda: fx.answer_position(df, o.judge, o.human, *boot)),
    ]
    parts = []
    for effect, build in effects:
        try:
            parts.append(build())
        except (DegenerateDataError, UserError) as error:
            parts.append(pd.DataFrame([(o.judge, o.human, effect, "", 0, None, None, None,
                                        str(error))], columns=list(fx.EFFECT_COLUMNS)))
    out = pd.concat(parts, ignore_index=True)
    return out.astype({c: "Float64" for c in ("estimate", "ci_low", "ci_high")})


def _length_controlled(df: pd.DataFrame, o: AuditOptions,
                       lengths: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    from elitr_core.stats.length_control import length_controlled

    return length_controlled(df, o.judge, o.human, _texts(lengths), n_bootstrap=o.replicates,
                             seed=o.seed, confidence=o.confidence)


def _texts(lengths: pd.DataFrame | None) -> pd.DataFrame:
    if lengths is None or lengths.empty:
        raise DegenerateDataError("no response text under these filters: the verbosity effect "
                                  "measures response lengths (import the generated responses)")
    return lengths


def _required(frame: pd.DataFrame | None, table: str) -> pd.DataFrame:
    if frame is None:
        raise UserError(f"internal: {table} was built without the data it reads")
    return frame


def study_of(human: str, table: str = "ppi-active") -> str:
    """The study behind a study evaluator (``gold-human:NAME`` -> ``NAME``), else an error."""
    pool, sep, study = human.partition(":")
    if not sep or not study:
        what = "a sampled study" if table == "ppi-active" else "a study"
        raise UserError(f"{table} needs the evaluator of {what} as --human "
                        f"(e.g. gold-human:NAME), not {human}")
    return study


def audit_table(name: str, df: pd.DataFrame, options: AuditOptions,
                lengths: pd.DataFrame | None = None,
                probabilities: pd.DataFrame | None = None,
                spans: pd.DataFrame | None = None) -> pd.DataFrame:
    """Build one judge-audit table from the long scores frame.

    ``lengths``: response word counts (``judge-effects``); ``probabilities``: the selection
    probabilities of a sampled study's items (``ppi-active``); ``spans``: the interleaved
    answers' memory spans (``interleaving``, ``interleaving-span``).
    """
    from elitr_core.stats import (
        active,
        budget,
        consistency,
        conversation,
        interleaving,
        ppi,
        ppi_designs,
        recalibration,
    )
    from elitr_core.stats.frame import check_not_empty

    check_not_empty(df)
    o = options
    builders: dict[str, Callable[[], pd.DataFrame]] = {
        "ppi": lambda: ppi.ppi_table(df, o.judge, o.human, o.confidence),
        "ppi-active": lambda: active.active_ppi_table(
            df, o.judge, o.human, _required(probabilities, "ppi-active"), o.confidence),
        "ppi-budget": lambda: budget.budget_plan(df, o.judge, o.human, o.half_width,
                                                 o.confidence),
        "ppi-designs": lambda: ppi_designs.design_simulation(
            df, o.judge, o.human, o.budget, o.replicates, o.seed, o.confidence),
        "recalibration": lambda: recalibration.recalibration_table(df, o.judge, o.human,
                                                                   o.folds, o.seed),
        "judge-effects": lambda: _judge_effects(df, o, lengths),
        "self-consistency": lambda: consistency.self_consistency(
            df, o.judge, o.human, o.replicates, o.seed, o.confidence),
        "length-controlled": lambda: _length_controlled(df, o, lengths)[0],
        "length-controlled-tau": lambda: _length_controlled(df, o, lengths)[1],
        "turn-effect": lambda: conversation.turn_effect(df, o.replicates, o.seed, o.confidence),
        "st-vs-mt": lambda: conversation.st_vs_mt(df, o.replicates, o.seed, o.confidence),
        "interleaving": lambda: interleaving.isolated_vs_interleaved(
            df, _required(spans, "interleaving"), o.replicates, o.seed, o.confidence),
        "interleaving-span": lambda: interleaving.span_trend(
            df, _required(spans, "interleaving-span"), confidence=o.confidence),
    }
    if name not in builders:
        raise UserError(f"unknown judge-audit table {name!r}: choose one of "
                        f"{', '.join(AUDIT_TABLES)}")
    return builders[name]()
