"""The questions while they wait: the ledger where the first answer wins, routing, answers and approvals checked,
the ask body's limits, and the clock and tasks they wait on."""
