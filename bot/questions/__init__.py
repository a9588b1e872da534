"""The questions while they wait: the ledger where the first answer wins, routing, answers and approvals checked,
the ask body's limits, and the clock and tasks they wait on.

The ledger (`ledger.Ledger`, the face the rest of the bot uses) is made of parts, one job each:

- `pending`: the questions held in memory while something here waits on them, by id and by request.
- `lookup`: a question or a reply's delivery as it is now, from memory when that is up to date, else the store.
- `resolving`: ending a question, by an answer or without one; the first end wins.
- `progress`: partial answers, approvals and reminders, which move a question on without ending it.
- `long_polls`: agents waiting for a question to end, until a deadline or until the program stops.
- `watchers`: who hears of questions changing, and telling them.
- `announcing`: telling watchers of this process's own changes once, even when the change feed echoes them.
- `catch_up`: other replicas' changes, as the change feed reads them, turned into wake-ups and news.
- `ledger_mode`: whether a change feed runs and whether the program is closing, which every part checks.
- `ledger_feed`: what following a change feed keeps: long polls on questions held elsewhere, and what was told.
"""
