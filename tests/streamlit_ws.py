"""A small client of Streamlit's websocket protocol (``/_stcore/stream``), built from the
streamlit package's own protobufs (``BackMsg``, ``ForwardMsg``, ``ClientState``,
``WidgetStates``), for tests and benchmarks that play many participants without a browser.

It does what the browser's frontend does for a plain page: send a ``rerun_script`` with the
query string, the page and every rendered widget's value, read the ``ForwardMsg`` stream
(deltas, query-string changes) until ``script_finished``, and keep the widget states between
runs. A button press is a ``trigger_value`` in the next rerun, as in the browser.

Example::

    async with await Session.open(url, query=f"token={token}") as s:
        await s.click("annotate-tour-done")
        await s.click("annotate-pick-7")
        page = await s.click("annotate-submit")
        assert "Item 2 of 12" in page.text()

Hand-written because Streamlit ships no such client (its ``AppTest`` runs the script in the
test's own process, not over the server's protocol); ``websockets`` is Streamlit's own
dependency, so this adds none.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

# widget kind -> the WidgetState field that carries its value
_VALUE_FIELDS = {
    "checkbox": "bool_value",
    "text_input": "string_value",
    "text_area": "string_value",
}
_TEXT_FIELDS = ("body", "text", "label", "title")
_DONE = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
         ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}


@dataclass(frozen=True)
class Element:
    """One element of a finished run: where it is, what kind, its protobuf."""

    path: tuple[int, ...]
    kind: str  # the Element or Block oneof: "markdown", "button", "text_input", "dialog", ...
    proto: Any  # the kind's message (e.g. streamlit.proto.Button_pb2.Button)
    fragment_id: str = ""  # the st.fragment that drew it, "" for the page's own

    @property
    def id(self) -> str:
        """The widget id ('' for a non-widget)."""
        return str(getattr(self.proto, "id", ""))

    @property
    def key(self) -> str | None:
        """The user key the page gave the widget (the id's last part), None when none."""
        if not self.id:
            return None
        user_key = self.id.split("-", maxsplit=2)[-1]
        return None if user_key == "None" else user_key

    @property
    def text(self) -> str:
        """The element's text: a markdown/text body, an alert's body, a widget's label, a
        dialog's title."""
        for name in _TEXT_FIELDS:
            value = getattr(self.proto, name, None)
            if isinstance(value, str) and value:
                return value
        return ""

    @property
    def disabled(self) -> bool:
        """Whether the widget is disabled."""
        return bool(getattr(self.proto, "disabled", False))


@dataclass
class Page:
    """What one script run (ending with ``script_finished``) drew."""

    elements: list[Element] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    query_string: str = ""
    seconds: float = 0.0  # rerun request sent -> script_finished received

    def text(self) -> str:
        """Every element's text, one per line, in page order."""
        return "\n".join(e.text for e in self.elements if e.text)

    def widget(self, key: str) -> Element:
        """The widget with this user key, else the one widget keyed ``<key>-at-<position>``
        (the annotate page keys an item's widgets with its queue position); KeyError naming
        the keys there are when absent."""
        for element in self.elements:
            if element.key == key:
                return element
        of_item = [e for e in self.elements if (e.key or "").startswith(f"{key}-at-")]
        if len(of_item) == 1:
            return of_item[0]
        raise KeyError(f"no widget with key {key!r}; keys: {self.keys()}")

    def keys(self) -> list[str]:
        """The user keys of the page's widgets."""
        return [e.key for e in self.elements if e.key]

    def button(self, label: str) -> Element:
        """The button whose label contains ``label``."""
        for element in self.elements:
            if element.kind == "button" and label in element.text:
                return element
        raise KeyError(f"no button labelled {label!r}")


def _element(msg: ForwardMsg) -> Element:
    """The Element of a new_element or add_block delta."""
    delta = msg.delta
    proto = delta.new_element if delta.HasField("new_element") else delta.add_block
    name = proto.WhichOneof("type") or ""
    return Element(tuple(msg.metadata.delta_path), name, getattr(proto, name, None),
                   delta.fragment_id)


class Session:
    """One browser tab's Streamlit session over a websocket (use ``await Session.open``)."""

    def __init__(self, socket: ClientConnection, url: str, query: str, page: str) -> None:
        self._socket = socket
        self._url = url
        self.query_string = query
        self.page_name = page
        self.page_script_hash = ""
        self.session_id = ""
        self._values: dict[str, WidgetState] = {}
        self._early: list[ForwardMsg] = []  # read by settle() ahead of the run they start
        self.page = Page()

    @classmethod
    async def open(cls, base_url: str, *, query: str = "", page: str = "",
                   cookies: Mapping[str, str] | None = None, origin: str | None = None,
                   headers: Mapping[str, str] | None = None, session_id: str = "",
                   source: str | None = None, address: tuple[str, int] | None = None,
                   tls: ssl.SSLContext | None = None, timeout: float = 120) -> Session:
        """Connect to ``base_url`` (http://host:port[/base]) and run the page once.

        ``origin`` defaults to the base URL's own (what a browser sends); ``session_id``
        asks the server to resume that session (the browser's reconnect); ``source`` is the
        local address to connect from (a participant's own address: 127.0.0.2, ...);
        ``address`` (host, port) is where to connect whatever name ``base_url`` has (a name a
        DNS-rebinding page made resolve to this machine); ``tls`` the context a ``https``
        URL is checked with (a test's self-signed certificate)."""
        parts = urlsplit(base_url)
        ws_url = f"{'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}" \
                 f"{parts.path.rstrip('/')}/_stcore/stream"
        extra = dict(headers or {})
        if cookies:
            extra["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        protocols = ["streamlit", "xsrf", session_id] if session_id else ["streamlit"]
        socket = await connect(ws_url, subprotocols=protocols,  # type: ignore[arg-type]
                               origin=origin or f"{parts.scheme}://{parts.netloc}",  # type: ignore[arg-type]
                               additional_headers=extra, max_size=None, open_timeout=timeout,
                               local_addr=(source, 0) if source else None,
                               **({"host": address[0], "port": address[1]} if address else {}),
                               **({"ssl": tls} if tls else {}))
        session = cls(socket, base_url, query, page)
        await session.rerun(timeout=timeout)
        return session

    @property
    def response_headers(self) -> Mapping[str, str]:
        """The headers of the server's answer to the WebSocket handshake."""
        response = self._socket.response
        return dict(response.headers) if response is not None else {}

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the websocket (the server ends the session)."""
        await self._socket.close()

    async def send(self, msg: BackMsg) -> None:
        """Send any BackMsg as it is (a ``clear_cache``, say) and return at once."""
        await self._socket.send(msg.SerializeToString())

    async def click(self, key: str, *, timeout: float = 120) -> Page:
        """Press the button with this key and wait for the rerun it causes (the fragment's
        own rerun when the button is in an ``st.fragment``, as in the browser)."""
        element = self.page.widget(key)
        state = WidgetState(id=element.id, trigger_value=True)
        return await self.rerun(triggers=[state], fragment=element.fragment_id,
                                timeout=timeout)

    async def set_value(self, key: str, value: str | bool, *, timeout: float = 120) -> Page:
        """Change a text input or checkbox (as typing/ticking then leaving it) and rerun."""
        element = self.page.widget(key)
        state = WidgetState(id=element.id)
        setattr(state, _VALUE_FIELDS[element.kind], value)
        self._values[element.id] = state
        return await self.rerun(timeout=timeout)

    async def press(self, key: str, page: Page | None = None) -> None:
        """Press the button ``key`` of ``page`` (default: the last page read) and return at
        once: what a browser sends when a key is pressed before the previous press's rerun
        has reached it (the widget is the one on screen then). :meth:`settle` reads what
        follows."""
        element = (page or self.page).widget(key)
        await self._send([WidgetState(id=element.id, trigger_value=True)],
                         element.fragment_id)

    async def settle(self, quiet: float = 0.3, timeout: float = 120,
                     until: Callable[[Page], bool] | None = None) -> Page:
        """Read runs until one has finished and no further run starts within ``quiet``
        seconds (after :meth:`press`: the server may interrupt, merge or queue reruns, whole
        or of a fragment); each run's elements replace those at the same place.

        ``until``: the state the presses lead to (e.g. the next item with its scale). On a
        loaded machine a queued rerun can start more than ``quiet`` seconds after the last
        one; with ``until`` the quiet page is returned only in that state, and further runs
        are read for it until ``timeout`` (then the page is returned as it is, for the
        caller's assertion to name it)."""
        deadline = time.monotonic() + timeout
        while True:
            self.page = await asyncio.wait_for(self._read_run("", merge=True), timeout)
            self._keep_values()
            while True:  # a message that is not a run's start (a status) is skipped
                try:
                    wait = quiet if until is None or until(self.page) else max(
                        0.0, deadline - time.monotonic())
                    raw = await asyncio.wait_for(self._socket.recv(), max(wait, quiet))
                except TimeoutError:
                    return self.page
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                if msg.WhichOneof("type") in {"new_session", "delta"}:
                    self._early.append(msg)
                    break

    async def rerun(self, triggers: list[WidgetState] | None = None, *, fragment: str = "",
                    timeout: float = 120) -> Page:
        """Send a rerun with the widget states (plus ``triggers``) of the whole page or of
        one ``fragment``; return the finished run."""
        started = time.monotonic()
        await self._send(triggers, fragment)
        self.page = await asyncio.wait_for(self._read_run(fragment), timeout)
        self.page.seconds = time.monotonic() - started
        self._keep_values()
        return self.page

    async def _send(self, triggers: list[WidgetState] | None, fragment: str) -> None:
        """Send one rerun request (of the page or a fragment) with every kept widget state
        plus ``triggers``."""
        msg = BackMsg()
        state = msg.rerun_script
        state.fragment_id = fragment
        state.query_string = self.query_string
        state.page_script_hash = self.page_script_hash
        state.page_name = self.page_name
        state.context_info.timezone = "UTC"
        state.context_info.locale = "en-US"
        state.context_info.url = f"{self._url.rstrip('/')}/{self.page_name}" + \
            (f"?{self.query_string}" if self.query_string else "")
        ids = {t.id for t in triggers or []}
        state.widget_states.widgets.extend(
            [v for k, v in self._values.items() if k not in ids] + list(triggers or []))
        await self._socket.send(msg.SerializeToString())

    async def _read_run(self, fragment: str, *, merge: bool = False) -> Page:
        """Read ForwardMsgs until a run finishes; the page is that run's elements (a fragment's
        run redraws its own and keeps the rest of the page; ``merge``: every run's elements
        replace those at their place, the rest is kept)."""
        kept = {e.path: e for e in self.page.elements} if fragment or merge else {}
        drawn: dict[tuple[int, ...], Element] = dict(kept)
        page = Page(query_string=self.query_string)
        started = fresh = False
        while True:
            if self._early:
                msg = self._early.pop(0)
            else:
                msg = ForwardMsg()
                msg.ParseFromString(await self._socket.recv())
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                # a fragment's run starts on the page it redraws part of; a run after it is
                # the whole page's (the fragment's st.rerun), drawn anew, or another
                # fragment's run (a press queued meanwhile), which only replaces its own
                # elements, as in the browser: its first element says which
                drawn = drawn if merge or started else dict(kept)
                fresh = started and not merge
                started = True
                self.page_script_hash = msg.new_session.page_script_hash
                self.session_id = msg.new_session.initialize.session_id or self.session_id
            elif kind == "delta" and msg.delta.WhichOneof("type") in ("new_element", "add_block"):
                element = _element(msg)
                if fresh and not element.fragment_id:
                    drawn = {}  # the whole page's run
                fresh = False
                drawn[element.path] = element
            elif kind == "page_info_changed":
                self.query_string = page.query_string = msg.page_info_changed.query_string
            elif kind == "navigation":
                self.page_script_hash = msg.navigation.page_script_hash
            elif kind == "script_finished" and msg.script_finished in _DONE:
                break
        page.elements = [drawn[path] for path in sorted(drawn)]
        page.exceptions = [e.proto.message for e in page.elements if e.kind == "exception"]
        return page

    def _keep_values(self) -> None:
        """As the frontend does: keep the states of the widgets just drawn, drop the rest; a
        value the server set (``set_value``) replaces the one held."""
        drawn = {e.id: e for e in self.page.elements if e.kind in _VALUE_FIELDS}
        self._values = {k: v for k, v in self._values.items() if k in drawn}
        for wid, element in drawn.items():
            if wid in self._values and not element.proto.set_value:
                continue
            state = WidgetState(id=wid)
            value = element.proto.value if element.proto.set_value else element.proto.default
            setattr(state, _VALUE_FIELDS[element.kind], value)
            self._values[wid] = state
