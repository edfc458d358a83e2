"""What nbgrader_config.py changes in nbgrader to spare it repeated work per submission
(glue/nbgrader_costs.py): the gradebook keeps what it stores, the metadata check keeps
what it refuses."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import nbformat
import pytest
from helpers import BIN, SOURCE_NOTEBOOK
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.preprocessors import CheckCellMetadata

from maxpool_grader.glue.nbgrader_costs import _SchemaOnce, check_metadata_quickly, reuse_database_engines


@pytest.fixture
def alembic_on_path(monkeypatch):
    """A new gradebook runs nbgrader's ``alembic`` from PATH."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))


@pytest.mark.integration
def test_gradebooks_of_one_database_share_an_engine_and_see_each_other_s_writes(tmp_path, alembic_on_path):
    reuse_database_engines()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as first:
        first.add_student("ada", first_name="Ada")
        engine = first.engine
    with Gradebook(url) as second:  # the first one's close() disposed of the pool, not the engine
        assert second.engine is engine
        assert second.find_student("ada").first_name == "Ada"
        with Gradebook(url) as nested:  # open at once, as nbgrader's converter and a preprocessor are
            nested.add_student("grace")
        assert sorted(student.id for student in second.students) == ["ada", "grace"]
    with Gradebook(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert other.engine is not engine and other.students == []


@pytest.mark.integration
def test_in_memory_gradebooks_never_share_an_engine_nor_forked_processes_a_connection(tmp_path, alembic_on_path):
    reuse_database_engines()
    with Gradebook("sqlite:///:memory:") as one, Gradebook("sqlite:///:memory:") as two:
        one.add_student("ada")
        assert one.engine is not two.engine and two.students == []
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as parent:
        parent_engine = parent.engine
    parent_pool = parent_engine.pool  # as the fork leaves it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the engine (what it compiled), with a pool of its own
        try:
            with Gradebook(url) as child:
                child.add_student("from_the_child")
                found = [child.engine is parent_engine, child.engine.pool is not parent_pool]
                os.write(write, json.dumps(found).encode())
        finally:
            os._exit(0)
    os.close(write)
    kept_engine, own_pool = json.loads(os.read(read, 100))
    os.close(read)
    os.waitpid(pid, 0)
    assert kept_engine is True and own_pool is True
    with Gradebook(url) as parent:
        assert parent.engine is parent_engine and parent.find_student("from_the_child")


def _metadata_schema() -> dict:
    validator = MetadataValidator()
    return validator.schema


BAD_METADATA = [
    {"grade": True, "solution": False, "locked": True, "grade_id": "a", "points": "two", "schema_version": 3},
    {"grade": True, "solution": False, "locked": True, "grade_id": "a b", "points": -1, "schema_version": 3},
    {"grade": "yes", "solution": False, "grade_id": "a", "schema_version": 3},
    {"solution": True, "grade": False, "locked": False, "grade_id": "a", "schema_version": 3, "task": 1},
]


@pytest.mark.parametrize("metadata", BAD_METADATA, ids=range(len(BAD_METADATA)))
def test_metadata_is_refused_exactly_as_jsonschema_refuses_it(metadata):
    schema = _metadata_schema()
    with pytest.raises(jsonschema.ValidationError) as expected:
        jsonschema.validate(metadata, schema)
    once = _SchemaOnce()
    for _ in range(2):  # the kept validator, used again
        with pytest.raises(jsonschema.ValidationError) as found:
            once.validate(metadata, schema)
        assert (found.value.message, list(found.value.path)) == (expected.value.message, list(expected.value.path))


def test_nbgrader_s_metadata_check_still_refuses_a_corrupted_notebook():
    check_metadata_quickly()
    notebook = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    CheckCellMetadata().preprocess(copy.deepcopy(notebook), {})  # the course's own notebook passes
    graded = next(cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade"))
    graded.metadata.nbgrader["points"] = "two"
    with pytest.raises(ValidationError, match="metadata may be corrupted"):
        CheckCellMetadata().preprocess(notebook, {})


@pytest.mark.integration
def test_a_gradebook_set_up_once_only_connects_and_one_made_again_is_set_up_again(tmp_path, alembic_on_path):
    from sqlalchemy import event

    from maxpool_grader.glue.nbgrader_costs import open_gradebooks_quickly
    reuse_database_engines()
    open_gradebooks_quickly()
    path = tmp_path / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as first:
        first.add_student("ada")
        statements: list[str] = []
        event.listen(first.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    with Gradebook(f"sqlite:///{path}") as again:  # set up already: no table listed, none created
        assert [student.id for student in again.students] == ["ada"]
    assert not any("sqlite_master" in sql or "CREATE" in sql or "PRAGMA" in sql for sql in statements)
    path.unlink()
    with Gradebook(f"sqlite:///{path}") as remade:  # a new file: its tables are made again
        assert remade.students == []
