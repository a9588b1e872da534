"""Coding agents' permission prompts: the one question they become, and the rules that decide them without a person.

`prompt` is shared by the hook (in the agent's process, standard library only) and by `serve` (which decides rules
and learns "Always allow"), so both read an answer the same way.
"""
