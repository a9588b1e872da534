"""The PostgreSQL backend: for several `serve` replicas sharing one database."""
