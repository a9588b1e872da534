"""handraise's answerers (Slack, email, web inbox) and the program that runs them."""
