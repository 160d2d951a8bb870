"""The dashboard's check before a job starts asks the chosen backend's own check
(``Backend.preflight``), in the Runs form's words."""

from __future__ import annotations

from typing import Any

import pytest

from elitr_core.errors import UserError
from elitr_core.generation.preflight import check_job

JUDGE = {"judge_model": "j", "evaluator": "e"}


def test_each_backend_checks_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    session: Any = None  # a judge job's checks read no database
    with pytest.raises(UserError, match='the hf backend needs a model path: fill in "Model '
                                        r'path \(hf\)"'):
        check_job(session, "judge", {"backend": "hf", "model_path": "", **JUDGE})
    check_job(session, "judge", {"backend": "hf", "model_path": "/models/m", **JUDGE})
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="the base URL is empty"):
        check_job(session, "judge", {"backend": "openai", "base_url": " ", **JUDGE})
    check_job(session, "judge", {"backend": "fake", **JUDGE})  # nothing to check
