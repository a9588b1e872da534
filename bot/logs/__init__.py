"""`serve`'s logs: what a line is about (`context`: the question, channel and agent of the task that logs it), and
the JSON lines of `log_format = "json"` (`json_lines`) that every line on stderr becomes, tracebacks included."""
