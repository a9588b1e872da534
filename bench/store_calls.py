"""CPU per store call where it is paid, with nothing else in the process: `Store.create_question` (with the inbox's
delivery, as an API ask stores it) and `Store.resolve` (an answer, from the record the ask stored), in groups of ten
under one commit, as `serve` makes them under load.

Run: `uv run python bench/store_calls.py [ROUNDS] [LABEL]` (default 6 rounds of 3,000 of each, on a fresh file).
Prints the CPU (`time.process_time`) per call of each round and the minimum. To measure another commit's store with
the same interpreter: `git archive REV bot core | tar -x -C DIR`, then
`PYTHONPATH=DIR uv run python bench/store_calls.py 6 REV`; alternate the two runs, the machine's load moves both.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from bot.questions.answers import normalise_answer
from bot.store.records import NewDelivery, QuestionRecord, Resolution
from bot.store.sqlite.store import Store
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest

BODY = {"questions": [{"id": "go", "question": "Deploy build 17?", "options": [{"label": "Yes"}, {"label": "No"}]}]}
PER_ROUND = 3000
GROUP = 10


def asked(store: Store, record: QuestionRecord) -> None:
    store.create_question(record, NewDelivery("web", record.id, {}))


def answered(store: Store, record: QuestionRecord, answer: AskUserQuestionAnswer) -> Resolution:
    return store.resolve(record.id, "answered", answer=answer, by="x", via="web", seen=record)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    label = sys.argv[2] if len(sys.argv) > 2 else "this tree"
    questions = AskUserQuestionRequest.model_validate(BODY).questions
    picked = AskUserQuestionAnswerItem.model_validate({"id": "go", "selected": ["Yes"]})
    answer = normalise_answer(questions, {"go": picked})
    creates: list[float] = []
    resolves: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(os.path.join(tmp, "handraise.db"))
        for _ in range(rounds):
            records = [QuestionRecord(agent=None, questions=questions, origin="api") for _ in range(PER_ROUND)]
            started = time.process_time()
            for at in range(0, PER_ROUND, GROUP):
                group = records[at : at + GROUP]
                store.write_together([lambda r=r: asked(store, r) for r in group])
            creates.append((time.process_time() - started) / PER_ROUND)
            started = time.process_time()
            for at in range(0, PER_ROUND, GROUP):
                group = records[at : at + GROUP]
                store.write_together([lambda r=r: answered(store, r, answer) for r in group])
            resolves.append((time.process_time() - started) / PER_ROUND)
        store.close()
    for name, figures in (("create_question", creates), ("resolve", resolves)):
        each = " ".join(f"{figure * 1e6:.1f}" for figure in figures)
        print(f"{label}: {name} µs per call: {each}; minimum {min(figures) * 1e6:.1f}")


if __name__ == "__main__":
    main()
