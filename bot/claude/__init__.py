"""Claude Code and the Claude Agent SDK asking through handraise: the hook command, its settings, the SDK callback.

Empty on purpose: `handraise claude-hook` imports this package on every question and must stay light.
"""
