"""One chat completion on the wire, for the ``openai`` backend: the client and concurrency
bound of one event loop (:class:`RequestSession`), its retries (``Retry-After`` respected), the
completion read from the answer, and running the async work from sync code.

What is asked, and the message a failure becomes, are the backend's
(:mod:`elitr_core.backends.openai_backend`); this module only sends and retries.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

import openai

from elitr_core.backends.base import Completion, DecodingConfig, Message
from elitr_core.errors import UserError

logger = logging.getLogger("elitr_core.backends.openai_backend")  # one logger for the backend

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRY_AFTER_CAP_S = 300.0  # a server asking for more than 5 minutes is treated as down
T = TypeVar("T")


class Asker(Protocol):
    """What a :class:`RequestSession` needs of the backend it sends for."""

    base_url: str
    timeout: float
    max_retries: int
    send_prompt_cache_key: bool
    _api_key: str

    def _params(self, messages: list[Message], decoding: DecodingConfig,
                cache_key: str | None) -> dict[str, Any]: ...

    def _backoff(self, attempt: int, error: BaseException) -> float: ...

    def _error(self, error: BaseException, attempts: int) -> UserError: ...


def retry_after_seconds(error: BaseException) -> float | None:
    """Seconds a 429/503 answer asks us to wait (``Retry-After[-ms]`` header), if any."""
    if not isinstance(error, openai.APIStatusError):
        return None
    headers = error.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:  # Retry-After may also be an HTTP date
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, moment.timestamp() - time.time())
    return None


class RequestSession:
    """One event loop's client and semaphore; closes the client on exit."""

    def __init__(self, backend: Asker, concurrency: int) -> None:
        self.backend = backend
        self.semaphore = asyncio.Semaphore(concurrency)
        # max_retries=0: the client must not retry behind our back (we count attempts).
        self.client = openai.AsyncOpenAI(
            api_key=backend._api_key,
            base_url=backend.base_url,
            timeout=backend.timeout,
            max_retries=0,
        )

    async def __aenter__(self) -> RequestSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.client.close()

    async def request(
        self, messages: list[Message], decoding: DecodingConfig, cache_key: str | None
    ) -> Completion:
        """One chat completion with retries; holds a concurrency slot throughout.

        The slot is kept during backoff so that a rate-limited server sees fewer requests.
        """
        backend = self.backend
        async with self.semaphore:
            attempt = 0
            while True:
                attempt += 1
                params = backend._params(messages, decoding, cache_key)
                try:
                    response = await self._create(params)
                except openai.APIStatusError as error:
                    if error.status_code not in RETRY_STATUSES:
                        raise backend._error(error, attempt) from error
                    failure: BaseException = error
                except openai.APIConnectionError as error:
                    failure = error
                else:
                    return _completion(response, attempt)
                if attempt > backend.max_retries:
                    raise backend._error(failure, attempt) from failure
                delay = backend._backoff(attempt, failure)
                logger.warning("attempt %d failed (%s); retry in %.2f s", attempt, failure, delay)
                await asyncio.sleep(delay)

    async def _create(self, params: dict[str, Any]) -> Any:
        """Send once; on a 400 to ``prompt_cache_key`` retry once without it, and remember."""
        try:
            return await self.client.chat.completions.create(**params)
        except openai.BadRequestError:
            if "prompt_cache_key" not in params:
                raise
            params = {k: v for k, v in params.items() if k != "prompt_cache_key"}
            response = await self.client.chat.completions.create(**params)
            if self.backend.send_prompt_cache_key:
                logger.warning("server rejects prompt_cache_key; no longer sending it")
                self.backend.send_prompt_cache_key = False
            return response


def _completion(response: Any, attempts: int) -> Completion:
    if not response.choices:
        raise UserError("the server answered without any choice: check the server's logs")
    choice = response.choices[0]
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    return Completion(
        text=choice.message.content or "",
        prompt_tokens=usage.prompt_tokens if usage is not None else None,
        completion_tokens=usage.completion_tokens if usage is not None else None,
        cached_tokens=getattr(details, "cached_tokens", None),
        finish_reason=choice.finish_reason,
        metadata={"attempts": attempts, "response_id": response.id, "model": response.model},
    )


async def run_all(coroutines: Sequence[Awaitable[None]]) -> None:
    """Await all; on the first failure cancel the others and raise that failure."""
    tasks = [asyncio.ensure_future(coroutine) for coroutine in coroutines]
    if not tasks:
        return
    await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    for task in tasks:
        if not task.done():
            task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    errors = [t.exception() for t in tasks if not t.cancelled() and t.exception() is not None]
    if errors:
        raise errors[0]  # type: ignore[misc]


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code, even when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    # A loop already runs here (Jupyter, an async caller): asyncio.run would refuse, so the
    # work gets its own loop in a worker thread; on_result callbacks then run in that thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, make()).result()
