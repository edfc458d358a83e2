"""A launch the LMS starts inside its own frame: the tool opens in a new tab instead.

Canvas shows an External Tool assignment in an iframe unless the assignment says "Load This
Tool In A New Tab" (``lti-config``'s JSON asks for a new tab: ``windowTarget: _blank``).
In a frame, every page of the service refuses to show (``frame-ancestors 'none'``, so that no
site can put a student's page under its own), and a browser that keeps a third party's
cookies apart would lose the login's state cookie anyway. So a login the browser says is
made in a frame (``Sec-Fetch-Dest: iframe``, which Chromium, Firefox and Safari send) gets
this one page, which any site may frame: a sentence and a link that opens the same login, with
the LMS's own parameters, in a new tab, where the launch goes on as a top-level one. The page
holds nothing but those parameters, which the framing page gave, and the link starts nothing
without the student's click and the LMS's own sign-in.
"""

from __future__ import annotations

from urllib.parse import urlencode

from .pages import PAGE_POLICY

FRAMED = ("iframe", "frame")
LOGIN_PARAMETERS = ("iss", "login_hint", "target_link_uri", "lti_message_hint", "lti_deployment_id", "client_id")
FRAMEABLE_POLICY = PAGE_POLICY.replace("frame-ancestors 'none'", "frame-ancestors *")
SAYS = ("This grader opens in a tab of its own: your browser would not keep you signed in to it inside the "
        "LMS's page. Your instructor can make the assignment open it in a new tab by itself.")


def framed(handler) -> bool:
    """Whether the browser says this request loads a frame's document."""
    return handler.request.headers.get("Sec-Fetch-Dest", "") in FRAMED


def new_tab_page(handler, login_url: str) -> None:
    """The page a framed login gets: the same login, with its parameters, behind a link that
    opens a new tab (the keyboard reaches it; it says it opens a tab)."""
    found = {name: handler.get_argument(name, "") for name in LOGIN_PARAMETERS}
    link = login_url + "?" + urlencode({name: value for name, value in found.items() if value})
    handler.clear_header("X-Frame-Options")
    handler.set_header("Content-Security-Policy", FRAMEABLE_POLICY)
    handler.page("message.html.j2", title="Open the grader in a new tab", paragraphs=[SAYS],
                 link=(link, "Open the grader"), new_tab=True)
