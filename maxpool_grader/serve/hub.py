"""The pages of signing in with JupyterHub (``maxpool-grader serve --hub-login``): tornado's
handlers around serve/signin.py, which decides who a Hub user is here.

The service is registered as a Hub service, and a student signs in with their Hub account
through the Hub's OAuth, the ecosystem's way (``jupyterhub.services.auth.HubOAuth``, with
PKCE). Once the Hub has said who it is, the Hub's token is not kept: the browser holds the
service's own signed session cookie, as after a personal link (serve/web.py), and every
other page is the same. web.py imports this module only when the service signs in with the
Hub: jupyterhub is heavy, and the Hub's handlers are the bases of these.

This is the way for a hub where every student's server runs as one user (``jovyan``), where
the exchange cannot tell the students apart by the owner of their files.
"""

from __future__ import annotations

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated, UserNotAllowed
from markupsafe import Markup

from .handler import Handler
from .signin import hub_login_url


class _HubHandler(HubOAuthenticated, Handler):
    """A page of the sign-in (the Hub's handlers mixed in: its xsrf rules stay on these pages)."""

    def initialize(self, service, prefix: str):
        super().initialize(service, prefix)
        self.hub_auth = self.settings["hub_auth"]


class HubLogin(_HubHandler):
    """To the Hub's OAuth authorization, with the state and PKCE challenge HubOAuth keeps."""

    def get(self):
        self.redirect(hub_login_url(self.hub_auth, self, next_url=self.url("/hub/signed-in")))


class HubCallback(_HubHandler, HubOAuthCallbackHandler):
    """The Hub's own callback: checks the state, trades the code for a token, then on to
    HubSignedIn."""


class HubSignedIn(_HubHandler):
    """Who the Hub says this is: a student of the roster, an instructor, or nobody here
    (``SignIn.hub_user`` decides)."""

    async def get(self):
        model = await self.hub_auth.get_user(self, sync=False)
        if model is None:  # no Hub token came back (a cookie the browser refused, say): no loop of redirects
            return self.message("The sign-in did not finish", Markup(
                'JupyterHub did not say who you are. <a href="{}">Sign in again</a>; if it keeps happening, tell '
                "your instructor.").format(self.url("/hub/login")), status=403)
        self.hub_auth.clear_cookie(self)  # from here on, the service's own session cookie
        try:
            model = self.check_hub_user(model)  # the Hub's own rules (hub_users, hub_groups, ...)
        except UserNotAllowed:
            model = None
        kind, name = self.service.signin.hub_user(model)
        if kind == "refused":
            return self.message("Not allowed", "Your JupyterHub account may not use this service. Ask your "
                                               "instructor.", status=403)
        if kind == "instructor":
            self.sign_in_instructor()
            return self.redirect(self.url("/instructor"), status=303)
        if kind != "student":
            return self.message("Not a student of this course", Markup(
                "You are signed in to JupyterHub as <strong>{}</strong>, who is not on the roster of {}. Ask your "
                "instructor to add you.").format(name, self.service.assignment), status=403)
        self.sign_in_student(name)
        self.redirect(self.url("/"), status=303)


ROUTES = [(r"hub/login", HubLogin), (r"oauth_callback", HubCallback), (r"hub/signed-in", HubSignedIn)]
