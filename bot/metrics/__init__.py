"""`serve`'s Prometheus metrics: the families (`families.Metrics`, one registry per program) and their text format.

Other parts report to the program's `Metrics` object; they never import prometheus_client themselves. The webhook
sender, for one, calls `metrics.webhook_delivery("ok" | "retry" | "failed")` once per attempt.
"""
