"""Text from outside (a link's values, file and column names, error messages that quote them)
shown as itself in Streamlit's markdown: never a link, an image, a colour or an icon.

``st.info``, ``st.error``, ``st.caption``, ``st.markdown`` and ``st.subheader`` all render
markdown, and a shared link is written by whoever sends it: ``?name=**[Sign in again](https://…)**``
must not put a live link into the app's own info box. :func:`escape` backslash-escapes every
ASCII punctuation character (CommonMark renders ``\\x`` as ``x`` for each of them), which also
breaks bare-URL autolinks (``https\\://``), Streamlit's ``:red[…]`` and ``:material/…:``
directives and ``$…$`` maths, and turns line breaks into spaces (no new block can start). A
leaf module: every layer of ``dashboard/common`` may import it.
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def escape(text: object) -> str:
    r"""``text`` as literal markdown (its characters shown as they are).

    >>> escape("**[Sign in](https://x.example/a_b)**")
    '\\*\\*\\[Sign in\\]\\(https\\:\\/\\/x\\.example\\/a\\_b\\)\\*\\*'
    >>> escape("ships.csv\n# title")
    'ships\\.csv \\# title'
    """
    flat = " ".join(str(text).splitlines())
    return _PUNCTUATION.sub(r"\\\1", flat)
