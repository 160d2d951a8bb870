"""Backends by name: one table, each module imported only when its backend is built.

``get_backend("hf", ...)`` is the only path that imports torch and transformers, so the CLI's
help, the dashboard and an ``openai`` run start without the GPU stack. Like inspect_ai's
provider registry (a name mapped to a function that imports its ``ModelAPI`` class when
called), but a plain table: the backends are ours, so nothing needs to register from outside.
"""

from __future__ import annotations

from typing import Any

from elitr_core.backends.base import Backend, load
from elitr_core.errors import UserError

#: Name -> ``"module:Class"``. A new backend is a module with a :class:`Backend` subclass and
#: one line here.
BACKENDS: dict[str, str] = {
    "hf": "elitr_core.backends.hf:HFBackend",
    "openai": "elitr_core.backends.openai_backend:OpenAIBackend",
    "fake": "elitr_core.backends.fake:FakeBackend",
}
BACKEND_NAMES: tuple[str, ...] = tuple(BACKENDS)


def backend_class(name: str) -> type[Backend]:
    """The class of backend ``name`` (importing its module now).

    Raises
    ------
    UserError
        Unknown name.
    """
    if name not in BACKENDS:
        raise UserError(f"unknown backend {name!r}; use one of {', '.join(BACKENDS)}")
    return load(BACKENDS[name])


def get_backend(name: str, **options: Any) -> Backend:
    """Build a backend by name.

    Parameters
    ----------
    name : str
        A key of :data:`BACKENDS`: ``hf`` (transformers in-process: ``model_path`` or
        ``model``, a local directory or a hub name), ``openai`` (an OpenAI-compatible server:
        ``model``, ``base_url``, ``api_key``, ``concurrency`` ...) or ``fake`` (deterministic
        answers for demos and tests).
    **options
        Options of the command line; ``None`` values are dropped so that the backend's own
        defaults apply, and each backend takes the ones it knows
        (:meth:`~elitr_core.backends.base.Backend.from_options`).

    Returns
    -------
    Backend
        The backend, ready to generate.

    Raises
    ------
    UserError
        Unknown name, or the backend refuses its options (no model path, bad base URL).

    Examples
    --------
    >>> get_backend("fake").name
    'fake'
    """
    given = {key: value for key, value in options.items() if value is not None}
    cls = backend_class(name)
    backend = cls.from_options(**given)
    # what a run's identity reads (Backend.answer_options): the declared options given
    backend.given = {o.name: given[o.name] for o in cls.options if o.name in given}
    return backend
