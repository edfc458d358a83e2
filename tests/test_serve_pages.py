"""The pages of ``maxpool-grader serve`` as templates (serve/pages.py): one layout
for all, every text from a student escaped, and one script of the service's own, allowed by
its hash and by nothing else. The pages in a browser: tests/test_accessibility.py."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from bs4 import BeautifulSoup
from markupsafe import Markup

from maxpool_grader.serve import pages as serve_pages
from maxpool_grader.serve.pages import PAGE_POLICY, POLL_POLICY, POLL_SCRIPT, brief_page, render

HOSTILE = "<img src=x onerror=alert(1)>"


def _pages() -> dict[str, str]:
    link = ("/", "Back")
    return {
        "message": render("message.html.j2", title=HOSTILE, paragraphs=[HOSTILE, Markup("<b>{}</b>").format(HOSTILE)],
                          link=link),
        "home": render("home.html.j2", title="t", student=HOSTILE, refusal=HOSTILE, assignment="a", open=True,
                       action="/upload", xsrf=Markup('<input type="hidden" name="_xsrf" value="x">'), level="l",
                       deadline="none", used=HOSTILE, why=HOSTILE,
                       attempts=[{"id": 1, "url": "/attempt/1", "received": "now", "status": HOSTILE, "counts": True}]),
        "waiting": render("waiting.html.j2", script=True, title="Attempt 1", progress=HOSTILE, status_url="/s",
                          every=1000, number=1, here="/attempt/1", back="/"),
        "brief": brief_page("a", {"tests": [{"title": HOSTILE, "manual": False, "score": 0, "points": 2,
                                             "mistakes": [HOSTILE]}], "standing": [HOSTILE]}, "mistakes"),
    }


def test_every_page_has_one_layout_and_escapes_what_it_is_given():
    for name, page in _pages().items():
        soup = BeautifulSoup(page, "html.parser")
        assert soup.html["lang"] == "en" and len(soup.find_all("main")) == 1, name
        assert len(soup.find_all("h1")) == 1 and soup.find("meta", attrs={"name": "viewport"}), name
        assert soup.find("img") is None and HOSTILE not in page, name  # shown as text, never as markup
        assert 'http-equiv="refresh"' not in page, name


def test_only_the_services_own_script_runs_and_only_where_a_page_updates_itself():
    pages = _pages()
    scripts = {name: [tag.string for tag in BeautifulSoup(page, "html.parser").find_all("script")]
               for name, page in pages.items()}
    assert scripts == {"message": [], "home": [], "waiting": [str(POLL_SCRIPT)], "brief": []}
    digest = base64.b64encode(hashlib.sha256(str(POLL_SCRIPT).encode()).digest()).decode()
    assert re.findall(r"script-src ([^;]+)", POLL_POLICY) == [f"'sha256-{digest}'"]  # that script, nothing else
    assert "script-src" not in PAGE_POLICY and PAGE_POLICY.startswith("default-src 'none'")
    assert "connect-src 'self'" in POLL_POLICY and "unsafe" not in POLL_POLICY.split("style-src 'unsafe-inline'")[1]
    assert serve_pages.LEVEL_TEXT.keys() == {"scores", "mistakes", "reports"}


def test_the_home_page_says_what_each_level_shows_the_deadline_or_none_and_part_a():
    """The level's own words, the deadline or that there is none (never "Deadline: none" beside
    "Before the deadline"), that Part A is not graded yet until a person grades it, and, once the
    final feedback is released, its link."""
    common = dict(title="t", student="kim", refusal="", assignment="a", open=True, action="/upload", xsrf="",
                  used="Attempts used: 0 of 3 in the last hour", why="w", attempts=[], part_a=serve_pages.PART_A_WAITS,
                  final_comes=serve_pages.FINAL_COMES)
    for level, text in serve_pages.LEVEL_TEXT.items():
        page = " ".join(BeautifulSoup(render("home.html.j2", level=text, deadline="2026-12-01 23:59 UTC", final="",
                                             **common), "html.parser").get_text(" ").split())
        assert f"Until the deadline, your feedback shows {' '.join(text.split())}." in page, level
        assert "not graded yet" in page and "everything" not in page and "Read your final feedback" not in page
    page = " ".join(BeautifulSoup(render("home.html.j2", level="x", deadline="", final="/final", **common),
                                  "html.parser").get_text(" ").split())
    assert "This assignment has no deadline." in page and "Deadline" not in page and "Until the deadline" not in page
    assert "Read your final feedback" in page and "comes when your instructor releases it" not in page


def test_the_waiting_page_says_a_finished_attempt_in_sentences():
    from maxpool_grader.serve.pages import attempt_progress
    from maxpool_grader.serve.queue import Attempt
    message = ("Grading this submission failed twice; your instructor has been told. This attempt does not count "
               "against your limit.")
    failed = Attempt(1, "s", "a", "web", "", 0.0, "failed", 2, message, {}, None)
    said = attempt_progress(None, failed, "/attempt/1")["text"]
    assert said == f"Failed: {message}" and ".." not in said and "told. this" not in said
    graded = Attempt(2, "s", "a", "web", "", 0.0, "graded", 1, "", {"score": 3, "max_score": 20}, None)
    assert attempt_progress(None, graded, "/attempt/2")["text"] == "Graded: 3 of 20. Your feedback is ready."


def test_the_brief_page_shows_a_mistake_s_code_as_code_and_escapes_the_rest():
    page = brief_page("a", {"tests": [{"title": "T", "manual": False, "score": 0, "points": 2,
                                       "mistakes": ["windows overwrite (`dx[...] = <b>`)"]}]}, "mistakes")
    soup = BeautifulSoup(page, "html.parser")
    assert [code.get_text() for code in soup.find_all("code")] == ["dx[...] = <b>"]
    assert soup.find("b") is None and "`" not in soup.get_text()


def test_a_refusal_names_what_the_student_did_an_upload_or_a_submit(tmp_path):
    """Over the attempt limits, or too large: an upload of the web page "was not kept", while a
    Submit through the exchange (which stays in its inbound folder) was not graded and is not
    counted, and is to be submitted again, not uploaded."""
    import time

    from maxpool_grader.serve.policy import Policy, Refused, Serve
    from maxpool_grader.serve.queue import Queue
    queue = Queue(tmp_path / "queue")
    policy = Policy(Serve(deadline="2099-01-01 00:00", attempts_per_hour=1), course=tmp_path, db_url="sqlite://",
                    assignment="max_pool_backward", queue=queue, on_queued=lambda: None)
    queue.add("ada", "max_pool_backward", "exchange", b"{}", received=time.time() - 60)
    said = {}
    for way in ("web", "exchange"):
        try:
            policy.admit("ada", way=way)
        except Refused as refusal:
            said[way] = str(refusal)
    assert said["web"].endswith("This upload was not kept."), said
    assert said["exchange"].endswith("This submission was not graded and does not count as an attempt: Submit "
                                     "again at that time."), said
    assert "upload" not in said["exchange"].lower(), said
    assert str(policy.too_large(3 << 20, way="web")).endswith("and upload it again.")
    exchange = str(policy.too_large(3 << 20, way="exchange"))
    assert exchange.endswith("and save it and Submit again.") and "upload" not in exchange, exchange
    with pytest.raises(Refused) as refusal:
        policy.check_notebook(b"not json", way="exchange")
    assert str(refusal.value) == ("This is not a Jupyter notebook (.ipynb): submit the notebook file of the "
                                  "assignment, max_pool_backward.ipynb.")
