"""Folders of any depth, walked and removed without recursion (collect-lms's own folders, and
what an earlier run or a hostile zip left in them).

A zip entry may name a path of a thousand folders. ``Path.rglob`` and ``shutil.rmtree`` (on
Python 3.11) recurse once per folder, and a path that deep is longer than the kernel takes
(4,096 bytes), so both failed on it and every later collect-lms with them. Here each folder
is opened relative to the one above it (never by its whole path), one descriptor at a time,
and the way back up is the folder's ``..``; the names on the way down are the only stack.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _listing(folder: int) -> tuple[list[str], list[str]]:
    """The folders and the other entries (files, links) of an open folder, by name."""
    folders, others = [], []
    with os.scandir(folder) as entries:
        for entry in entries:
            (folders if entry.is_dir(follow_symlinks=False) else others).append(entry.name)
    return folders, others


def walk(root: Path) -> Iterator[tuple[int, str]]:
    """Every entry under ``root`` that is not a folder, as (its folder's descriptor, its name),
    the descriptor open while the entry is handled (``os.unlink(name, dir_fd=...)`` works)."""
    try:
        current = os.open(root, FOLDER)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        folders, others = _listing(current)
        pending = [folders]
        yield from ((current, name) for name in others)
        while pending:
            if pending[-1]:
                below = os.open(pending[-1].pop(), FOLDER, dir_fd=current)
                os.close(current)
                current = below
                folders, others = _listing(current)
                pending.append(folders)
                yield from ((current, name) for name in others)
            else:
                pending.pop()
                if pending:
                    above = os.open("..", FOLDER, dir_fd=current)
                    os.close(current)
                    current = above
    finally:
        os.close(current)


def holds_files(root: Path) -> bool:
    """Whether anything but folders is under ``root``."""
    return next(walk(root), None) is not None


def remove_files(root: Path, prefix: str) -> None:
    """Remove every entry under ``root`` whose name starts with ``prefix`` (not folders)."""
    for folder, name in walk(root):
        if name.startswith(prefix):
            os.unlink(name, dir_fd=folder)


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything under it, however deep; nothing when it is not there."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(found.st_mode):
        os.unlink(path)
        return
    current, names = os.open(path, FOLDER), []
    try:
        while True:
            folders, others = _listing(current)
            for name in others:
                os.unlink(name, dir_fd=current)
            if folders:
                below = os.open(folders[0], FOLDER, dir_fd=current)
                os.close(current)
                current = below
                names.append(folders[0])
            elif names:
                above = os.open("..", FOLDER, dir_fd=current)
                os.close(current)
                current = above
                os.rmdir(names.pop(), dir_fd=current)
            else:
                break
    finally:
        os.close(current)
    os.rmdir(path)
