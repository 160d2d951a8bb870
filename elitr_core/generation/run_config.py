"""What a generation run's ``config`` holds, typed and versioned.

``Run.config`` is stored as JSON; :class:`GenerationConfig` is its shape (pydantic, so a
stored config is read and checked by one call and written back by another) with a
``schema_version``. Its identity (:class:`RunIdentity`) is everything that shapes the run's
answers: the backend's name and the value of each option it declares as shaping the prompt
or the answers (``BackendOption.in_identity``), the decoding, the prompt options and the
prompt texts' hash, the context policy, the task and the interleaving. A resumed run must
have the same identity; :meth:`RunIdentity.differences` names each field that differs (a
backend option by its own name).

Schema 1 is the config as stored before the backend's options were recorded: no
``schema_version`` and no ``backend_options``. It still reads; its backend options are taken
as the declared defaults' when the backend declares none that shape answers (nothing could
differ), and as not recorded (``None``, so no resume can match them) otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from elitr_core.data.credentials import without_credentials
from elitr_core.errors import UserError

#: The ``schema_version`` written today; 1 is a config without one.
SCHEMA_VERSION = 2


class RunIdentity(BaseModel):
    """The settings that shape every answer of a generation run."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    backend_name: str
    #: option name -> value, every declared option that shapes the prompt or the answers;
    #: ``None``: not recorded (a schema 1 config of a backend that declares such options)
    backend_options: dict[str, Any] | None = None
    decoding: dict[str, Any]
    chat_template: bool = True
    system_prompt: bool = False
    qa_markers: bool = False
    length_instruction: bool = False
    truncation: str | None = None
    prompt_hash: str | None = None
    context: dict[str, Any] | None = None
    task: dict[str, Any] | None = None
    interleave: dict[str, Any] | None = None

    def differences(self, new: RunIdentity) -> list[str]:
        """One ``field stored -> new`` phrase for each field that differs; a backend option
        is named by itself (``backend option dtype 'bfloat16' -> 'float32'``)."""
        found = []
        for name in RunIdentity.model_fields:
            old, now = getattr(self, name), getattr(new, name)
            if name == "backend_options" and old is not None and now is not None:
                found += [f"backend option {key} {old.get(key)!r} -> {now.get(key)!r}"
                          for key in sorted(set(old) | set(now)) if old.get(key) != now.get(key)]
            elif old != now:
                shown = "not recorded" if name == "backend_options" and old is None else repr(old)
                found.append(f"{name} {shown} -> {now!r}")
        return found


class GenerationConfig(RunIdentity):
    """A generation run's whole config: its identity and its life (what it asked, where,
    with which libraries, its failures). Keys this version does not know are kept."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    kind: Literal["generation"] = "generation"
    model: str | None = None
    #: what the backend says about itself (``Backend.describe``: resolved model, versions)
    backend: dict[str, Any] | None = None
    language: str | None = None
    meetings: list[str] = []
    questions: int = 0
    versions: dict[str, Any] = {}
    process: dict[str, Any] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    failures: list[dict[str, Any]] = []
    altered_answers: int = 0
    interleave_plan: dict[str, Any] | None = None

    @classmethod
    def read(cls, stored: dict[str, Any]) -> GenerationConfig:
        """The config as stored by any schema version up to :data:`SCHEMA_VERSION`.

        Raises
        ------
        UserError
            A config written by a newer version, or one that is not a generation run's.
        """
        version = int(stored.get("schema_version") or 1)
        if version > SCHEMA_VERSION:
            raise UserError(f"this run's config has schema {version}, newer than this "
                            f"version reads ({SCHEMA_VERSION}): update the dashboard")
        if stored.get("kind") != "generation":
            raise UserError("this run was not made by generate (it was imported)")
        values = dict(stored)
        if version == 1:
            values["schema_version"] = 1
            values["backend_options"] = _schema_1_options(str(stored.get("backend_name")))
        return cls.model_validate(values)

    def identity(self) -> RunIdentity:
        """Only the settings that shape the answers."""
        return RunIdentity.model_validate(self.model_dump(include=set(RunIdentity.model_fields)))

    def stored(self) -> dict[str, Any]:
        """The JSON to store (``schema_version`` now the current one; no credential-like key
        or value: ``data/credentials.py``)."""
        stored: dict[str, Any] = without_credentials(
            {**self.model_dump(mode="json"), "schema_version": SCHEMA_VERSION})
        return stored


def _schema_1_options(backend: str) -> dict[str, Any] | None:
    """A schema 1 run's backend options: ``{}`` when its backend declares no option that
    shapes answers (so none can differ), else ``None`` (not recorded)."""
    from elitr_core.backends.registry import BACKENDS, backend_class

    if backend not in BACKENDS:
        return None
    return {} if not any(o.in_identity for o in backend_class(backend).options) else None
