"""Checks a background job passes before it starts (the dashboard's Runs page): a run that
could not start is refused with the reason and the fix, instead of a log that ends in an error.

- ``generate``: the meetings of the split exist, have transcripts and the questions their
  language needs (the very check the run makes first, ``generation.runs.load_work``);
- the backend: its own check (:meth:`~elitr_core.backends.base.Backend.preflight`: a server
  that answers, a model path given).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from elitr_core.backends.registry import backend_class
from elitr_core.errors import UserError


def check_job(session: Session, kind: str, options: Mapping[str, Any]) -> None:
    """Raise a :class:`UserError` saying why and what to do when the job could not start."""
    if options.get("backend"):
        backend_class(str(options["backend"])).preflight(options)
    if kind == "judge":
        for name, field in (("judge_model", "Judge model"), ("evaluator", "Evaluator slug")):
            if not str(options.get(name) or "").strip():
                raise UserError(f'"{field}" is empty: fill it in (the judge model as the '
                                "server knows it; the evaluator's name in every table)")
    if kind == "generate" and (options.get("interleave") or options.get("span")):
        if not options.get("interleave") or options.get("mode") != "mt":
            raise UserError("an interleaved run asks K meetings' questions in one conversation: "
                            "choose Interleave 2 or 3 meetings with mode mt (a memory span "
                            "needs Interleave)")
    if kind == "generate":
        if not str(options.get("model") or "").strip():
            raise UserError('the model name is empty: fill in "Model" (the name the server '
                            "knows the model by; the run is stored under it)")
        try:
            _check_generation(session, options)
        except UserError as exc:  # the command line's words, said in the form's
            raise UserError(in_form_words(str(exc))) from None


#: the command line's options as the Runs page's form names them
FORM_FIELDS = {"--meetings": '"Meetings"', "--model": '"Model"', "--setting": '"Setting"',
               "--mode": '"Mode"', "--split": '"Split"', "--language": '"Language"'}


def in_form_words(text: str) -> str:
    """``text`` with each command-line option the form has replaced by the field's name."""
    for flag, field in FORM_FIELDS.items():
        text = re.sub(rf"{flag}(?![\w-])", field, text)
    return text


def _check_generation(session: Session, options: Mapping[str, Any]) -> None:
    """The check a generation run makes first: its meetings, transcripts and questions."""
    from elitr_core.generation.runs import GenerationSpec
    from elitr_core.generation.spec import load_work

    meetings = tuple(m.strip() for m in str(options.get("meetings") or "").split(",")
                     if m.strip())
    load_work(session, GenerationSpec(
        model=str(options.get("model") or ""), setting=str(options["setting"]),
        mode=str(options["mode"]), split=str(options["split"]), meetings=meetings,
        language=str(options.get("language") or "en")))
