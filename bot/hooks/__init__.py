"""The coding agents' hooks: one module per agent, the shared flow, and their installers."""
