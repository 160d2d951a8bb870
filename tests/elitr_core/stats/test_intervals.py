"""When the Judge audit says its t intervals are not to be trusted: the thresholds of
``bench/results/ppi-coverage-2026-11-25.md`` (fewer than 30 human scores; PPI++ below 100;
half or more of the human scores at one end of the scale)."""

from __future__ import annotations

import numpy as np

from elitr_core.stats.intervals import PILED_MARK, piled_note, small_sample_warning


def test_piled_up_is_half_or_more_at_one_end() -> None:
    gpt4 = np.array([1] * 5 + [2] * 2 + [3] * 3 + [4] + [5] * 6 + [6] * 3 + [7] * 9 + [8] * 19
                    + [9] * 74 + [10] * 8, float)  # the bundled gold-human scores of GPT-4
    assert piled_note(gpt4).startswith("82 of 130 human scores are 9-10, a sample piled up")
    longalpaca = np.array([1] * 52 + [2] * 2 + [5] * 76, float)  # 42% at 1-2
    assert piled_note(longalpaca) == ""
    assert piled_note(np.array([1.5, 2.0, 2.5, 7.0])).startswith("3 of 4 human scores are 1-2")
    assert piled_note(np.array([9.0])) == ""  # one score: no interval to warn about


def test_the_warning_names_each_case_and_is_silent_otherwise() -> None:
    assert small_sample_warning([130, 130, 1, 0]) is None  # one score: no interval at all
    few = small_sample_warning([10, 130])
    assert few is not None and "1 model(s) have fewer than 30 human scores" in few
    some = small_sample_warning([60])
    assert some is not None and "fewer than 100, where PPI++'s t interval" in some
    piled = small_sample_warning([130, 130], ["", f"... {PILED_MARK} ..."])
    assert piled is not None and f"1 model(s) have human scores {PILED_MARK}" in piled
    assert "betting interval" in piled
