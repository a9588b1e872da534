"""The coding agents' hooks (`handraise hook claude|codex|gemini|cursor`): one module per agent, the shared flow, and
their installers.

Empty on purpose: the hooks import this package on every tool call of every agent and must stay light (standard
library only; see tests/bot/test_startup.py).
"""
