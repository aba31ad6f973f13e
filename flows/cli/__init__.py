"""memoir's command line, laid out like basic-memory's.

`app.py` defines the group, the settings context, the exit codes and the one place where a
failure becomes a message and an exit code; each module under `commands/` imports the app and
decorates its commands (each defined once); `main.py` imports the command modules and runs.
"""
