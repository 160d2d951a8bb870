"""The one backend protocol shared by generation and judging.

Modelled on inspect_ai's ``ModelAPI`` (one abstract ``generate``, everything else a default),
with one difference: ``generate`` takes a whole batch of conversations, which the backend may
schedule as it likes (the ``hf`` engine decodes a wave of rows together and holds each
meeting's transcript once; the ``openai`` client keeps every meeting in flight), and hands each
answer to one callback as it arrives. Which conversations to ask, in what order, and what to do
with an answer (store it, count it, report progress) is the caller's: ``elitr_core.passes``.
"""

from __future__ import annotations

import abc
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from elitr_core.errors import UserError

Message = dict[str, str]
"""A chat message: ``{"role": "system"|"user"|"assistant", "content": "..."}``."""

ResultCallback = Callable[[int, int, "Completion"], None]
"""Called as ``on_result(conversation_index, turn_index, completion)`` as soon as one turn is
answered, so a pass can store every answer as it arrives (resumability)."""


@dataclass(frozen=True)
class DecodingConfig:
    """Decoding settings of the protocol (docs/protocol.md §2 and §3).

    ``temperature == 0`` means greedy decoding; otherwise nucleus sampling with ``top_p``.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    max_new_tokens: int = 512
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Conversation:
    """One conversation to carry on: ``history``, then each of ``turns`` answered in order.

    A single-turn question is a conversation of one turn (:meth:`single`); a multi-turn
    meeting is one conversation of all its questions. ``answered`` holds the answers already
    stored for the first turns (a resumed run): they join the history and are not asked again.
    ``cache_key`` names a long prefix shared with other conversations (one meeting's
    transcript): a backend may compute it once (KV cache, server prompt cache).
    ``inserted`` holds fixed messages said before a turn (after the answer to the turn before
    it), never asked: an interleaved conversation with answered fillers gives its later
    transcripts so (``generation/interleave.py``).
    """

    history: Sequence[Message]
    turns: Sequence[str]
    answered: Sequence[str] = ()
    cache_key: str | None = None
    inserted: Mapping[int, Sequence[Message]] = field(default_factory=dict)

    @classmethod
    def single(cls, messages: Sequence[Message], cache_key: str | None = None) -> Conversation:
        """The conversation whose one turn is the last message of ``messages`` (a user turn)."""
        if not messages or messages[-1].get("role") != "user":
            raise UserError("every conversation must end with a user message (none found)")
        return cls(list(messages[:-1]), [messages[-1]["content"]], cache_key=cache_key)

    def remaining(self) -> range:
        """The turns still to answer."""
        if len(self.answered) > len(self.turns):
            raise UserError(f"{len(self.answered)} previous answers for {len(self.turns)} user "
                            "turns: a resumed conversation cannot have more answers than questions")
        return range(len(self.answered), len(self.turns))

    def messages(self) -> list[Message]:
        """``history`` followed by the turns already answered, as messages."""
        messages = list(self.history)
        for index, (turn, answer) in enumerate(zip(self.turns, self.answered, strict=False)):
            messages += [*self.inserted.get(index, ()), {"role": "user", "content": turn},
                         {"role": "assistant", "content": answer}]
        return messages

    def prompt(self, turn: int, answers: Sequence[str] = ()) -> list[Message]:
        """The messages that ask ``turn``: the history, every earlier turn with its answer
        (``answered``, then ``answers`` given during this call), and the turn itself."""
        earlier = [*self.answered, *answers]
        done = Conversation(self.history, self.turns[:turn], earlier[:turn],
                            inserted=self.inserted)
        return [*done.messages(), *self.inserted.get(turn, ()),
                {"role": "user", "content": self.turns[turn]}]


@dataclass
class Completion:
    """One model answer with the usage the backend could report."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BackendOption:
    """One option a backend declares (:attr:`Backend.options`): the command line's flag, the
    Runs page's field and the keyword its constructor takes are all built from it.

    ``name`` is the keyword (``model_path``) and, dashed, the flag (``--model-path``) unless
    ``flag`` says otherwise (a ``bool`` whose default is true is switched off by a flag such
    as ``--no-chat-template``). ``default`` is the constructor's own (the command line leaves
    an option unset, so the backend's default applies; ``help`` says it). ``label``, when
    given, puts the option in the Runs page's form under that name. ``shapes_prompt`` marks an
    option that shapes the prompt built in this process, which a generation run records:
    offered to ``generate`` only. ``shapes_answers`` marks one that changes what the model
    answers (the model's weights, their revision and dtype, its context): a run's identity
    holds the value of every option that shapes its prompt or answers
    (:meth:`Backend.answer_options`), so a resume with another value is refused; options of
    how answers are fetched (concurrency, retries, the address of the same model) stay out.
    An option the chosen backend does not declare is refused (``cli/backend_flags.py``).
    """

    name: str
    type: type = str
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    flag: str | None = None
    label: str | None = None
    placeholder: str | None = None
    shapes_prompt: bool = False
    shapes_answers: bool = False

    @property
    def in_identity(self) -> bool:
        """Whether a generation run's identity holds this option's value."""
        return self.shapes_prompt or self.shapes_answers

    @property
    def cli_flag(self) -> str:
        """The command line's flag: ``flag``, else ``--`` and the dashed name."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def help_text(self) -> str:
        """``help``, with the default said when it is a value (not ``None`` or a switch)."""
        if self.default is None or self.type is bool:
            return self.help
        shown = f"{self.default:g}" if isinstance(self.default, float) else self.default
        return f"{self.help} (default {shown})"

    def argv(self, value: Any) -> list[str]:
        """The command-line arguments that give ``value`` (none for an empty value or the
        default, which the backend applies itself)."""
        if value is None or value == "" or value == self.default:
            return []
        if self.type is bool:
            return [self.cli_flag]
        return [self.cli_flag, str(value)]


def load(target: str) -> type[Backend]:
    """The class named by ``"module:Class"``, importing its module now."""
    module, _, name = target.partition(":")
    found: type[Backend] = getattr(importlib.import_module(module), name)
    return found


def construct(cls: type[Backend], options: Mapping[str, Any]) -> Backend:
    """``cls`` built from the options its constructor takes (the others are another
    backend's: the command line hands every backend the same options)."""
    taken = inspect.signature(cls).parameters
    return cls(**{key: value for key, value in options.items() if key in taken})


class Backend(abc.ABC):
    """Turns conversations into completions; subclasses implement :meth:`generate`.

    A new backend is one module with a subclass and one line in
    :data:`elitr_core.backends.registry.BACKENDS`. The class declares itself: its
    :attr:`name`, a :attr:`summary` for ``--backend``'s help, its :attr:`options` and its
    :meth:`preflight`; the command line, the Runs page and the dashboard's checks are built
    from those, so its module must import nothing heavy at import time (torch and the like
    are imported when the backend is built, as ``hf`` does with its engine).
    """

    #: Short backend name stored in the run config (``hf``, ``openai``, ``fake``).
    name: str = "backend"
    #: What it is, in a few words (the help of ``--backend``).
    summary: str = ""
    #: The options it takes beyond the command's model name (see :class:`BackendOption`).
    options: tuple[BackendOption, ...] = ()
    #: Answers without a model (demos and tests): the Runs form lists it last, never first.
    demo: bool = False
    #: Loads the model into this machine's memory: the Runs form lists the backends that ask
    #: a server first.
    loads_model: bool = False
    #: What :meth:`count_tokens` counts (stored with an interleaved run's memory span).
    token_unit: str = "whitespace words"
    #: The declared options it was built with, by name (set by ``registry.get_backend``;
    #: empty for a backend built directly, whose options are then the declared defaults).
    given: Mapping[str, Any] = {}

    def answer_options(self) -> dict[str, Any]:
        """Option name -> value of every declared option that shapes the prompt or the
        answers (:attr:`BackendOption.in_identity`): what a generation run's identity holds
        about its backend. A backend adds an option here by declaring it so, nothing else."""
        return {option.name: _plain(self.option_value(option)) for option in type(self).options
                if option.in_identity}

    def option_value(self, option: BackendOption) -> Any:
        """The value ``option`` has in this backend: as given, else its declared default; a
        backend that resolves a default itself (a dtype chosen by the device) says so here."""
        return self.given.get(option.name, option.default)

    def context_tokens(self) -> int | None:
        """The model's context in :attr:`token_unit`, when the backend knows it (an
        interleaved run's span must fit in it); None when it does not."""
        return None

    def count_tokens(self, text: str) -> int:
        """The length of ``text`` in :attr:`token_unit` (an interleaved run's memory span):
        whitespace-separated words unless the backend holds its model's tokenizer."""
        return len(text.split())

    @abc.abstractmethod
    def generate(self, conversations: Sequence[Conversation], decoding: DecodingConfig,
                 on_result: ResultCallback) -> None:
        """Answer every remaining turn of every conversation, in any order across
        conversations and in turn order within one; call ``on_result(conversation, turn,
        completion)`` as each answer arrives, before asking that conversation's next turn."""

    @classmethod
    def from_options(cls, **options: Any) -> Backend:
        """Build from the command line's options: those the constructor takes; the CLI hands
        every backend the same options and each takes its own."""
        return construct(cls, options)

    @classmethod  # noqa: B027 - optional hook, most backends have nothing to check
    def preflight(cls, options: Mapping[str, Any]) -> None:
        """Raise a :class:`UserError` when a job on this backend could not start with
        ``options`` (the Runs form's values by option name), saying why and what to fill
        in: the dashboard checks it before starting the job. Nothing to check by default."""

    @classmethod
    def field(cls, option: str) -> str:
        """The Runs form's field of ``option``, quoted as a message names it:
        ``"Model path (hf)"``."""
        label = next(o.label or o.name for o in cls.options if o.name == option)
        return f'"{label} ({cls.name})"'

    def describe(self) -> dict[str, Any]:
        """What to store in a run config about this backend (model, revision, versions)."""
        return {"backend": self.name}

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release resources (GPU memory, HTTP clients)."""


def _plain(value: Any) -> Any:
    """``value`` as JSON stores it (a path as its text)."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def turn_by_turn(conversations: Sequence[Conversation], on_result: ResultCallback,
                 complete: Callable[[list[Message], str | None], Completion]) -> None:
    """Run each conversation's turns one at a time through ``complete(messages, cache_key)``:
    :meth:`Backend.generate` for a backend that answers one message list at a time."""
    for index, conversation in enumerate(conversations):
        answers: list[str] = []
        for turn in conversation.remaining():
            completion = complete(conversation.prompt(turn, answers), conversation.cache_key)
            answers.append(completion.text)
            on_result(index, turn, completion)


def collect(backend: Backend, conversations: Sequence[Conversation],
            decoding: DecodingConfig) -> list[list[Completion]]:
    """Every conversation's completions of its remaining turns, in order (tests, benchmarks)."""
    results: list[list[Completion]] = [[] for _ in conversations]
    backend.generate(conversations, decoding, lambda index, _, c: results[index].append(c))
    return results


def complete(backend: Backend, prompts: Sequence[list[Message]], decoding: DecodingConfig, *,
             cache_key: str | None = None) -> list[Completion]:
    """One completion per single-turn prompt, in order (tests, benchmarks)."""
    conversations = [Conversation.single(prompt, cache_key) for prompt in prompts]
    return [answers[0] for answers in collect(backend, conversations, decoding)]
