"""The backends' flags of ``generate`` and ``judge``, built from what each backend declares
(:attr:`~elitr_core.backends.base.Backend.options`): ``--backend`` with every name of the
registry, and each declared option once however many backends take it. A backend gets every
value given and takes its own (:meth:`~elitr_core.backends.base.Backend.from_options`); an option
the chosen backend does not declare is refused (:func:`refuse_foreign_options`).

Reading the declarations imports each backend's light class, never torch or a client library.
"""

from __future__ import annotations

import argparse
from typing import Any

from elitr_core.backends.base import Backend, BackendOption
from elitr_core.backends.registry import BACKENDS, backend_class
from elitr_core.errors import UserError


def declared(*, generation: bool = True) -> dict[str, tuple[BackendOption, list[str]]]:
    """Option name -> (its declaration, the backends declaring it), in the registry's order;
    without ``generation``, the options that shape a generation run's prompt are left out.

    Raises
    ------
    ValueError
        Two backends declare one option differently (flag, type or choices): one flag
        cannot be both.
    """
    found: dict[str, tuple[BackendOption, list[str]]] = {}
    for name in BACKENDS:
        for option in backend_class(name).options:
            if option.shapes_prompt and not generation:
                continue
            first, names = found.setdefault(option.name, (option, []))
            shape = (option.cli_flag, option.type, option.choices)
            if shape != (first.cli_flag, first.type, first.choices):
                raise ValueError(f"backends {names[0]} and {name} declare {option.name} "
                                 "differently: one flag cannot take both")
            names.append(name)
    return found


def _help(option: BackendOption, names: list[str]) -> str:
    """``hf: ...``, ``hf, x: ...`` when the backends say the same, else each its own."""
    texts = {name: next(o for o in backend_class(name).options if o.name == option.name)
             .help_text for name in names}
    if len(set(texts.values())) == 1:
        return f"{', '.join(names)}: {texts[names[0]]}"
    return "; ".join(f"{name}: {text}" for name, text in texts.items())


def add_backend_flags(parser: argparse.ArgumentParser, *, generation: bool) -> None:
    """``--backend`` and every declared option's flag (left unset: the backend's default)."""
    parser.add_argument("--backend", choices=BACKENDS, required=True, help="; ".join(
        f"{name}: {backend_class(name).summary}" for name in BACKENDS))
    for option, names in declared(generation=generation).values():
        kwargs: dict[str, Any] = {"dest": option.name, "default": None,
                                  "help": _help(option, names)}
        if option.type is bool:
            kwargs.update(action="store_const", const=not option.default)
        else:
            kwargs.update(type=option.type, metavar=option.metavar)
            if option.choices:
                kwargs["choices"] = option.choices
        parser.add_argument(option.cli_flag, **kwargs)


def backend_values(args: argparse.Namespace) -> dict[str, Any]:
    """The declared options given on the command line, by name."""
    return {name: getattr(args, name) for name in declared()
            if getattr(args, name, None) is not None}


def refuse_foreign_options(args: argparse.Namespace) -> None:
    """Refuse every declared option given with a backend that does not take it, rather than
    drop it: ``generate --backend fake --model-path DIR`` would otherwise run without the
    model it names, and a run would record a setup it never had."""
    chosen: type[Backend] = backend_class(args.backend)
    own = {option.name for option in chosen.options}
    given = {name: (option, names) for name, (option, names) in declared().items()
             if name not in own and getattr(args, name, None) is not None}
    if given:
        takers = sorted({backend for _, names in given.values() for backend in names})
        them = "them" if len(given) > 1 else "it"
        raise UserError(f"{', '.join(option.cli_flag for option, _ in given.values())}: the "
                        f"{args.backend} backend does not take {them} (use --backend "
                        f"{' or '.join(takers)}, or leave {them} out)")
