"""Whose upload is it: the LMS users of a zip matched to the students of ``roster.csv``
(lms/intake.py collects; the module doc there says what is trusted).

An ``lms_id`` in the roster decides alone. A student without one is matched by the LMS user
the first collection recorded for them (``.maxpool-grader/lms.json``), so a later change of
display name for that user is followed and a new user who takes a collected student's name
is refused, and the refusal names the user recorded before as the suspect when a display
name was all that recorded them. Only a student never collected is matched by display
name, and only when no other user of the zip fits them too; such a match is a note for the
instructor. A display name written with look-alike letters of another script (a Cyrillic
"е" in "Vera", say: Unicode's confusables, from the ``confusable_homoglyphs`` package) is
matched to nobody. Ambiguity, look-alikes and such claims are refusals: the files go to
lms-unmatched/ and collect-lms exits with status 1.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from pathlib import Path

from confusable_homoglyphs import confusables

from .zip_upload import ZipUpload


def match_key(text: str) -> str:
    """A name reduced for matching: case folded, accents dropped, only letters and digits
    of any script kept ("Tomás Álvarez" and "alvareztomas" meet; "Вера" stays "вера")."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    kept = "".join(ch for ch in decomposed if ch.isalnum() and not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", kept)


def match(uploads: list[ZipUpload], roster: list[dict], records: dict[str, dict]) -> dict:
    """Set each upload's student (and how: ``matched_by``); returns, for each upload left
    unmatched, why and whether it is a refusal (exit status 1). A roster row with an lms_id
    is matched by it only; a row without one by the LMS user an earlier collection recorded
    for it (``records``: lms.json), else by its name (Canvas: last name then first name;
    Moodle: first then last). A name never stands against a recorded LMS user, a name of
    look-alike letters matches nobody, and any ambiguity matches nobody."""
    known = {student: (info["lms"], str(info["lms_id"])) for student, info in records.items()
             if isinstance(info, dict) and info.get("lms") and info.get("lms_id")}
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
    why, claims, how = {}, {}, {}
    skeletons: dict[str, list[str]] = {}
    for key, students in by_name.items():
        skeletons.setdefault(skeleton(key), []).extend(students)
    for user, theirs in users.items():
        found, how[user] = by_lms_id.get(user[1]) or ([recorded[user]] if user in recorded else []), "recorded"
        if user[1] in by_lms_id:
            how[user] = "lms_id"
        key = match_key(theirs[0].name)
        if not found:
            refusal = (lookalike(theirs[0].name, user, by_name, skeletons)
                       or _taken(theirs[0].name, user, by_name.get(key, []), records, known))
            if refusal:
                why.update({upload.entry: (refusal, True) for upload in theirs})
                continue
            found, how[user] = (by_name.get(key, []) if key else []), "name"
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
                    upload.student, upload.matched_by = student, how[user]
    return why


def _taken(name: str, user: tuple[str, str], fits: list[str], records: dict, known: dict) -> str:
    """Why a new LMS user whose name fits students collected before as another user is refused
    (empty: none is), naming that earlier user as the suspect when a name was all it had."""
    taken = [student for student in fits if student in known]
    if not taken:
        return ""
    student, earlier = taken[0], known[taken[0]]
    record = records.get(student, {})
    if record.get("matched_by", "name") in ("name", "recorded"):
        return (f"LMS user {user[1]} is named {name!r}, like {student}, who was collected before as LMS user "
                f"{earlier[1]} ({record.get('name', '?')!r}), matched by display name alone, with no lms_id in "
                f"roster.csv: one of the two is not {student}, and the suspect is LMS user {earlier[1]}, whom "
                f"nothing but a name ever tied to {student}. Check in the LMS which user is {student}; then put "
                f"that user's id as {student}'s lms_id in roster.csv and run collect-lms again (--replace-newer "
                "replaces what the other one left in submitted/)")
    return (f"LMS user {user[1]} is named {name!r}, like {student}, who is LMS user {earlier[1]}: a new LMS user "
            "never takes a collected student's place")


def lookalike(name: str, user: tuple[str, str], by_name: dict[str, list[str]],
              skeletons: dict[str, list[str]]) -> str:
    """Why a display name is refused for look-alike letters (empty: it is not): letters of two
    scripts that look alike (Unicode's confusables), or a name that looks like a roster
    student's without being it (the same skeleton, in the sense of Unicode's UTS #39, another
    name)."""
    key = match_key(name)
    same = set(skeletons.get(skeleton(key), [])) - set(by_name.get(key, []))
    mixed = confusables.is_dangerous(name)
    if not (same or mixed):
        return ""
    letters = confusables.is_confusable(name, greedy=True, preferred_aliases=["latin"]) or []
    shown = ", ".join(f"{found['character']!r} U+{ord(found['character']):04X} "
                      f"{unicodedata.name(found['character'], '?')}, like {found['homoglyphs'][0]['c']!r}"
                      for found in letters[:5] if found["homoglyphs"])
    like = f"it looks like the name of {', '.join(sorted(same))} but is not" if same else "it mixes scripts"
    return (f"LMS user {user[1]}'s name {name!r} is written with look-alike letters ({shown or 'of two scripts'}): "
            f"{like}, so it is matched to nobody; if it is a student of the course, put their lms_id in roster.csv")


def skeleton(key: str) -> str:
    """A match key with every letter that looks like a Latin letter made that letter."""
    return "".join(_latin(ch) for ch in key)


@functools.lru_cache(maxsize=4096)
def _latin(ch: str) -> str:
    found = confusables.is_confusable(ch, preferred_aliases=["latin"])
    for glyph in (found[0]["homoglyphs"] if found else []):
        if glyph["c"].isascii() and glyph["c"].isalnum():
            return glyph["c"].casefold()
    return ch


def records_of(state: Path) -> dict[str, dict]:
    """What collect-lms recorded of each student (lms.json): the LMS user, their name, how
    they were matched."""
    try:
        saved = json.loads(state.read_text())
    except (OSError, ValueError):
        return {}
    return {student: info for student, info in saved.items() if isinstance(info, dict)} \
        if isinstance(saved, dict) else {}
