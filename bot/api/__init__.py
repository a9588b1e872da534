"""The HTTP server around the seam: the API routes agents call, their questions, the guards every request passes, and
the sockets and limits that keep `serve` answering under a flood."""
