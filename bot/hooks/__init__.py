"""`handraise hook claude|codex|gemini|cursor`: a coding agent's permission prompt asked through `handraise serve`.

Empty on purpose: the hooks import this package on every tool call of every agent and must stay light (standard
library only; see tests/bot/test_startup.py).
"""
