"""handraise as an MCP server: `ask_user_question`, `get_answer` and `cancel_question` for any MCP client.

Over stdio (`handraise mcp`, forwarding to the running `serve`) and over streamable HTTP at `serve`'s `/mcp`.
"""
