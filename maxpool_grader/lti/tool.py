"""LTI 1.3: the course's registration with its LMS (``c.Lti``), the tool's own key, and what
the LMS's administrator is given (``maxpool-grader lti-config``).

The LMS (the platform) and this tool trust each other through two key pairs: the platform
signs every launch with its key, which the tool reads from the platform's key set
(``key_set_url``); the tool signs its requests for an access token (Names and Roles, grades)
with its own key, which the platform reads from the tool's key set (``/lti/jwks``, or the
JWK pasted into the developer key). The tool's private key is made on first use, readable by
its owner only, under ``.maxpool-grader/``.

Every check of a launch's token is pylti1p3's (lti/launch.py holds its tornado adapter);
this module gives it the registration as its ``ToolConfDict``, and says which of a launch's
roles count here (``context_roles``, ``teaching``, ``learning``): only the roles the user has in
the launch's course (the membership roles), never their institution or system roles.

Every request LTI makes of the platform (its key set, an access token, the members, a line
item, a score) goes through ``timed_session()``: none waits longer than ``NETWORK_TIMEOUT`` to
connect, nor that long for the platform's answer to begin or go on (pylti1p3's own requests
have no timeout). ``ServiceConnector`` is pylti1p3's client of the platform's services with the
next page's address as the platform wrote it: pylti1p3 2.0.0 lowercases the whole Link header,
so a case-sensitive address (Canvas's page tokens, a path with capitals) was lost on page two.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import requests
from pylti1p3.registration import Registration
from pylti1p3.service_connector import ServiceConnector as _LibraryConnector
from pylti1p3.tool_config import ToolConfDict
from traitlets import Bool, List, Unicode
from traitlets.config import Configurable

from ..course.directory import read_course_config
from ..names import ASSIGNMENT

KEY_FILE = ".maxpool-grader/lti/tool-key.pem"
SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly")
LOGIN, LAUNCH, JWKS = "lti/login", "lti/launch", "lti/jwks"
NETWORK_TIMEOUT = 10.0  # seconds: to connect to the platform, and the most it may then stay silent
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"  # the context roles' vocabulary (LTI 1.3, A.2.3)
TEACHING_ROLES = frozenset({"Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator"})
PRINCIPAL = {name.lower(): name for name in ("Administrator", "ContentDeveloper", "Instructor", "Learner", "Mentor",
                                             "Manager", "Member", "Officer")}  # LTI 1.3's principal context roles


class Lti(Configurable):
    """The course's LTI 1.3 registration: what the LMS's administrator gives the instructor
    once the tool is registered there (docs/lti.md)."""

    enabled = Bool(False, help=(
        "Whether 'maxpool-grader serve' takes LTI 1.3 launches from the LMS (students start from the "
        "assignment in Canvas or Moodle) and posts scores back to the LMS's gradebook.")).tag(config=True, unit="")
    issuer = Unicode("", help=(
        "The platform's issuer, as its launches name it: e.g. 'https://canvas.instructure.com' or the Moodle "
        "site's address.")).tag(config=True, unit="")
    client_id = Unicode("", help=(
        "The client id the LMS gave this tool (Canvas: the developer key's id; Moodle: the tool's client "
        "ID).")).tag(config=True, unit="")
    deployment_ids = List(Unicode(), default_value=[], help=(
        "The deployment ids launches may come from (Canvas: the installed app's deployment id; Moodle: the "
        "tool's deployment ID). A launch from any other is refused.")).tag(config=True, unit="")
    auth_login_url = Unicode("", help=(
        "The platform's OIDC authorization address, where a launch's login goes (Canvas: "
        "https://sso.canvaslms.com/api/lti/authorize_redirect; Moodle: <site>/mod/lti/auth.php).")).tag(
        config=True, unit="")
    auth_token_url = Unicode("", help=(
        "The platform's OAuth 2 token address, for Names and Roles and the grades (Canvas: "
        "https://sso.canvaslms.com/login/oauth2/token; Moodle: <site>/mod/lti/token.php).")).tag(config=True, unit="")
    key_set_url = Unicode("", help=(
        "The platform's public key set (JWKS), which every launch's signature is checked against (Canvas: "
        "https://sso.canvaslms.com/api/lti/security/jwks; Moodle: <site>/mod/lti/certs.php).")).tag(
        config=True, unit="")
    private_key = Unicode(KEY_FILE, help=(
        "The tool's private key (PEM), relative to the course: made on first use, readable by its owner "
        "only. Its public half is what 'maxpool-grader lti-config' prints and /lti/jwks serves.")).tag(
        config=True, unit="")
    members_url = Unicode("", help=(
        "The Names and Roles address of the course ('context_memberships_url'); empty: the one the last "
        "accepted launch of the course named. 'maxpool-grader roster --from-lti' reads the members there.")).tag(
        config=True, unit="")
    lineitems_url = Unicode("", help=(
        "The course's line items address (AGS 'lineitems'); empty: the one the last accepted launch of the "
        "course named. The assignment's line item is found there, or made.")).tag(config=True, unit="")


def context_roles(roles) -> set[str]:
    """The principal context roles among ``roles`` (a launch's roles claim, or a member's roles
    in Names and Roles): ``membership#Instructor`` is "Instructor"; a sub-role counts as its
    principal role (``membership/Instructor#TeachingAssistant`` is "Instructor", whatever the
    case of its principal, and ``membership/Learner#Instructor``, a learner, is "Learner"); the
    short forms LTI allows for
    context roles ("Instructor", "Learner") are read as they are, and so is
    ``membership#TeachingAssistant``, which some platforms send. Institution roles
    (``institution/person#Instructor``, which Canvas gives anyone who teaches anywhere in the
    account) and system roles are never context roles."""
    found = set()
    for role in roles if isinstance(roles, (list, tuple)) else []:
        if not isinstance(role, str):
            continue
        if role.startswith(MEMBERSHIP + "#"):
            found.add(role[len(MEMBERSHIP) + 1:])
        elif role.startswith(MEMBERSHIP + "/"):
            principal = role[len(MEMBERSHIP) + 1:].partition("#")[0]
            found.add(PRINCIPAL.get(principal.lower(), principal))
        elif role.isalpha():  # a short form: no vocabulary, no sub-role
            found.add(role)
    return found


def teaching(claims: dict) -> bool:
    """Whether a launch's user teaches this course: an Instructor (a teaching assistant too), a
    TeachingAssistant, a ContentDeveloper or an Administrator of the course's membership."""
    return bool(context_roles(claims.get(ROLES_CLAIM)) & TEACHING_ROLES)


def learning(roles) -> bool:
    """Whether a member's roles make them a learner of this course (its membership's Learner)."""
    return "Learner" in context_roles(roles)


class TimedSession(requests.Session):
    """A requests session whose every request has a timeout: NETWORK_TIMEOUT unless given."""

    def request(self, *args, **kwargs):
        kwargs["timeout"] = kwargs.get("timeout") or NETWORK_TIMEOUT
        return super().request(*args, **kwargs)


class ServiceConnector(_LibraryConnector):
    """pylti1p3's, with each answer's next page read from its Link header as written (a fix
    whatever pylti1p3's version: with one that keeps the case, the two readings agree)."""

    def make_service_request(self, *args, **kwargs):
        answer = super().make_service_request(*args, **kwargs)
        if answer["next_page_url"]:
            link = next((value for name, value in answer["headers"].items() if name.lower() == "link"), "")
            found = re.search(r'<([^>]*)>;\s*rel="next"', str(link).replace("\n", " "), re.IGNORECASE)
            if found and found.group(1).lower() == answer["next_page_url"]:
                answer["next_page_url"] = found.group(1)
        return answer


def timed_session() -> TimedSession:
    """The session every LTI request of the platform is made with (pylti1p3's ``requests_session``)."""
    session = TimedSession()
    session.headers["User-Agent"] = "maxpool-grader (LTI 1.3 tool)"
    return session


def load_lti(course: Path) -> Lti:
    return Lti(config=read_course_config(course))


class LtiSetupError(ValueError):
    """The registration is incomplete: what is missing, for the instructor."""


def missing(settings: Lti) -> list[str]:
    """The settings a launch needs that are not set, by their c.Lti names."""
    return [f"c.Lti.{name}" for name in ("issuer", "client_id", "deployment_ids", "auth_login_url",
                                         "auth_token_url", "key_set_url") if not getattr(settings, name)]


def key_path(course: Path, settings: Lti) -> Path:
    path = Path(settings.private_key)
    return path if path.is_absolute() else course / path


def private_key(course: Path, settings: Lti) -> str:
    """The tool's private key (PEM), made now if there is none: RSA 2048, owner-only."""
    path = key_path(course, settings)
    if path.is_file():
        return path.read_text()
    # cryptography is heavy and only LTI needs a key: imported here
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made meanwhile by another command
        return path.read_text()
    with os.fdopen(fd, "w") as handle:
        handle.write(pem)
    return pem


def public_key(private_pem: str) -> str:
    # cryptography is heavy and only LTI needs a key: imported here
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def public_jwks(course: Path, settings: Lti) -> dict:
    """The tool's public key set, as /lti/jwks serves it (its key id is the key's thumbprint)."""
    return {"keys": [dict(Registration.get_jwk(public_key(private_key(course, settings))))]}


def tool_conf(course: Path, settings: Lti) -> ToolConfDict:
    """pylti1p3's view of the registration: one issuer, one client, its deployments, the
    platform's key set by address, and the tool's key pair."""
    if problems := missing(settings):
        raise LtiSetupError(f"LTI is not set up: {', '.join(problems)} not set in nbgrader_config.py "
                            "(docs/lti.md#settings)")
    conf = ToolConfDict({settings.issuer: {
        "default": True, "client_id": settings.client_id, "auth_login_url": settings.auth_login_url,
        "auth_token_url": settings.auth_token_url, "auth_audience": None, "key_set_url": settings.key_set_url,
        "key_set": None, "deployment_ids": list(settings.deployment_ids)}})
    pem = private_key(course, settings)
    conf.set_private_key(settings.issuer, pem, client_id=settings.client_id)
    conf.set_public_key(settings.issuer, public_key(pem), client_id=settings.client_id)
    return conf


def urls(base_url: str) -> dict[str, str]:
    base = base_url.rstrip("/") + "/"
    return {"login": base + LOGIN, "launch": base + LAUNCH, "jwks": base + JWKS, "domain": base.split("/")[2]}


def registration(course: Path, settings: Lti, base_url: str, title: str = f"{ASSIGNMENT} grader") -> dict:
    """What ``lti-config`` prints: the tool's key set, Canvas's developer key JSON (LTI key,
    "Paste JSON"), and the fields of Moodle's "Configure a tool manually"."""
    where, jwks = urls(base_url), public_jwks(course, settings)
    placement = {"placement": "assignment_selection", "message_type": "LtiResourceLinkRequest",
                 "target_link_uri": where["launch"], "text": title, "windowTarget": "_blank"}  # serve/lti_frame.py
    canvas = {"title": title, "description": "Feedback within seconds on the max_pool_backward assignment; "
                                             "scores go back to the gradebook.",
              "oidc_initiation_url": where["login"], "target_link_uri": where["launch"],
              "public_jwk_url": where["jwks"], "public_jwk": jwks["keys"][0], "scopes": list(SCOPES),
              "extensions": [{"platform": "canvas.instructure.com", "domain": where["domain"],
                              "privacy_level": "public", "settings": {"placements": [
                                  placement, {**placement, "placement": "link_selection"}]}}],
              "custom_fields": {}}
    moodle = {"Tool name": title, "Tool URL": where["launch"], "LTI version": "LTI 1.3",
              "Public key type": "Keyset URL", "Public keyset": where["jwks"], "Initiate login URL": where["login"],
              "Redirection URI(s)": where["launch"], "Default launch container": "New window",
              "IMS LTI Assignment and Grade Services": "Use this service for grade sync and column management",
              "IMS LTI Names and Role Provisioning": "Use this service to retrieve members' information as per "
                                                    "privacy settings",
              "Share launcher's name with tool": "Always", "Share launcher's email with tool": "Always"}
    return {"jwks": jwks, "canvas": canvas, "moodle": moodle}


def registration_text(course: Path, settings: Lti, base_url: str) -> str:
    return json.dumps(registration(course, settings, base_url), indent=2)
