"""Coding agents' permission prompts on the server: shell commands split, rules decided, learned and listed."""
