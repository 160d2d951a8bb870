"""The ``openai`` backend: OpenAI or any OpenAI-compatible server (vLLM, SGLang, TGI).

Requests go through the official ``openai`` package's ``AsyncOpenAI`` client with bounded
concurrency (one ``asyncio.Semaphore``), our own retries (exponential backoff with jitter,
``Retry-After`` respected) and a per-meeting prompt-cache warm-up: every meeting (a group of
conversations sharing a ``cache_key``) first sends its first conversation with
``max_tokens=1``, all meetings together, so that the server's prefix cache holds each
transcript; then every question of every meeting fans out under the one concurrency bound.
The client (:mod:`~elitr_core.backends.openai_requests`, which imports ``openai``) is
imported when the first request goes, so reading this backend's options and checks (the
command line's help, the Runs page) loads no client.

Server notes
------------
- API key: ``api_key`` or the ``OPENAI_API_KEY`` environment variable. Local servers started
  without ``--api-key`` accept any key; we send ``"EMPTY"`` (vLLM's convention) when none is set.
- ``repetition_penalty`` is sent as ``extra_body={"repetition_penalty": x}`` only when it is not
  1.0: vLLM and SGLang accept it, the OpenAI API has no such parameter (we refuse early).
- ``prompt_cache_key`` (an OpenAI API routing hint) is sent to api.openai.com; to other servers
  only when ``send_prompt_cache_key=True``. A server that answers 400 to it gets the request again
  without the key, and the backend stops sending it for the rest of its life.
- A server may answer with a lone surrogate (the JSON escape ``"\\ud800"`` alone), which no
  UTF-8 request can carry back: a multi-turn conversation sends U+FFFD in its place in the
  next turns' history (the answer itself is returned as the server wrote it).
"""

from __future__ import annotations

import logging
import re
import socket
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from elitr_core import settings
from elitr_core.backends.base import (
    Backend,
    BackendOption,
    Conversation,
    DecodingConfig,
    Message,
    ResultCallback,
)
from elitr_core.errors import UserError

logger = logging.getLogger(__name__)

OPENAI_API_URL = "https://api.openai.com/v1"
LOCAL_API_KEY = "EMPTY"
#: a 4xx status not listed: the URL answered, but not as an OpenAI-compatible API does
#: (405 Method Not Allowed from a web page, 415 from another kind of API)
NOT_OPENAI_ADVICE = ("check the base URL (it ends with /v1) and that an OpenAI-compatible "
                     "server is there")
EMPTY_BASE_URL = ("the base URL is empty: give the server's address, for example "
                  "http://localhost:8000/v1 (or https://api.openai.com/v1 for OpenAI)")
_ADVICE = {
    400: "the request was refused: check the decoding settings and that the conversation fits "
    "the model's context window",
    422: "the request was refused: check the decoding settings and that the conversation fits "
    "the model's context window",
    401: "check the API key (OPENAI_API_KEY)",
    403: "check the API key (OPENAI_API_KEY)",
    429: "the server is rate-limiting us: lower the concurrency or retry later",
}
#: seconds the dashboard waits for the server's port to accept a connection
CONNECT_TIMEOUT_S = 3.0
_SURROGATE = re.compile("[\ud800-\udfff]")


def public_url(url: str) -> str:
    """``url`` without user, password, query or fragment (safe to store and print)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # IPv6 literal
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class OpenAIBackend(Backend):
    """Chat completions from an OpenAI-compatible server.

    Parameters
    ----------
    model : str
        Model name as the server knows it (``gpt-4o``, ``meta-llama/Llama-3.1-8B-Instruct``).
    base_url : str, optional
        Server URL ending in ``/v1``; default ``OPENAI_BASE_URL`` or the OpenAI API.
    api_key : str, optional
        Default: the variable ``api_key_env`` names, else ``OPENAI_API_KEY``; ``"EMPTY"`` for
        non-OpenAI servers when unset.
    api_key_env : str
        The environment variable holding the key.
    concurrency : int
        Most requests in flight at once.
    timeout : float
        Seconds one request may take (long transcripts on a busy server take a while).
    max_retries : int
        Retries after the first attempt on 429/5xx/connection errors.
    backoff_base, backoff_max : float
        Backoff before retry ``k`` is ``min(backoff_max, backoff_base * 2**(k-1))`` times a
        jitter in [0.5, 1]; a ``Retry-After`` header replaces it.
    send_prompt_cache_key : bool, optional
        Send ``prompt_cache_key``; default: only to api.openai.com.

    Examples
    --------
    >>> backend = OpenAIBackend("Qwen/Qwen2.5-7B-Instruct", base_url="http://localhost:8000/v1")
    >>> backend.describe()["base_url"]
    'http://localhost:8000/v1'
    """

    name = "openai"
    summary = "any OpenAI-compatible server (vLLM, SGLang, TGI, OpenAI)"
    options = (
        BackendOption("base_url", metavar="URL", label="Base URL",
                      placeholder="http://host:8000/v1",
                      help="server URL ending in /v1 (default $OPENAI_BASE_URL or OpenAI)"),
        BackendOption("api_key_env", default=settings.OPENAI_API_KEY, metavar="NAME",
                      help="environment variable holding the API key"),
        BackendOption("concurrency", int, 8, metavar="N", help="requests in flight at once"),
        BackendOption("max_retries", int, 6, metavar="N",
                      help="retries on 429/5xx/connection errors"),
        BackendOption("timeout", float, 600.0, metavar="S",
                      help="seconds one request may take"),
    )

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = settings.OPENAI_API_KEY,
        concurrency: int = 8,
        timeout: float = 600.0,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        send_prompt_cache_key: bool | None = None,
    ) -> None:
        if not model:
            raise UserError("the openai backend needs a model name (for example --model gpt-4o)")
        if concurrency < 1 or max_retries < 0 or timeout <= 0 or backoff_base < 0:
            raise UserError(
                "openai backend: concurrency must be >= 1, max_retries >= 0, timeout > 0 and "
                f"backoff_base >= 0 (got {concurrency}, {max_retries}, {timeout}, {backoff_base})"
            )
        if base_url is not None and not base_url.strip():
            raise UserError(EMPTY_BASE_URL)
        self.model = model
        self.base_url = (base_url or settings.value(settings.OPENAI_BASE_URL)
                         or OPENAI_API_URL).rstrip("/")
        try:
            parts = urlsplit(self.base_url)
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError as error:
            raise UserError(f"bad base URL {self.base_url!r}: {error}") from error
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(
                f"bad base URL {public_url(self.base_url)!r}: expected http(s)://host:port/v1"
            )
        self.is_openai_api = parts.hostname.endswith("openai.com")
        key = (api_key or (settings.value(api_key_env) if api_key_env else None)
               or settings.value(settings.OPENAI_API_KEY))
        if not key and self.is_openai_api:
            raise UserError(
                "no API key for the OpenAI API: set the OPENAI_API_KEY environment variable"
            )
        self._api_key = key or LOCAL_API_KEY
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.send_prompt_cache_key = (
            self.is_openai_api if send_prompt_cache_key is None else send_prompt_cache_key
        )

    @classmethod
    def from_options(cls, **options: Any) -> Backend:
        """Build from the command line's options; refuse a missing model name."""
        if not options.get("model"):
            raise UserError("the openai backend needs a model name (--model)")
        return super().from_options(**options)

    @classmethod
    def preflight(cls, options: Mapping[str, Any]) -> None:
        """The form's base URL (or ``OPENAI_BASE_URL``) is given and its server answers."""
        base_url = str(options.get("base_url") or "").strip() or settings.text(
            settings.OPENAI_BASE_URL)
        if not base_url:  # not OpenAI's address in its place: the form's field was left empty
            raise UserError(EMPTY_BASE_URL)
        check_reachable(base_url)

    # -- the protocol -------------------------------------------------------------------------
    def generate(self, conversations: Sequence[Conversation], decoding: DecodingConfig,
                 on_result: ResultCallback) -> None:
        """Every conversation in flight at once under the one ``concurrency`` bound.

        Where several conversations share a ``cache_key`` (one meeting's questions), the
        first one's first turn is sent alone with ``max_tokens=1`` (every meeting's warm-up at
        once) so that the server's prefix cache holds the transcript; as soon as it is
        answered, that meeting's conversations join the others. A conversation sends its turns
        one after another. Raises :class:`UserError` when the server cannot answer.
        """
        from elitr_core.backends.openai_requests import run_sync

        run_sync(lambda: self.agenerate(conversations, decoding, on_result))

    def describe(self) -> dict[str, Any]:
        """Backend, credential-free base URL, model, concurrency and client version."""
        import openai

        return {
            "backend": self.name,
            "base_url": public_url(self.base_url),
            "model": self.model,
            "concurrency": self.concurrency,
            "prompt_cache_key": self.send_prompt_cache_key,
            "openai_version": openai.__version__,
        }

    async def agenerate(self, conversations: Sequence[Conversation], decoding: DecodingConfig,
                        on_result: ResultCallback) -> None:
        """Async form of :meth:`generate` for callers that already run an event loop."""
        # asyncio comes with the client, not with the declarations: --help and the Runs page
        # read this module and need neither (~11 ms of the CLI's start)
        import asyncio

        from elitr_core.backends.openai_requests import RequestSession, run_all

        self._check_decoding(decoding)
        asking = [i for i, c in enumerate(conversations) if c.remaining()]
        sharing = Counter(conversations[i].cache_key for i in asking)
        warmed = {key: asyncio.Event() for key, n in sharing.items() if key and n > 1}
        leaders: dict[str, int] = {}  # the first conversation of a key sends its warm-up
        for index in asking:
            key = conversations[index].cache_key
            if key in warmed:
                leaders.setdefault(key, index)
        warm_up = replace(decoding, max_new_tokens=1)
        async with RequestSession(self, self.concurrency) as session:

            async def converse(index: int) -> None:
                conversation, answers = conversations[index], list[str]()
                key = conversation.cache_key
                if key is not None and key in warmed:
                    if leaders[key] == index:
                        first = conversation.prompt(conversation.remaining()[0])
                        await session.request(first, warm_up, key)
                        warmed[key].set()
                    await warmed[key].wait()
                for turn in conversation.remaining():
                    completion = await session.request(
                        conversation.prompt(turn, answers), decoding, key)
                    answers.append(completion.text)
                    on_result(index, turn, completion)

            await run_all([converse(index) for index in asking])

    # -- helpers ------------------------------------------------------------------------------
    def _check_decoding(self, decoding: DecodingConfig) -> None:
        if decoding.repetition_penalty != 1.0 and self.is_openai_api:
            raise UserError(
                "the OpenAI API has no repetition penalty: use repetition_penalty 1.0, or a "
                "vLLM/SGLang server that accepts it"
            )

    def _params(
        self, messages: list[Message], decoding: DecodingConfig, cache_key: str | None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [sendable(message) for message in messages],
            "max_tokens": decoding.max_new_tokens,
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
        }
        if decoding.seed is not None:
            params["seed"] = decoding.seed
        if decoding.repetition_penalty != 1.0:
            params["extra_body"] = {"repetition_penalty": decoding.repetition_penalty}
        if cache_key is not None and self.send_prompt_cache_key:
            params["prompt_cache_key"] = cache_key
        return params

    def _backoff(self, attempt: int, error: BaseException) -> float:
        import random  # with the client, like asyncio (agenerate)

        from elitr_core.backends.openai_requests import RETRY_AFTER_CAP_S, retry_after_seconds

        waited = retry_after_seconds(error)
        if waited is not None:
            return min(waited, RETRY_AFTER_CAP_S)
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return delay * random.uniform(0.5, 1.0)  # jitter: clients in step do not retry in step

    def _error(self, error: BaseException, attempts: int) -> UserError:
        """What the user sees when a request fails for good: what happened, what to do."""
        import openai

        url = public_url(self.base_url)
        tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
        if isinstance(error, openai.APITimeoutError):
            return UserError(
                f"the server at {url} did not answer within {self.timeout:g} s ({tries}): it "
                "may be overloaded; lower the concurrency or raise the timeout"
            )
        if isinstance(error, openai.APIConnectionError):
            return UserError(
                f"could not reach the server at {url}: is it running? ({tries}; start the "
                "server or correct the base URL)"
            )
        if not isinstance(error, openai.APIStatusError):
            return UserError(f"the request to {url} failed: {error}")
        status = error.status_code
        if status == 404:
            advice = f"check the model name {self.model!r} and that the base URL ends with /v1"
        elif status >= 500:
            advice = "the server is failing: check its logs, then resume the run"
        else:
            advice = _ADVICE.get(status, NOT_OPENAI_ADVICE)
        return UserError(
            f"the server at {url} answered HTTP {status} ({error.message}) after {tries}: {advice}"
        )


def sendable(message: Message) -> Message:
    """``message`` with U+FFFD for each lone surrogate (the client encodes UTF-8, which has no
    surrogates: the request would fail before leaving)."""
    content = message.get("content", "")
    if _SURROGATE.search(content) is None:
        return message
    return {**message, "content": _SURROGATE.sub("\ufffd", content)}


def check_reachable(base_url: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise a :class:`UserError` when nothing accepts a connection at the URL's host:port."""
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
