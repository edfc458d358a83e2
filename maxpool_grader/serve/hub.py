"""Signing in with JupyterHub (``maxpool-grader serve --hub-login``).

The service is registered as a Hub service, and a student signs in with their Hub account
through the Hub's OAuth, the ecosystem's way (``jupyterhub.services.auth.HubOAuth``, with
PKCE). The Hub user name is the student id: the Hub's identity decides who the student is,
never a name inside the upload, and only a student of the roster gets the page
(``c.Serve.hub_instructors`` get the instructor's live view instead). Once the Hub has said
who it is, the Hub's token is not kept: the browser holds the service's own signed session
cookie, as after a personal link (serve/web.py), and every other page is the same.

This is the way for a hub where every student's server runs as one user (``jovyan``), where
the exchange cannot tell the students apart by the owner of their files.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated, UserNotAllowed
from markupsafe import Markup
from tornado.httputil import url_concat

from .handler import INSTRUCTOR_COOKIE, STUDENT_COOKIE, Handler, page_prefix

HUB_ENVIRONMENT = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_CLIENT_ID")


class HubSetupError(Exception):
    """The service cannot sign students in with the Hub: what is missing, and the fix."""


def hub_address() -> tuple[str, int, str]:
    """The address, port and public base URL the Hub gave this service (a managed service with
    a ``url``): JUPYTERHUB_SERVICE_URL, JUPYTERHUB_SERVICE_PREFIX, JUPYTERHUB_PUBLIC_URL."""
    listen = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "")
    if not (listen.hostname and listen.port and prefix):
        raise HubSetupError("--hub-login without --port and --base-url needs the address the Hub gives a managed "
                            "service: give the service a \"url\" in c.JupyterHub.services (e.g. "
                            "\"http://127.0.0.1:10101\"), or pass --port and --base-url")
    public = urlparse(os.environ.get("JUPYTERHUB_PUBLIC_URL", ""))
    host = f"{public.scheme}://{public.netloc}" if public.netloc else ""
    return listen.hostname, listen.port, host + prefix


def hub_auth(base_url: str) -> HubOAuth:
    """The Hub's OAuth client of this service (its pages under ``base_url``), from the
    environment the Hub gives it."""
    prefix = page_prefix(base_url)
    missing = [name for name in HUB_ENVIRONMENT if not os.environ.get(name)]
    if missing:
        raise HubSetupError(f"--hub-login needs the environment JupyterHub gives a service ({', '.join(missing)} "
                            "missing): register the service in jupyterhub_config.py (docs/serve.md#jupyterhub)")
    auth = HubOAuth(base_url=prefix, cache_max_age=60)
    callback = urlparse(auth.oauth_redirect_uri).path
    if callback != prefix + "oauth_callback":
        raise HubSetupError(f"the Hub sends students back to {callback}, but the service's pages are under {prefix}: "
                            f"set --base-url to the service's address on the Hub ({callback[:-len('oauth_callback')]})")
    return auth


class _HubHandler(HubOAuthenticated, Handler):
    """A page of the sign-in (the Hub's handlers mixed in: its xsrf rules stay on these pages)."""

    def initialize(self, service, prefix: str):
        super().initialize(service, prefix)
        self.hub_auth = self.settings["hub_auth"]


class HubLogin(_HubHandler):
    """To the Hub's OAuth authorization, with the state and PKCE challenge HubOAuth keeps."""

    def get(self):
        auth = self.hub_auth
        verifier, challenge, method = auth.generate_pkce_code_challenge()
        state = auth.set_state_cookie(self, next_url=self.url("/hub/signed-in"), code_verifier=verifier)
        self.redirect(url_concat(auth.login_url, {"state": state, "code_challenge": challenge,
                                                  "code_challenge_method": method}))


class HubCallback(_HubHandler, HubOAuthCallbackHandler):
    """The Hub's own callback: checks the state, trades the code for a token, then on to
    HubSignedIn."""


class HubSignedIn(_HubHandler):
    """Who the Hub says this is: a student of the roster, an instructor, or nobody here."""

    async def get(self):
        model = await self.hub_auth.get_user(self, sync=False)
        if model is None:  # no Hub token came back (a cookie the browser refused, say): no loop of redirects
            return self.message("The sign-in did not finish", Markup(
                'JupyterHub did not say who you are. <a href="{}">Sign in again</a>; if it keeps happening, tell '
                "your instructor.").format(self.url("/hub/login")), status=403)
        self.hub_auth.clear_cookie(self)  # from here on, the service's own session cookie
        try:
            model = self.check_hub_user(model)
        except UserNotAllowed:
            model = None
        if model is None or model.get("kind", "user") != "user":
            return self.message("Not allowed", "Your JupyterHub account may not use this service. Ask your "
                                               "instructor.", status=403)
        name = model["name"]
        if name in self.service.settings.hub_instructors:
            self.login(INSTRUCTOR_COOKIE, "yes")
            return self.redirect(self.url("/instructor"), status=303)
        if not self.service.is_student(name):
            return self.message("Not a student of this course", Markup(
                "You are signed in to JupyterHub as <strong>{}</strong>, who is not on the roster of {}. Ask your "
                "instructor to add you.").format(name, self.service.assignment), status=403)
        self.clear_cookie(INSTRUCTOR_COOKIE, path=self.prefix)
        self.login(STUDENT_COOKIE, name)
        self.redirect(self.url("/"), status=303)


ROUTES = [(r"hub/login", HubLogin), (r"oauth_callback", HubCallback), (r"hub/signed-in", HubSignedIn)]
