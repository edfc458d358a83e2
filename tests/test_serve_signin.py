"""Links and their generations (serve/signin.py), without a service: a revocation gives a
generation never used before, a restore gives back the one before it, and no later
revocation brings an older link back. The same against a running service:
tests/test_serve_term.py."""

from __future__ import annotations

import json

import pytest

from maxpool_grader.serve.signin import (
    GENERATIONS,
    Credentials,
    NotRevoked,
    generations,
    restore,
    revocations,
    revoke,
    token_for,
)


def test_a_restore_undoes_a_revocation_and_no_generation_is_used_twice(tmp_path):
    folder = tmp_path / "serve"
    secret = Credentials(folder).secret
    first = token_for(secret, "sam")
    assert revoke(folder, "sam") == 1 and revoke(folder, "sam") == 2
    assert Credentials(folder).holder(first) is None
    assert restore(folder, "sam") == 1 and restore(folder, "sam") == 0  # back to the link first mailed
    assert Credentials(folder).holder(first) == "sam"
    with pytest.raises(NotRevoked):
        restore(folder, "sam")
    assert revoke(folder, "sam") == 3  # never 1 or 2 again: the links given at those revocations stay dead
    assert {token_for(secret, "sam", n) for n in (0, 1, 2)} & {token_for(secret, "sam", generations(folder)["sam"])} \
        == set()
    assert revocations(folder) == {"sam": 1}


def test_a_generations_file_of_the_first_format_is_read(tmp_path):
    folder = tmp_path / "serve"
    folder.mkdir()
    (folder / GENERATIONS).write_text(json.dumps({"tess": 2}))
    assert generations(folder) == {"tess": 2} and revoke(folder, "tess") == 3
    assert restore(folder, "tess") == 2 and restore(folder, "tess") == 1
