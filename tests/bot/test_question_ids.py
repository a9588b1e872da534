"""Question ids: drawn from `secrets` many at a time, yet each id handed out once, in every thread and process."""

from __future__ import annotations

import os
import re
import threading

import pytest

from bot.store.records import new_question_id

ID = re.compile(r"q_[0-9A-Za-z]{7}[A-Za-z0-9_-]{16}")


def test_ids_past_several_draws_are_all_distinct_and_well_formed() -> None:
    ids = [new_question_id() for _ in range(2_000)]  # a draw holds 256
    assert len(set(ids)) == len(ids)
    assert all(ID.fullmatch(question_id) for question_id in ids)


def test_the_random_parts_of_ids_made_in_one_millisecond_differ() -> None:
    random_parts = {new_question_id()[9:] for _ in range(600)}
    assert len(random_parts) == 600


def test_threads_drawing_at_once_never_get_the_same_id() -> None:
    made: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def draw(into: list[str]) -> None:
        start.wait()
        into.extend(new_question_id() for _ in range(1_000))

    threads = [threading.Thread(target=draw, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [question_id for into in made for question_id in into]
    assert len(set(every)) == len(every) == 8_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_its_parents_unused_draw() -> None:
    new_question_id()  # the parent now holds a draw with 255 random parts left
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        os.write(write, "\n".join(new_question_id()[9:] for _ in range(255)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        childs = set(pipe.read().split("\n"))
    os.waitpid(child, 0)
    parents = {new_question_id()[9:] for _ in range(255)}
    assert len(childs) == 255
    assert not childs & parents
