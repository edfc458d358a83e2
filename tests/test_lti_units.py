"""LTI 1.3's parts that need no platform: the outbox and the launch store keep what they hold
across a reopen (a restart, a kill), a nonce or a state is taken once, who a checked launch
is (serve/signin.py), the sentence each refusal gets, and what ``lti-config`` prints. The
same against a real platform: tests/test_lti.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time

import pytest
from helpers import BIN, ROOT

from maxpool_grader.serve.lti import Lti, public_jwks, registration, tool_conf
from maxpool_grader.serve.lti_store import LaunchStore, record, records, student_of
from maxpool_grader.serve.lti_web import refusal_sentence, teaching
from maxpool_grader.serve.outbox import Outbox
from maxpool_grader.serve.signin import SignIn

pytestmark = pytest.mark.unit
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"


def test_the_outbox_keeps_every_score_in_order_and_backs_off_after_a_failure(tmp_path):
    box = Outbox(tmp_path)
    assert box.add("ana", "sub-ana", "attempt:1", 5, 15, progress="Pending", activity="Submitted")
    assert not box.add("ana", "sub-ana", "attempt:1", 5, 15, progress="Pending", activity="Submitted")  # once
    box.add("ana", "sub-ana", "attempt:2", 9, 15, progress="Pending", activity="Submitted")
    box.add("ben", "sub-ben", "attempt:3", 1, 15, progress="Pending", activity="Submitted")
    assert [score.source for score in box.due()] == ["attempt:1", "attempt:3"]  # each student's oldest first
    assert box.failed(box.due()[0].id, "the platform answered HTTP 500") == 2.0
    assert [score.source for score in box.due()] == ["attempt:3"]  # ana's waits, and her later one behind it
    box.close()
    again = Outbox(tmp_path)  # a restart (or a kill -9: every write is committed before it is acted on)
    assert [score.source for score in again.pending()] == ["attempt:1", "attempt:2", "attempt:3"]
    assert again.pending()[0].error == "the platform answered HTTP 500"
    assert [score.source for score in again.due(time.time() + 3)] == ["attempt:1", "attempt:3"]
    again.posted(again.pending()[0].id)
    assert [score.source for score in again.due(time.time() + 3)] == ["attempt:2", "attempt:3"]
    assert again.failed(again.pending()[0].id, "x") == 2.0 and again.failed(again.pending()[0].id, "x") == 4.0


def test_a_nonce_or_state_is_taken_once_and_still_there_after_a_restart(tmp_path):
    store = LaunchStore(tmp_path)
    store.put("lti1p3-nonce-abc", True, 60)
    store.put("gone", True, -1)
    store.close()
    store = LaunchStore(tmp_path)
    assert store.take("lti1p3-nonce-abc") and not store.take("lti1p3-nonce-abc")
    assert not store.take("gone") and store.get("gone") is None
    store.remember_services({"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice":
                             {"context_memberships_url": "http://127.0.0.1:1/nrps"}})
    assert store.services() == ({"context_memberships_url": "http://127.0.0.1:1/nrps"}, None)


def test_the_lms_user_is_who_names_and_roles_recorded_never_a_name(tmp_path):
    on_roster = {"ana", "ben"}
    signin = SignIn(tmp_path / "serve", is_student=on_roster.__contains__)
    record(tmp_path, "ana", {"sub": "u-1", "name": "Ben"})  # a display name that is someone else's
    assert student_of(tmp_path, "u-1") == "ana" and student_of(tmp_path, "Ben") is None
    assert signin.lti_user("u-1", teaching=False, recorded_as="ana") == ("student", "ana")
    assert signin.lti_user("u-9", teaching=False, recorded_as=None) == ("stranger", "")
    assert signin.lti_user("u-1", teaching=True, recorded_as="ana") == ("forged", "ana")
    assert signin.lti_user("u-7", teaching=True, recorded_as=None) == ("instructor", "")
    on_roster.discard("ana")  # taken off the roster: the recorded user gets nothing
    assert signin.lti_user("u-1", teaching=False, recorded_as="ana") == ("stranger", "ana")
    assert records(tmp_path)["ana"]["sub"] == "u-1"
    assert teaching({ROLES: [MEMBERSHIP + "Instructor"]}) and not teaching({ROLES: [MEMBERSHIP + "Learner"]})


@pytest.mark.parametrize(("reason", "header", "says"), [
    ("State not found", {}, "state does not match"),
    ("Invalid Nonce", {}, "used already"),
    ("Registration not found.", {}, "not registered"),
    ("Client id not registered for this issuer", {}, "audience"),
    ("azp is not this tool's client id", {}, "audience"),
    ("Unable to find deployment", {}, "deployment"),
    ("Unable to find public key", {"alg": "none"}, "signed with none"),
    ("Unable to find public key", {"alg": "HS256"}, "signed with HS256"),
    ("Unable to find public key", {"alg": "RS256"}, "unknown key id"),
    ("Can't decode id_token: Signature has expired", {}, "expired"),
    ("Can't decode id_token: Signature verification failed", {}, "changed after the LMS signed it"),
    ("Incorrect version, expected 1.3.0", {}, "not LTI 1.3.0"),
    ("Unrecognized message type", {}, "message type"),
    ("something new", {}, "could not be checked (something new)"),
])
def test_each_refusal_is_a_sentence(reason, header, says):
    sentence = refusal_sentence(Exception(reason), header)
    assert says in sentence and sentence.endswith((".", ")")) and "Traceback" not in sentence


def test_lti_config_prints_the_key_set_and_the_registration_and_keeps_the_key_private(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Lti.client_id = 'c1'\n")
    printed = subprocess.run([str(BIN / "maxpool-grader"), "lti-config", "--base-url", "https://g.example.edu/m/",
                              "--course-dir", str(tmp_path)], capture_output=True, text=True, check=True)
    found = json.loads(printed.stdout)
    key = tmp_path / ".maxpool-grader" / "lti" / "tool-key.pem"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and stat.S_IMODE(os.stat(key.parent).st_mode) == 0o700
    assert "PRIVATE" not in printed.stdout and found["jwks"] == public_jwks(tmp_path, Lti())
    canvas = found["canvas"]
    assert canvas["oidc_initiation_url"] == "https://g.example.edu/m/lti/login"
    assert canvas["target_link_uri"] == "https://g.example.edu/m/lti/launch"
    assert canvas["public_jwk_url"] == "https://g.example.edu/m/lti/jwks" and canvas["public_jwk"]["kty"] == "RSA"
    assert found["moodle"]["Initiate login URL"] == canvas["oidc_initiation_url"]
    assert registration(tmp_path, Lti(), "https://g.example.edu/m") == found  # the same with or without the /
    settings = Lti(issuer="https://lms", client_id="c1", deployment_ids=["d"], auth_login_url="https://lms/a",
                   auth_token_url="https://lms/t", key_set_url="https://lms/k")
    registered = tool_conf(tmp_path, settings).find_registration("https://lms")
    assert registered.get_kid() == found["jwks"]["keys"][0]["kid"]  # what the tool signs with is what it publishes


def test_an_incomplete_registration_is_a_sentence(tmp_path):
    from maxpool_grader.serve.lti import LtiSetupError
    with pytest.raises(LtiSetupError, match=r"c.Lti.issuer, c.Lti.client_id.* not set in nbgrader_config.py"):
        tool_conf(tmp_path, Lti())
    assert (ROOT / "docs" / "lti.md").is_file()


def test_an_attempt_s_score_is_part_b_less_the_late_penalty_and_waits_for_part_a(tmp_path):
    from maxpool_grader.serve.passback import Passback
    store = LaunchStore(tmp_path / "serve")
    passback = Passback(tmp_path, Lti(), store, db_url="sqlite://", assignment="a", folder=tmp_path / "serve",
                        final_of=lambda student: None, base_url="https://g.example.edu/m/")
    record(tmp_path, "ana", {"sub": "u-1"})
    tests = [{"manual": False, "score": 10.0, "points": 12.0}, {"manual": False, "score": 3.0, "points": 3.0},
             {"manual": True, "score": 0.0, "points": 5.0}]
    passback.graded("ana", 7, {"tests": tests, "max_score": 20.0, "late_penalty": 4.0})
    passback.graded("nobody-from-the-lms", 8, {"tests": tests, "max_score": 20.0})  # no sub: nothing to post
    [score] = passback.outbox.pending()
    assert (score.sub, score.source, score.score, score.maximum, score.progress, score.activity) == (
        "u-1", "attempt:7", 9.0, 20.0, "Pending", "Submitted")
    passback.graded("ana", 9, {"tests": tests[:2], "max_score": 15.0, "late_penalty": 20.0})  # never below 0
    assert passback.outbox.pending()[-1].score == 0.0 and passback.outbox.pending()[-1].progress == "FullyGraded"


def test_lti_config_refuses_a_base_url_that_is_no_address_with_a_sentence(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Lti.client_id = 42\n")
    for base, says in (("grader.example.edu", "is not an address"), ("https://g.example.edu/", "c.Lti")):
        done = subprocess.run([str(BIN / "maxpool-grader"), "lti-config", "--base-url", base, "--course-dir",
                               str(tmp_path)], capture_output=True, text=True)
        assert done.returncode == 2 and says in done.stdout and "Traceback" not in done.stdout + done.stderr
