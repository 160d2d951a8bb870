"""Imported text in Streamlit elements that render Markdown: the one escaping helper.

Most Streamlit elements read their text as Markdown: ``st.markdown``, ``st.caption``,
``st.info``/``warning``/``error``/``success``, titles and headers, ``st.toast``, ``st.metric``,
``st.table`` cells, the labels and ``help`` of every widget, tab and expander labels, and the
options of radios, pills and segmented controls. A name or text that came from a file (a model
name, meeting id, study name, question, reference, response, annotator name, evaluator slug, or
an error message quoting one) would then be rendered: ``![x](http://host/beacon.png)`` makes
every browser that shows it fetch the image. Every such element is given either a constant, or
text that went through this module: :func:`plain` escapes it, :func:`md` fills a constant
Markdown template with escaped values, :func:`code_span` makes an inline code span.
``tests/pages/test_plain_text.py`` scans ``pages/`` and ``app.py`` and fails on any other
non-constant text given to a Markdown-rendering element; the browser test
``tests/browser/test_plain_text_browser.py`` imports image, link and HTML payloads and checks
that no page makes the browser fetch them.

Elements that draw text as it is (``st.text``, ``st.code``, ``st.dataframe`` cells and headers,
``st.selectbox``/``st.multiselect`` options) need none of this.
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation character, which then stands for
# itself. Escaped are the characters that open an inline construct anywhere in a line (links and
# images need "[", raw HTML and autolinks "<", code "`", emphasis "*" and "_", Streamlit's math
# "$" and directives ":name[...]", strikethrough "~", table cells "|", entities "&"), those that
# open a block at the start of the text (headings, lists, quotes). Other punctuation ("." ","
# "-" "(" ...) cannot start anything mid-line and is left as it is, so messages read the same in
# the page source. GFM turns bare "http://..." and "www...." into links after escapes are
# resolved, so no escape stops it: such an address is shown as a code span instead, where
# nothing is a link and a copied address is the address (an invisible word joiner inside it, as
# before, broke the copy).
_INLINE = re.compile(r"([\\`*_\[\]<>$~|&])")
_BLOCK_START = re.compile(r"^(\s*)([#+=-]|\d+(?=[.)]))")
#: a bare address, without the punctuation that ends a sentence or closes a bracket after it
_BARE_LINK = re.compile(r"(?i)(?:(?<![\w.+-])[a-z][a-z0-9+.-]*://|(?<![\w.])www\.)"
                        r"[^\s<>`]*[^\s<>`.,;:!?'\")\]]")

class Markdown(str):
    """Text that is safe to render as Markdown: a constant template filled by :func:`md`,
    escaped text from :func:`plain`, or a code span from :func:`code_span`."""


def plain(value: object) -> Markdown:
    """``value`` as text that Markdown shows character for character (nothing is fetched or
    formatted). Already safe :class:`Markdown` is returned unchanged."""
    if isinstance(value, Markdown):
        return value
    # a line break inside a label or paragraph would otherwise start a new Markdown block
    text = " ".join(str(value).splitlines())
    pieces = _BARE_LINK.split(text)  # the text around each bare address
    links = [code_span(link) for link in _BARE_LINK.findall(text)]
    text = "".join(_INLINE.sub(r"\\\1", piece) + (links[i] if i < len(links) else "")
                   for i, piece in enumerate(pieces))
    start = _BLOCK_START.match(text)
    if start:  # "# x", "- x", "1. x" at the very start would be a heading or a list
        head = start.group(2)
        text = (start.group(1) + (f"\\{head}" if not head[0].isdigit()
                                  else head + "\\") + text[start.end():])
    return Markdown(text)


def md(template: str, *values: object, **named: object) -> Markdown:
    """A constant Markdown ``template`` (``str.format`` syntax) filled with escaped values.

    Put values outside code spans (a backslash escape is shown as is inside one): use
    :func:`code_span` for a value that should look like code.
    """
    return Markdown(template.format(*(plain(v) for v in values),
                                    **{k: plain(v) for k, v in named.items()}))


def code_span(value: object) -> Markdown:
    """``value`` as an inline code span (``\\`...\\```), shown verbatim: the fence is longer
    than any run of backticks inside, so the text cannot close it."""
    text = " ".join(str(value).splitlines())
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return Markdown(f"{fence}{pad}{text}{pad}{fence}")


def message(value: object) -> Markdown:
    """A message from the core (an error, a refusal) as the page shows it: its `quoted`
    commands as code spans, not literal backticks; the rest escaped (:func:`plain`)."""
    parts = str(value).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: nothing is quoted
        return plain(value)
    return Markdown("".join(code_span(part) if i % 2 else plain(part)
                            for i, part in enumerate(parts) if part))
