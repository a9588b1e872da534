"""Several `serve` processes on one store: who owns which question, and hearing what the others change. A single
process needs neither; `bot.replicas.for_store` picks the pair for a store."""
