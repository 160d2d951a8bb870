"""Checks a background job passes before it starts (the dashboard's Runs page): a run that
could not start is refused with the reason and the fix, instead of a log that ends in an error.

- ``generate``: the meetings of the split exist, have transcripts and the questions their
  language needs (the very check the run makes first, ``generation.runs.load_work``);
- the ``openai`` backend: its server answers on the base URL's host and port;
- the ``hf`` backend: a model path is given.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from sqlmodel import Session

from elitr_core import settings
from elitr_core.errors import UserError

#: seconds to wait for the server's port to accept a connection
CONNECT_TIMEOUT_S = 3.0


def check_job(session: Session, kind: str, options: Mapping[str, Any]) -> None:
    """Raise a :class:`UserError` saying why and what to do when the job could not start."""
    backend = options.get("backend")
    if backend == "hf" and not options.get("model_path"):
        raise UserError("the hf backend needs a model path: fill in \"Model path (hf)\" (a "
                        "local folder or a Hugging Face model id)")
    if backend == "openai":
        from elitr_core.backends.openai_backend import EMPTY_BASE_URL

        base_url = str(options.get("base_url") or "").strip() or settings.text(
            settings.OPENAI_BASE_URL)
        if not base_url:  # not OpenAI's address in its place: the form's field was left empty
            raise UserError(EMPTY_BASE_URL)
        check_reachable(base_url)
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


def check_reachable(base_url: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise a :class:`UserError` when nothing accepts a connection at the URL's host:port."""
    from elitr_core.backends.openai_backend import public_url

    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"bad base URL {public_url(base_url)!r}: expected "
                        "http(s)://host:port/v1")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot reach the server at {public_url(base_url)} ({exc.strerror or exc}): start "
            "it (for example vLLM's server) or correct the base URL") from None
