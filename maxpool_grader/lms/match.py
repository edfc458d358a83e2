"""Whose upload is it: the LMS users of a zip matched to the students of ``roster.csv``
(lms/intake.py collects; the module doc there says what is trusted).

An ``lms_id`` in the roster decides alone. A student without one is matched by the LMS user
the first collection recorded for them (``.maxpool-grader/lms.json``), so a later change of
display name for that user is followed and a new user who takes a collected student's name
is refused. Only a student never collected is matched by display name, and only when no
other user of the zip fits them too. Ambiguity and such claims are refusals: the files go
to lms-unmatched/ and collect-lms exits with status 1.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from .zip_upload import ZipUpload


def match_key(text: str) -> str:
    """A name reduced for matching: case folded, accents dropped, only letters and digits
    of any script kept ("Tomás Álvarez" and "alvareztomas" meet; "Вера" stays "вера")."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    kept = "".join(ch for ch in decomposed if ch.isalnum() and not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", kept)


def match(uploads: list[ZipUpload], roster: list[dict], known: dict[str, tuple[str, str]]) -> dict:
    """Set each upload's student; returns, for each upload left unmatched, why and whether it
    is a refusal (exit status 1). A roster row with an lms_id is matched by it only; a row
    without one by the LMS user an earlier collection recorded for it (``known``), else by
    its name (Canvas: last name then first name; Moodle: first then last). A name never
    stands against a recorded LMS user, and any ambiguity matches nobody."""
    by_lms_id: dict[str, list[str]] = {}
    recorded: dict[tuple[str, str], str] = {}
    by_name: dict[str, list[str]] = {}
    for row in roster:
        if row.get("lms_id"):
            by_lms_id.setdefault(row["lms_id"], []).append(row["id"])
            continue
        if row["id"] in known:
            recorded[known[row["id"]]] = row["id"]
        first, last = row.get("first_name") or "", row.get("last_name") or ""
        for key in {match_key(last + first), match_key(first + last)} - {""}:
            by_name.setdefault(key, []).append(row["id"])
    users: dict[tuple[str, str], list[ZipUpload]] = {}
    for upload in uploads:
        users.setdefault((upload.lms, upload.lms_id), []).append(upload)
    why, claims = {}, {}
    for user, theirs in users.items():
        found = by_lms_id.get(user[1]) or ([recorded[user]] if user in recorded else [])
        key = match_key(theirs[0].name)
        if not found:
            found = by_name.get(key, []) if key else []
            taken = [student for student in found if student in known]  # collected before as another user
            if taken:
                for upload in theirs:
                    why[upload.entry] = (f"LMS user {user[1]} is named {upload.name!r}, like {', '.join(taken)}, who "
                                         f"was collected before as LMS user {known[taken[0]][1]}: a new LMS user "
                                         "never takes a collected student's place (if it is them, put their new "
                                         "lms_id in roster.csv)", True)
                continue
        if len(found) == 1:
            claims.setdefault(found[0], []).append(user)
        for upload in theirs if len(found) != 1 else []:
            why[upload.entry] = ((f"{len(found)} students of roster.csv fit {upload.name!r} (LMS id {user[1]}): "
                                  f"{', '.join(found)}: add the lms_id to roster.csv", True) if found else
                                 (f"no student in roster.csv is {upload.name!r} (LMS id {user[1]})" + (
                                     "" if key else "; the name has no letters or digits to match by: add the "
                                                    "lms_id to roster.csv"), False))
    for student, claimants in claims.items():
        for user in claimants:
            for upload in users[user]:
                if len(claimants) > 1:
                    why[upload.entry] = (f"{len(claimants)} LMS users (ids {', '.join(u[1] for u in claimants)}) "
                                         f"fit {student}: add the right lms_id to roster.csv", True)
                else:
                    upload.student = student
    return why


def known_users(state: Path) -> dict[str, tuple[str, str]]:
    """The LMS user each student was collected as before (collect-lms records it)."""
    try:
        saved = json.loads(state.read_text())
    except (OSError, ValueError):
        return {}
    return {student: (info["lms"], str(info["lms_id"])) for student, info in saved.items()
            if isinstance(info, dict) and info.get("lms") and info.get("lms_id")}
