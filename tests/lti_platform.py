"""An LTI 1.3 platform (the LMS side, what Canvas or Moodle would be) on loopback, for tests of a tool.

``Platform`` runs a real HTTP server (stdlib ``ThreadingHTTPServer``) in a thread on 127.0.0.1 and a
free port. A test points its tool at it (``Platform(tool_login_url=..., ...)`` or
``platform.register(the_tools_registration_json)``), opens ``platform.launch_url(sub)`` in a browser
(or drives the auto-posting forms with an HTTP client), and asserts on what the platform recorded:
``platform.requests``, ``platform.launches``, ``platform.scores``, ``platform.gradebook()``.

Use::

    with Platform(tool_login_url=..., tool_launch_url=..., tool_public_jwk=jwk) as platform:
        # or: with Platform() as platform: platform.register(tool_registration_json)
        platform.add_member("student-1", "Alan Turing")            # NRPS; roles="learner" or "instructor"
        browser.goto(platform.launch_url("student-1"))              # the whole OIDC launch, by auto-posting forms
        browser.goto(platform.launch_url("student-1", tamper="expired"))   # the tool must refuse it
        platform.fail_next(2, status=503)                           # the next 2 token/NRPS/AGS calls fail
        assert platform.gradebook()["student-1"]["scoreGiven"] == 15

Attributes: ``issuer``, ``client_id``, ``deployment_id``, ``jwks_url`` (``jwks_read_at``: when it was
last read), ``auth_login_url``,
``auth_token_url``, ``nrps_url``, ``lineitems_url``, ``context_id``, ``resource_link_id``, ``kid``;
records: ``requests`` (``Hit(method, path, status)``), ``launches`` (each id_token sent, its claims and
tamper), ``members``, ``lineitems``, ``scores``. Methods: ``register``, ``launch_url``, ``add_member``,
``remove_member``, ``gradebook``, ``rotate_keys``, ``fail_next``, ``stall_jwks``, ``down``, ``up``, ``close``.

Built on the PyPI library ``lti1p3platform`` 0.1.8, which does:

- the id_token: the launch claims (``MessageLaunch.set_user_data``, ``set_resource_link_claim``,
  ``set_launch_context_claim``, ``set_ags``, ``set_nrps``), their signing with the platform's key and
  its ``kid`` (``Registration.platform_encode_and_sign``), and the JWKS (``get_jwks``);
- the OIDC login initiation parameters (``OIDCLogin.prepare_preflight_url``) and the first checks of
  the tool's authentication request (``validate_preflight_response``: nonce, state, redirect_uri present,
  client_id);
- the client-credentials grant (``get_access_token``: the required fields, the grant type, the client
  assertion's RS256 signature and expiry against the tool's registered key or key-set URL, the scopes),
  and the bearer-token check of the services (``validate_token`` through ``authenticate``);
- the NRPS and AGS request handling (``NamesRoleProvisioningService.handle_get_members``,
  ``AssignmentsGradesService.handle_*``) over storage written here.

Written here, because the library lacks it (the minimum):

- the HTTP adapter (its own are for Django and FastAPI) and the pages: the auto-submitting forms,
  with a ``<noscript>`` button, ``lang``, ``<title>`` and ``<main>`` (they pass axe-core);
- in the authentication request: ``redirect_uri`` must be registered, ``login_hint`` must be the
  launch's user, ``lti_message_hint`` a launch this platform started, ``scope=openid``,
  ``response_type=id_token``, ``response_mode=form_post``;
- in the token request: the assertion's ``iss`` and ``sub`` must be the client_id, its ``aud`` the token
  URL, its ``jti`` never seen before (the library checks none of these); the tool's key set is fetched
  again once when a ``kid`` is unknown (the library caches it for ever); only the scopes the
  registration asked for are granted;
- a scope per operation (the library's ``authenticate`` accepts any AGS scope for every AGS call): a
  score needs ``score``, a line item change ``lineitem``, reading line items ``lineitem`` or
  ``lineitem.readonly``, results ``result.readonly``;
- access tokens issued before ``rotate_keys()`` stay valid until they expire (the library checks them
  against the current key only), and a bad token answers 401 (the library lets PyJWT's error through);
- the score's validation (the library has a ``TODO``), the Link header of NRPS and line item paging
  (the library puts ``next`` in the body, and its ``rel=next`` lacks the quotes pylti1p3 looks for), the
  line item container as a JSON array, as the AGS spec says;
- the attacks (``launch_url(..., tamper=...)``: ``TAMPERS``, which stock pylti1p3 refuses, and
  ``STRICT_TAMPERS``, which a tool must add checks for), ``rotate_keys``, ``fail_next``, ``down``/``up`` and the
  registration JSON's validation (``register``).

Choices a tool's test may meet: a user who is launched becomes a member (``add_member``) if they were not
one (of this course: a launch from another course, ``launch_url(..., context_id=...)``, enrols no one); a
score for a user who is not a member is refused (422, as Canvas does); a score older than the
newest one on record (by its ``timestamp``) is answered 200 and ignored by ``gradebook()``, as the AGS spec
allows, and kept in ``platform.scores`` with ``"applied": False`` (with ``platform.timestamps =
"later only"``, one not later than it is answered 409, as Moodle's rule has it, and kept with
``"refused": 409``); ``scoreGiven`` above ``scoreMaximum`` is
accepted (extra credit, as the spec allows) unless ``platform.allow_extra_credit = False``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import html
import itertools
import json
import secrets
import threading
import time
import typing as t
import urllib.parse
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform import exceptions as lti_exceptions
from lti1p3platform.constants import LTI_1P3_ACCESS_TOKEN_SCOPES
from lti1p3platform.exceptions import LineItemNotFoundException, LtiException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest
from lti1p3platform.response import Response
from lti1p3platform.score import UPDATE_SCORE_STATUSCODE, ActivityProgress, GradeProgress, UpdateScoreStatus
from lti1p3platform.service_connector import (
    AssignmentsGradesService,
    NamesRoleProvisioningService,
    authenticate,
)

ROLES = {
    "learner": "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
    "student": "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
    "instructor": "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
    "teachingassistant": "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
    "contentdeveloper": "http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper",
    "administrator": "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
}
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCORE_MEDIA_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_MEDIA_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
TAMPERS = ("wrong_issuer", "wrong_audience", "unknown_deployment", "expired", "alg_none",
           "hs256_with_public_key", "unknown_kid", "wrong_state", "replay", "forged_instructor",
           "bad_message_type", "bad_version")
# signed by the platform's own key, and each what LTI 1.3 says a tool refuses for a resource link (no exp),
# a clock ahead of the tool's, or another message the tool may not offer; stock pylti1p3 accepts all but
# iat_future (which it words as a bad signature)
STRICT_TAMPERS = ("no_exp", "iat_future", "deep_linking", "submission_review")


class Hit(t.NamedTuple):
    """One request the platform answered: ``("POST", "/token", 200)``; ``path`` without the query."""
    method: str
    path: str
    status: int


def _new_key() -> tuple[str, str]:
    """A fresh RSA key pair as (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned_parts(header: dict, payload: dict) -> str:
    return _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(payload).encode())


def _role_uris(roles: t.Any) -> list[str]:
    """"learner", "instructor", a full role URI, or a list of them, as a list of full role URIs."""
    if isinstance(roles, str):
        roles = [roles]
    out = []
    for role in roles:
        if role.startswith("http"):
            out.append(role)
        elif role.lower() in ROLES:
            out.append(ROLES[role.lower()])
        else:
            raise ValueError(f"unknown role {role!r}: use one of {sorted(ROLES)} or a full role URI")
    return out


def _check_url(value: t.Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"registration: {field!r} is missing or not a string")
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"registration: {field!r} must be an absolute http(s) URL, not {value!r}")
    return value


def _check_jwk(jwk: t.Any) -> dict:
    if not isinstance(jwk, dict):
        raise ValueError("registration: 'public_jwk' must be a JWK object (a dict)")
    if jwk.get("kty") != "RSA":
        raise ValueError(f"registration: 'public_jwk.kty' must be 'RSA', not {jwk.get('kty')!r}")
    for field in ("n", "e", "kid"):
        if not isinstance(jwk.get(field), str) or not jwk.get(field):
            raise ValueError(f"registration: 'public_jwk.{field}' is missing")
    if jwk.get("alg", "RS256") != "RS256":
        raise ValueError(f"registration: 'public_jwk.alg' must be 'RS256', not {jwk.get('alg')!r}")
    if "d" in jwk or "p" in jwk:
        raise ValueError("registration: 'public_jwk' holds a private key: give the public part only")
    try:
        from jwcrypto.jwk import JWK
        JWK(**jwk)
    except Exception as exc:  # noqa: BLE001 - any failure of the key's import is the key's fault
        raise ValueError(f"registration: 'public_jwk' is not a valid RSA key: {exc}") from exc
    return jwk


# ---------------------------------------------------------------------------------------------
# The library's abstract classes, made concrete over this module's storage


class _HttpRequest(Request):
    """lti1p3platform's request, from what the stdlib handler read."""

    def build_metadata(self, request: dict) -> TRequest:
        return t.cast(TRequest, request)


class _Conf(LTI1P3PlatformConfAbstract):
    """One per request (the library keeps the JWT being checked in the object); shares the registration."""

    def init_platform_config(self, platform: "Platform") -> None:
        self.platform = platform
        self._registration = platform.registration

    def get_registration_by_params(self, **kwargs: t.Any) -> Registration:
        return self.platform.registration

    def validate_token(self, token: str, allowed_scopes=None, audience=None) -> bool:
        """The library's check, against every key this platform signed with (see rotate_keys)."""
        current = self._registration
        assert current is not None
        last_error: Exception | None = None
        for public in [current.get_platform_public_key(), *reversed(self.platform._old_public_keys)]:
            self._registration = copy.copy(current).set_platform_public_key(public)  # read from there
            try:
                return super().validate_token(token, allowed_scopes, audience)
            except (jwt.PyJWTError, LtiException) as exc:
                last_error = exc
            finally:
                self._registration = current
        raise LtiException(f"invalid access token: {last_error}")


class _OIDCLogin(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: t.Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class _Refused(Exception):
    def __init__(self, status: int, message: str, error: str = "invalid_request"):
        super().__init__(message)
        self.status, self.message, self.error = status, message, error


class _MessageLaunch(LTIAdvantageMessageLaunchAbstract):
    """The answer to the tool's OIDC authentication request: the checks, the claims, the tampering."""

    platform: "Platform"
    spec: dict

    def prepare_launch(self, preflight_response: dict) -> None:
        p = self.platform
        request = preflight_response
        if "openid" not in str(request.get("scope", "")).split():
            raise _Refused(400, "scope must include openid", "invalid_scope")
        if request.get("response_type") != "id_token":
            raise _Refused(400, "response_type must be id_token", "unsupported_response_type")
        if request.get("response_mode") != "form_post":
            raise _Refused(400, "response_mode must be form_post")
        if request.get("redirect_uri") not in p.redirect_uris:
            raise _Refused(400, f"redirect_uri {request.get('redirect_uri')!r} is not registered "
                                f"(registered: {p.redirect_uris})")
        with p._lock:
            spec = p._pending.get(str(request.get("lti_message_hint", "")))
        if spec is None:
            raise _Refused(400, "lti_message_hint names no launch of this platform")
        if request.get("login_hint") != spec["sub"]:
            raise _Refused(400, "login_hint is not the user of this launch", "login_required")
        self.spec = spec
        member = p._member(spec["sub"])
        self.set_user_data(spec["sub"], spec["roles"], full_name=spec["name"] or (member or {}).get("name"),
                           email_address=spec["email"] or (member or {}).get("email"))
        self.set_resource_link_claim(p.resource_link_id, title="max_pool_backward")
        context = spec["context_id"] or p.context_id
        own = context == p.context_id  # another course of the platform: its own service addresses
        self.set_launch_context_claim(context, context_types=["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"],
                                      context_title=p.context_title if own else f"Course {context}",
                                      context_label=p.context_label if own else context.upper())
        self.set_launch_presentation_claim(document_target="iframe", return_url=p.issuer + "/return")
        self.set_ags(p.lineitems_url if own else f"{p.issuer}/courses/{context}/lineitems",
                     lineitem_url=p.column if own else None, allow_creating_lineitems=True,
                     results_service_enabled=True, scores_service_enabled=True)
        paged = f"?limit={p.nrps_page_size}" if p.nrps_page_size else ""
        self.set_nrps(p.nrps_url + paged if own else f"{p.issuer}/courses/{context}/members")
        tamper = spec["tamper"]
        claims: dict[str, t.Any] = {}
        if tamper == "wrong_issuer":
            claims["iss"] = "https://evil-lms.example"
        elif tamper == "wrong_audience":
            claims["aud"] = claims["azp"] = "some-other-tool"
        elif tamper == "unknown_deployment":
            claims[CLAIM + "deployment_id"] = "deployment-not-registered"
        elif tamper == "bad_message_type":
            claims[CLAIM + "message_type"] = "LtiNotARealRequest"
        elif tamper == "bad_version":
            claims[CLAIM + "version"] = "1.1.0"
        elif tamper == "forged_instructor":
            claims[CLAIM + "roles"] = [ROLES["instructor"]]
        elif tamper == "deep_linking":  # a valid Deep Linking request, as pylti1p3's validator wants it
            claims[CLAIM + "message_type"] = "LtiDeepLinkingRequest"
            claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
                "deep_link_return_url": p.issuer + "/return", "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"]}
        elif tamper == "submission_review":  # a valid Submission Review request: its line item and the student
            claims[CLAIM + "message_type"] = "LtiSubmissionReviewRequest"
            claims[CLAIM + "for_user"] = {"user_id": spec["sub"]}
            claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = {
                "scope": [SCOPE_LINEITEM, SCOPE_SCORE], "lineitems": p.lineitems_url,
                "lineitem": p.lineitems_url + "/reviewed"}
        if claims:
            self.set_extra_claims(claims)

    def generate_launch_request(self) -> dict:
        p, tamper = self.platform, self.spec["tamper"]
        if tamper in (None, "wrong_issuer", "wrong_audience", "unknown_deployment", "bad_message_type",
                      "bad_version", "wrong_state", "deep_linking", "submission_review"):
            data = dict(super().generate_launch_request())  # signed by the library with the published key
        else:
            message, state = self.get_launch_data()
            data = {"state": state, "id_token": p._forge(message, tamper)}
        claims = jwt.decode(data["id_token"], options={"verify_signature": False})
        if tamper == "wrong_state":
            data["state"] = data["state"] + "-tampered"
        if tamper == "replay":
            data["id_token"] = self.spec["replay_of"]
            claims = jwt.decode(data["id_token"], options={"verify_signature": False})
        with p._lock:
            p.launches.append({"sub": self.spec["sub"], "tamper": tamper, "claims": claims,
                               "id_token": data["id_token"], "state": data["state"]})
            if tamper is None:
                p._last_id_token = data["id_token"]
        return data

    def render_launch_form(self, launch_data: dict, **kwargs: t.Any) -> str:
        return _autopost_page("Launching the tool", launch_data["launch_url"],
                              {"id_token": launch_data["id_token"], "state": launch_data["state"]})


class _NRPS(NamesRoleProvisioningService):
    platform: "Platform"

    def get_context_by_id(self) -> Context:
        p = self.platform
        return Context(id=p.context_id, label=p.context_label, title=p.context_title)

    def is_resource_link_valid(self, context_id: str, resource_link_id: str) -> bool:
        return context_id == self.platform.context_id and resource_link_id == self.platform.resource_link_id

    def get_member_data_page(self, page: int = 1, limit: int | None = None, role: str | None = None,
                             since: str | None = None, **_: t.Any) -> dict:
        with self.platform._lock:
            members = [dict(m, roles=list(m["roles"])) for m in self.platform.members]
        if role:
            wanted = set(_role_uris(role)) if role.lower() in ROLES else {role}
            members = [m for m in members if wanted & set(m["roles"])
                       or any(r.rsplit("#", 1)[-1] == role for r in m["roles"])]
        if limit:
            start = (page - 1) * limit
            return {"content": members[start:start + limit], "has_next": start + limit < len(members)}
        return {"content": members, "has_next": False}


class _AGS(AssignmentsGradesService):
    platform: "Platform"
    scopes: list[str]

    @property
    def allowed_scopes(self) -> list[str]:
        return self.scopes

    def find_lineitems(self, page: int = 1, limit: int | None = None, line_item_id: str | None = None,
                       resource_link_id: str | None = None, resource_id: str | None = None,
                       tag: str | None = None, **_: t.Any) -> dict:
        with self.platform._lock:
            items = [dict(item) for item in self.platform.lineitems]
        for key, value in (("resourceLinkId", resource_link_id), ("resourceId", resource_id), ("tag", tag)):
            if value is not None:
                items = [item for item in items if item.get(key) == value]
        if limit:
            start = (page - 1) * limit
            return {"content": items[start:start + limit], "has_next": start + limit < len(items)}
        return {"content": items, "has_next": False}

    def find_lineitem(self, line_item_id: str) -> dict:
        with self.platform._lock:
            for item in self.platform.lineitems:
                if item["id"] == line_item_id:
                    return dict(item)
        raise LineItemNotFoundException(line_item_id)

    def create_lineitem(self, creation_data: dict) -> dict:
        p = self.platform
        with p._lock:
            item = {"id": f"{p.lineitems_url}/{next(p._ids)}", "scoreMaximum": creation_data["scoreMaximum"],
                    "label": creation_data["label"], "resourceId": creation_data.get("resourceId", ""),
                    "tag": creation_data.get("tag", ""),
                    "resourceLinkId": creation_data.get("resourceLinkId", p.resource_link_id)}
            for key in ("startDateTime", "endDateTime", "gradesReleased"):
                if key in creation_data:
                    item[key] = creation_data[key]
            p.lineitems.append(item)
            return dict(item)

    def update_lineitem(self, update_data: dict) -> dict:
        with self.platform._lock:
            for item in self.platform.lineitems:
                if item["id"] == update_data["id"]:
                    item.update({k: v for k, v in update_data.items() if k != "id"})
                    return dict(item)
        raise LineItemNotFoundException(update_data["id"])

    def delete_lineitem(self, line_item_id: str) -> None:
        with self.platform._lock:
            before = len(self.platform.lineitems)
            self.platform.lineitems[:] = [i for i in self.platform.lineitems if i["id"] != line_item_id]
            if len(self.platform.lineitems) == before:
                raise LineItemNotFoundException(line_item_id)

    def update_score(self, line_item_id: str, score: dict) -> UpdateScoreStatus:
        self.find_lineitem(line_item_id)
        p = self.platform
        with p._lock:
            newest = p._newest(line_item_id, score["userId"])
            applied = newest is None or _when(score["timestamp"]) > _when(newest["timestamp"])
            p.scores.append(dict(score, lineitem=line_item_id, applied=applied))
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None,
                    user_id: str | None = None, **_: t.Any) -> dict:
        item = self.find_lineitem(line_item_id)
        with self.platform._lock:
            book = {sub: s for sub, s in self.platform.gradebook(line_item_id).items()
                    if user_id is None or sub == user_id}
        results = [{"id": f"{line_item_id}/results/{sub}", "scoreOf": line_item_id, "userId": sub,
                    "resultScore": s.get("scoreGiven"), "resultMaximum": s.get("scoreMaximum", item["scoreMaximum"]),
                    "comment": s.get("comment")} for sub, s in book.items()]
        return {"content": results, "has_next": False}


def _when(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def _validate_score(score: t.Any, item: dict, allow_extra_credit: bool) -> None:
    """The AGS score media type's rules (the library's handle_update_score has a TODO here)."""
    if not isinstance(score, dict):
        raise _Refused(400, "a score is a JSON object")
    if not isinstance(score.get("userId"), str) or not score["userId"]:
        raise _Refused(400, "userId is missing")
    activity = {a.value for a in ActivityProgress}
    if score.get("activityProgress") not in activity:
        raise _Refused(400, f"activityProgress must be one of {sorted(activity)}, "
                            f"not {score.get('activityProgress')!r}")
    grading = {g.value for g in GradeProgress}
    if score.get("gradingProgress") not in grading:
        raise _Refused(400, f"gradingProgress must be one of {sorted(grading)}, not {score.get('gradingProgress')!r}")
    stamp = score.get("timestamp")
    try:
        when = _when(stamp) if isinstance(stamp, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise _Refused(400, f"timestamp must be ISO 8601 with a time zone, not {stamp!r}")
    if "scoreGiven" in score:
        given, maximum = score.get("scoreGiven"), score.get("scoreMaximum")
        number = (int, float)
        if not isinstance(given, number) or isinstance(given, bool) or given < 0:
            raise _Refused(400, f"scoreGiven must be a number >= 0, not {given!r}")
        if not isinstance(maximum, number) or isinstance(maximum, bool) or maximum <= 0:
            raise _Refused(400, "scoreMaximum must be a number > 0 when scoreGiven is given")
        if given > maximum and not allow_extra_credit:
            raise _Refused(400, f"scoreGiven {given} is above scoreMaximum {maximum}")
    elif "scoreMaximum" in score:
        raise _Refused(400, "scoreMaximum without scoreGiven")
    if "comment" in score and not isinstance(score["comment"], str):
        raise _Refused(400, "comment must be a string")


def _autopost_page(title: str, action: str, fields: dict[str, str], method: str = "post") -> str:
    inputs = "\n".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(str(v))}">'
                       for k, v in fields.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title></head>
<body>
<main>
<h1>{html.escape(title)}</h1>
<form id="lti" method="{method}" action="{html.escape(action)}">
{inputs}
<noscript><p>JavaScript is off: press the button to go on.</p><button type="submit">Continue</button></noscript>
</form>
</main>
<script>document.getElementById("lti").submit();</script>
</body>
</html>
"""


def _message_page(title: str, text: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>
<body><main><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></main></body></html>
"""


# ---------------------------------------------------------------------------------------------
# The platform


class Platform:
    """An LTI 1.3 platform on ``http://127.0.0.1:PORT``; a context manager that stops it on exit.

    The tool's settings come from the constructor or from ``register(config)``."""

    def __init__(self, tool_login_url: str | None = None, tool_launch_url: str | None = None,
                 tool_jwks_url: str | None = None, tool_public_jwk: dict | None = None, *,
                 client_id: str = "maxpool-grader-tool", deployment_id: str = "deployment-1"):
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self.requests: list[Hit] = []
        self.launches: list[dict] = []
        self.members: list[dict] = []
        self.lineitems: list[dict] = []
        self.scores: list[dict] = []
        self.allow_extra_credit = True
        self.timestamps = "any"  # "later only": a score not later than the one on record is answered 409 (Moodle)
        self.login_method = "post"  # how the launch page sends the OIDC login initiation: "post" or "get"
        self.client_id, self.deployment_id = client_id, deployment_id
        self.context_id, self.context_label, self.context_title = "course-maxpool", "MAXPOOL", "Max pooling, backward"
        self.resource_link_id = "resource-link-max-pool-backward"
        self.redirect_uris: list[str] = []
        self.tool_scopes: list[str] | None = None
        self.tool_config: dict = {}
        self._pending: dict[str, dict] = {}
        self._last_id_token: str | None = None
        self._old_public_keys: list[str] = []
        self._jtis: set[str] = set()
        self._failures: list[tuple[int, dict]] = []
        self._down = False
        self.column: str | None = None  # add_column(): launches name this line item (AGS 'lineitem'), as Canvas does
        self._stalling = False  # stall_scores(): a score is kept, and its answer held until release_scores()
        self._stall_of: str | None = None  # whose scores stall (None: everyone's)
        self._stalled, self._released = threading.Event(), threading.Event()
        self._jwks_stall, self._jwks_released = 0.0, threading.Event()  # stall_jwks()
        self.jwks_read_at = 0.0  # time.monotonic() of the last answer of /jwks
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.platform = self
        self.port = self._server.server_address[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.jwks_url = self.issuer + "/jwks"
        self.auth_login_url = self.issuer + "/auth"
        self.auth_token_url = self.issuer + "/token"
        self.nrps_url = self.issuer + "/nrps/Members"  # case matters, as in Canvas's addresses
        self.nrps_page_size: int | None = None  # members a page, in the launch's address (``?limit=``)
        self.lineitems_url = self.issuer + "/ags/lineitems"
        private, public = _new_key()
        self.registration = (Registration().set_iss(self.issuer).set_client_id(client_id)
                             .set_deployment_id(deployment_id).set_platform_private_key(private)
                             .set_platform_public_key(public))
        if tool_login_url or tool_launch_url or tool_jwks_url or tool_public_jwk:
            config: dict[str, t.Any] = {"oidc_initiation_url": tool_login_url, "target_link_uri": tool_launch_url}
            if tool_public_jwk is not None:
                config["public_jwk"] = tool_public_jwk
            if tool_jwks_url is not None:
                config["public_jwk_url"] = tool_jwks_url
            self.register(config)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"lti-platform-{self.port}", daemon=True)
        self._thread.start()

    # -- life

    def __enter__(self) -> "Platform":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server and free its port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    def down(self) -> None:
        """From now on every connection is closed at once, before any answer (a platform that is down)."""
        self._down = True

    def up(self) -> None:
        self._down = False

    def add_column(self, label: str, maximum: float) -> str:
        """A line item the LMS made itself (a graded activity's column); every launch from now on
        names it in its AGS claim ('lineitem'), as Canvas and Moodle do. Its id."""
        with self._lock:
            item = {"id": f"{self.lineitems_url}/{next(self._ids)}", "scoreMaximum": maximum, "label": label,
                    "resourceId": "", "tag": "", "resourceLinkId": self.resource_link_id}
            self.lineitems.append(item)
        self.column = item["id"]
        return item["id"]

    def stall_scores(self, of: str | None = None) -> None:
        """From now on a score posted (of the user ``of`` alone, if given) is recorded, and then its
        answer is held (the connection open) until ``release_scores()``: the tool is in the middle of
        its post. ``wait_stalled`` says when one is held."""
        self._stalled.clear()
        self._released.clear()
        self._stall_of = of
        self._stalling = True

    def wait_stalled(self, timeout: float = 60) -> bool:
        return self._stalled.wait(timeout)

    def release_scores(self) -> None:
        self._stalling = False
        self._released.set()

    def stall_jwks(self, seconds: float) -> None:
        """From now on the key set (``/jwks``) answers only after ``seconds`` (0: at once again, and
        a request held now is answered)."""
        self._jwks_stall = seconds
        if seconds:
            self._jwks_released.clear()
        else:
            self._jwks_released.set()

    def fail_next(self, n: int = 1, status: int = 500, retry_after: int | None = None) -> None:
        """The next ``n`` service calls (token, NRPS or AGS requests, in the order they come) answer
        ``status`` (with Retry-After if given), before any check."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        with self._lock:
            self._failures.extend([(status, headers)] * n)

    # -- the tool's registration

    def register(self, config: dict) -> None:
        """Register the tool from its registration JSON (the simple shape or Canvas's developer key).

        Raises ValueError naming the field that is missing or bad."""
        if not isinstance(config, dict):
            raise ValueError("registration: the config must be a JSON object (a dict)")
        login = _check_url(config.get("oidc_initiation_url"), "oidc_initiation_url")
        launch = _check_url(config.get("target_link_uri"), "target_link_uri")
        jwk, jwk_url = config.get("public_jwk"), config.get("public_jwk_url")
        if jwk is None and jwk_url is None:
            raise ValueError("registration: 'public_jwk' or 'public_jwk_url' is needed (the tool's key)")
        if jwk is not None:
            _check_jwk(jwk)
        if jwk_url is not None:
            _check_url(jwk_url, "public_jwk_url")
        redirects = config.get("redirect_uris", [])
        if not isinstance(redirects, list):
            raise ValueError("registration: 'redirect_uris' must be a list of URLs")
        for i, uri in enumerate(redirects):
            _check_url(uri, f"redirect_uris[{i}]")
        scopes = config.get("scopes")
        if scopes is not None:
            if not isinstance(scopes, list):
                raise ValueError("registration: 'scopes' must be a list")
            unknown = [s for s in scopes if s not in LTI_1P3_ACCESS_TOKEN_SCOPES]
            if unknown:
                raise ValueError(f"registration: 'scopes' holds unknown scopes {unknown}")
        extensions = config.get("extensions")
        if extensions is not None and (not isinstance(extensions, list)
                                       or not all(isinstance(e, dict) for e in extensions)):
            raise ValueError("registration: 'extensions' must be a list of objects")
        if "title" in config and (not isinstance(config["title"], str) or not config["title"].strip()):
            raise ValueError("registration: 'title' must be a non-empty string")
        with self._lock:
            self.tool_config = dict(config)
            self.tool_scopes = scopes
            self.redirect_uris = list(dict.fromkeys([launch, *redirects]))
            self.registration.set_oidc_login_url(login).set_launch_url(launch)
            self.registration._tool_keyset = None
            self.registration._tool_keyset_url = None
            if jwk is not None:
                self.registration.set_tool_key_set({"keys": [jwk]})
            else:
                self.registration.set_tool_key_set_url(jwk_url)

    # -- keys

    @property
    def kid(self) -> str:
        """The ``kid`` of the key the platform signs with now."""
        return t.cast(str, self.registration.get_kid())

    def rotate_keys(self) -> str:
        """Sign with a new key from now on; the JWKS publishes it alone. Returns the new ``kid``."""
        private, public = _new_key()
        with self._lock:
            self._old_public_keys.append(t.cast(str, self.registration.get_platform_public_key()))
            self.registration.set_platform_private_key(private).set_platform_public_key(public)
        return self.kid

    def _forge(self, message: dict, tamper: str) -> str:
        """Sign a launch message the way an attack would."""
        now = int(time.time())
        message = dict(message, iat=now, exp=now + 300)
        if tamper == "no_exp":
            message.pop("exp")
            return Registration.encode_and_sign(message, t.cast(str, self.registration.get_platform_private_key()),
                                                headers={"kid": self.kid})
        if tamper == "iat_future":  # the platform's clock 10 minutes ahead of the tool's
            message.update(iat=now + 600, exp=now + 900)
            return Registration.encode_and_sign(message, t.cast(str, self.registration.get_platform_private_key()),
                                                headers={"kid": self.kid})
        if tamper == "expired":
            message.update(iat=now - 900, exp=now - 600)
            return Registration.encode_and_sign(message, t.cast(str, self.registration.get_platform_private_key()),
                                                headers={"kid": self.kid})
        if tamper == "alg_none":
            return _unsigned_parts({"alg": "none", "typ": "JWT", "kid": self.kid}, message) + "."
        if tamper == "hs256_with_public_key":
            signing_input = _unsigned_parts({"alg": "HS256", "typ": "JWT", "kid": self.kid}, message)
            secret = t.cast(str, self.registration.get_platform_public_key()).encode()
            return signing_input + "." + _b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
        if tamper == "unknown_kid":
            return Registration.encode_and_sign(message, t.cast(str, self.registration.get_platform_private_key()),
                                                headers={"kid": "kid-this-platform-never-published"})
        if tamper == "forged_instructor":
            rogue, _ = _new_key()  # the published kid, a key the platform does not publish
            return Registration.encode_and_sign(message, rogue, headers={"kid": self.kid})
        if tamper == "replay":
            return Registration.encode_and_sign(message, t.cast(str, self.registration.get_platform_private_key()),
                                                headers={"kid": self.kid})  # replaced by the earlier token
        raise ValueError(f"unknown tamper {tamper!r}")

    # -- people

    def _member(self, sub: str) -> dict | None:
        with self._lock:
            return next((m for m in self.members if m["user_id"] == sub), None)

    def add_member(self, sub: str, name: str | None = None, roles: t.Any = "learner",
                   email: str | None = None) -> dict:
        """Enrol ``sub`` (or update them); ``roles`` is "learner", "instructor", a role URI or a list."""
        member = {"user_id": sub, "name": name or sub, "email": email or f"{sub}@example.edu",
                  "roles": _role_uris(roles), "status": "Active"}
        with self._lock:
            self.members[:] = [m for m in self.members if m["user_id"] != sub]
            self.members.append(member)
        return member

    def remove_member(self, sub: str) -> None:
        with self._lock:
            self.members[:] = [m for m in self.members if m["user_id"] != sub]

    # -- launches

    def launch_url(self, sub: str, roles: t.Any = "learner", name: str | None = None, email: str | None = None,
                   tamper: str | None = None, context_id: str | None = None) -> str:
        """A URL on the platform whose page starts an OIDC launch of the tool as ``sub``; from
        another course of the platform with ``context_id`` (its own Names and Roles and line
        items addresses, under ``/courses/<context_id>/``, which this platform does not serve)."""
        if not self.registration.get_oidc_login_url():
            raise RuntimeError("no tool is registered: Platform(tool_login_url=...) or platform.register(config)")
        if tamper is not None and tamper not in TAMPERS + STRICT_TAMPERS:
            raise ValueError(f"unknown tamper {tamper!r}: one of {TAMPERS + STRICT_TAMPERS}")
        spec = {"sub": sub, "roles": _role_uris(roles), "name": name, "email": email, "tamper": tamper,
                "context_id": context_id}
        if tamper == "replay":
            if self._last_id_token is None:
                raise ValueError("tamper='replay' needs an earlier valid launch whose id_token it posts again")
            spec["replay_of"] = self._last_id_token
        if self._member(sub) is None and context_id in (None, self.context_id):  # another course's: not this one's
            self.add_member(sub, name=name, roles=roles, email=email)
        hint = secrets.token_urlsafe(16)
        with self._lock:
            self._pending[hint] = spec
        return f"{self.issuer}/launch/{hint}"

    def gradebook(self, lineitem: str | None = None) -> dict[str, dict]:
        """``{sub: the score with the latest timestamp}``, of one line item or of all."""
        book: dict[str, dict] = {}
        with self._lock:
            for score in self.scores:
                if lineitem is not None and score["lineitem"] != lineitem:
                    continue
                held = book.get(score["userId"])
                if held is None or _when(score["timestamp"]) > _when(held["timestamp"]):
                    book[score["userId"]] = score
        return book

    def shown(self, lms: str, lineitem: str | None = None) -> dict[str, float | None]:
        """What the gradebook cell of each user shows of their newest score in ``lms``, by its own
        rule: Canvas ignores ``scoreGiven`` when ``gradingProgress`` is NotReady, Failed or Pending
        (its Score API) and shows it for PendingManual (marked for a grader) and FullyGraded;
        Moodle keeps it only when FullyGraded (mod/lti/service/gradebookservices/classes/local/
        resources/scores.php stores null otherwise). None: the cell is empty."""
        kept = {"canvas": ("PendingManual", "FullyGraded"), "moodle": ("FullyGraded",)}[lms]
        return {sub: score.get("scoreGiven") if score.get("gradingProgress") in kept else None
                for sub, score in self.gradebook(lineitem).items()}

    def _newest(self, lineitem: str, sub: str) -> dict | None:
        return self.gradebook(lineitem).get(sub)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    platform: Platform

    def verify_request(self, request: t.Any, client_address: t.Any) -> bool:
        return not self.platform._down  # down: the connection is closed before any answer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - the stdlib's name
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing

    def _dispatch(self, method: str) -> None:
        p = self.server.platform
        if p._down:  # a kept-alive connection too: closed with no answer
            self.close_connection = True
            return
        url = urllib.parse.urlsplit(self.path)
        self.url_path = url.path
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        self.form = ({k: v[-1] for k, v in urllib.parse.parse_qs(self.body.decode()).items()}
                     if content_type == "application/x-www-form-urlencoded" else {})
        try:
            status, headers, body = self._route(method, url.path, content_type)
        except _Refused as refused:
            status, headers, body = refused.status, {}, {"error": refused.error, "error_description": refused.message}
        except Exception as exc:  # noqa: BLE001 - a fixture answers 500 and says why, as a server would
            status, headers, body = 500, {}, {"error": "server_error", "error_description": repr(exc)}
        if isinstance(body, (dict, list)):
            headers.setdefault("Content-Type", "application/json")
            data = json.dumps(body).encode()
        elif isinstance(body, str):
            headers.setdefault("Content-Type", "text/html; charset=utf-8")
            data = body.encode()
        else:
            data = b""
        with p._lock:
            p.requests.append(Hit(method, url.path, status))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def _lib_request(self, method: str, content_type: str) -> _HttpRequest:
        data = dict(self.query)
        for key in ("page", "limit"):
            if key in data:
                try:
                    data[key] = int(data[key])
                except ValueError:
                    raise _Refused(400, f"{key} must be an integer") from None
        body_json = None
        if content_type.endswith("json") and self.body:
            try:
                body_json = json.loads(self.body)
            except ValueError:
                raise _Refused(400, "the body is not JSON") from None
        return _HttpRequest({"method": method, "form_data": self.form, "get_data": data,
                             "headers": dict(self.headers.items()), "content_type": content_type,
                             "path": self.url_path, "json": body_json})

    def _injected(self) -> tuple[int, dict, t.Any] | None:
        p = self.server.platform
        with p._lock:
            if not p._failures:
                return None
            status, headers = p._failures.pop(0)
        return status, dict(headers), {"error": "injected_failure", "error_description": f"fail_next: {status}"}

    @staticmethod
    def _from_response(response: Response, array: bool = False) -> tuple[int, dict, t.Any]:
        headers: dict[str, str] = {}
        if response.code >= 400:
            return response.code, headers, {"error": "request_refused", "error_description": response.message}
        result = response.result
        if isinstance(result, dict) and result.get("next"):
            headers["Link"] = f'<{result["next"]}>; rel="next"'
        if isinstance(result, dict):
            result = {k: v for k, v in result.items() if k not in ("next", "has_next")}
            if array:
                result = result["content"]
        if result is not None:
            headers["Content-Type"] = response.media_type
        return response.code, headers, result

    def _bearer_or_401(self, call: t.Callable[[], Response]) -> Response:
        try:
            return call()
        except (jwt.PyJWTError, LtiException) as exc:
            raise _Refused(401, f"invalid access token: {exc}", "invalid_token") from exc

    # -- routes

    def _route(self, method: str, path: str, content_type: str) -> tuple[int, dict, t.Any]:
        p = self.server.platform
        if path == "/jwks" and method == "GET":
            p._jwks_released.wait(p._jwks_stall)  # stall_jwks(): the key set answers late, or not in time
            p.jwks_read_at = time.monotonic()  # when the tool last read the key set
            return 200, {}, _Conf(platform=p).get_jwks()
        if path.startswith("/launch/") and method == "GET":
            return self._launch_page(path.removeprefix("/launch/"))
        if path == "/auth" and method in ("GET", "POST"):
            return self._auth(method, content_type)
        if path == "/return":
            return 200, {}, _message_page("Back in the course", "The tool sent you back to the course.")
        if path == "/token" and method == "POST":
            return self._injected() or self._token()
        if path == p.nrps_url.removeprefix(p.issuer):
            return self._injected() or self._nrps(method, content_type)
        ags = p.lineitems_url.removeprefix(p.issuer)
        if path == ags or path.startswith(ags + "/"):
            return self._injected() or self._ags(method, path, content_type)
        return 404, {}, _message_page("Not found", f"No page at {path}.")

    def _launch_page(self, hint: str) -> tuple[int, dict, t.Any]:
        p = self.server.platform
        with p._lock:
            spec = p._pending.get(hint)
        if spec is None:
            return 404, {}, _message_page("No such launch", "This launch link is not one of this platform's.")
        login = _OIDCLogin(None, _Conf(platform=p))
        login.set_lti_message_hint(hint=hint)
        url = login.initiate_login(spec["sub"])  # the library's preflight URL: iss, login_hint, ...
        action = t.cast(str, p.registration.get_oidc_login_url())
        fields = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        for key in dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(action).query)):
            fields.pop(key, None)  # already in the action's own query
        return 200, {}, _autopost_page("Opening the tool", action, fields, method=p.login_method)

    def _auth(self, method: str, content_type: str) -> tuple[int, dict, t.Any]:
        p = self.server.platform
        request = self._lib_request(method, content_type)
        if method == "POST":
            request.request["get_data"] = {}
        launch = _MessageLaunch(request, _Conf(platform=p))
        launch.platform = p
        try:
            page = launch.lti_launch()
        except lti_exceptions.PreflightRequestValidationException:
            return 400, {}, _message_page("Launch refused", "The authentication request lacks nonce, state or "
                                          "redirect_uri, or names another client_id.")
        except _Refused as refused:
            return refused.status, {}, _message_page("Launch refused", refused.message)
        return 200, {}, page

    def _token(self) -> tuple[int, dict, t.Any]:
        p = self.server.platform
        form = self.form
        for field in ("grant_type", "client_assertion_type", "client_assertion", "scope"):
            if not form.get(field):
                raise _Refused(400, f"{field} is missing")
        if form["grant_type"] != "client_credentials":
            raise _Refused(400, "grant_type must be client_credentials", "unsupported_grant_type")
        if form["client_assertion_type"] != ASSERTION_TYPE:
            raise _Refused(400, f"client_assertion_type must be {ASSERTION_TYPE}")
        try:
            claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise _Refused(401, f"client_assertion is not a JWT: {exc}", "invalid_client") from exc
        if claims.get("iss") != p.client_id or claims.get("sub") != p.client_id:
            raise _Refused(401, "client_assertion: iss and sub must be the client_id", "invalid_client")
        audience = claims.get("aud")
        if p.auth_token_url not in (audience if isinstance(audience, list) else [audience]):
            raise _Refused(401, f"client_assertion: aud must be {p.auth_token_url}", "invalid_client")
        if not claims.get("jti"):
            raise _Refused(401, "client_assertion: jti is missing", "invalid_client")
        conf = _Conf(platform=p)
        try:
            try:
                answer = conf.get_access_token(dict(form))
            except LtiException as exc:
                if "Unable to find public key" not in str(exc) or not p.registration.get_tool_key_set_url():
                    raise
                p.registration.set_tool_key_set(None)  # a new kid: fetch the tool's key set again, once
                answer = _Conf(platform=p).get_access_token(dict(form))
        except (jwt.PyJWTError, LtiException, lti_exceptions.MissingRequiredClaim) as exc:
            raise _Refused(401, f"client_assertion refused: {exc}", "invalid_client") from exc
        with p._lock:
            if claims["jti"] in p._jtis:
                raise _Refused(401, "client_assertion: this jti was used already", "invalid_client")
            p._jtis.add(claims["jti"])
        granted = answer["scope"].split()
        if p.tool_scopes is not None:
            granted = [s for s in granted if s in p.tool_scopes]
        if not granted:
            raise _Refused(400, "none of the scopes asked for can be granted", "invalid_scope")
        if granted != answer["scope"].split():
            answer = dict(answer, access_token=p.registration.encode_and_sign(
                {"sub": p.client_id, "iss": p.issuer, "scopes": " ".join(granted)},
                t.cast(str, p.registration.get_platform_private_key()), expiration=3600), scope=" ".join(granted))
        return 200, {}, dict(answer)

    def _nrps(self, method: str, content_type: str) -> tuple[int, dict, t.Any]:
        p = self.server.platform
        service = _NRPS(self._lib_request(method, content_type), _Conf(platform=p), p.nrps_url)
        service.platform = p
        return self._from_response(self._bearer_or_401(lambda: service.handle_resp(service.handle_get_members)))

    def _ags(self, method: str, path: str, content_type: str) -> tuple[int, dict, t.Any]:
        p = self.server.platform
        rest = path.removeprefix(p.lineitems_url.removeprefix(p.issuer)).strip("/").split("/")
        request = self._lib_request(method, content_type)
        service = _AGS(request, _Conf(platform=p), p.lineitems_url)
        service.platform = p

        def run(scopes: list[str], handler: t.Callable[..., Response], *args: str, array: bool = False):
            service.scopes = scopes
            return self._from_response(self._bearer_or_401(lambda: service.handle_resp(handler, **dict(
                zip(("line_item_id",), args)))), array=array)

        if rest == [""]:  # the container
            if method == "GET":
                return run([SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY], service.handle_get_lineitems, array=True)
            if method == "POST":
                self._need_json(content_type, request)
                item = request.json
                if not isinstance(item, dict) or not isinstance(item.get("label"), str) or not item["label"]:
                    raise _Refused(400, "a line item needs a label")
                maximum = item.get("scoreMaximum")
                if not isinstance(maximum, (int, float)) or isinstance(maximum, bool) or maximum <= 0:
                    raise _Refused(400, "a line item needs scoreMaximum > 0")
                return run([SCOPE_LINEITEM], service.handle_create_lineitem)
            return 405, {"Allow": "GET, POST"}, {"error": "method_not_allowed"}
        item_id = f"{p.lineitems_url}/{rest[0]}"
        if len(rest) == 1:
            if method == "GET":
                return run([SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY], service.handle_get_lineitem, item_id)
            if method == "PUT":
                self._need_json(content_type, request)
                return run([SCOPE_LINEITEM], service.handle_update_lineitem, item_id)
            if method == "DELETE":
                return run([SCOPE_LINEITEM], service.handle_delete_lineitem, item_id)
            return 405, {"Allow": "GET, PUT, DELETE"}, {"error": "method_not_allowed"}
        if rest[1:] == ["scores"] and method == "POST":
            if content_type != SCORE_MEDIA_TYPE:
                raise _Refused(415, f"a score's Content-Type must be {SCORE_MEDIA_TYPE}, not {content_type!r}")
            service.scopes = [SCOPE_SCORE]
            status, headers, body = self._from_response(self._bearer_or_401(
                lambda: service.handle_resp(_post_score, service=service, line_item_id=item_id)))
            with p._lock:
                whose = p.scores[-1]["userId"] if p.scores else None
            if p._stalling and status < 400 and p._stall_of in (None, whose):  # recorded; the answer waits
                # (the tool may be killed meanwhile)
                p._stalled.set()
                p._released.wait(120)
            return status, {}, None if status < 400 else body
        if rest[1:] == ["results"] and method == "GET":
            return run([SCOPE_RESULT_READONLY], service.handle_get_results, item_id, array=True)
        return 404, {}, {"error": "not_found"}

    @staticmethod
    def _need_json(content_type: str, request: _HttpRequest) -> None:
        if not content_type.endswith("json") or request.json is None:
            raise _Refused(415, f"the body must be JSON ({LINEITEM_MEDIA_TYPE})")


@authenticate(allow_methods=["POST"])
def _post_score(service: _AGS, line_item_id: str) -> Response:
    """The library's bearer check (``authenticate``), then the score's validation it lacks, then its
    ``update_score`` and status codes (its ``handle_update_score`` would skip the validation)."""
    try:
        item = service.find_lineitem(line_item_id)
    except LineItemNotFoundException:
        return Response(None, 404, "Line item not found")
    assert service.request is not None
    score = service.request.json
    platform = service.platform
    _validate_score(score, item, platform.allow_extra_credit)
    if platform._member(score["userId"]) is None:
        raise _Refused(422, f"userId {score['userId']!r} is not a member of the context")
    newest = platform._newest(line_item_id, score["userId"])
    if platform.timestamps == "later only" and newest is not None and \
            _when(score["timestamp"]) <= _when(newest["timestamp"]):
        platform.scores.append(dict(score, lineitem=line_item_id, applied=False, refused=409))
        raise _Refused(409, "the score's timestamp is not later than the one on record")  # as Moodle answers
    status = service.update_score(line_item_id, score)
    return Response(None, UPDATE_SCORE_STATUSCODE.get(status, 200), status.value)
