"""The error every ``graph-agent`` command raises for a mistake the user can fix."""

from __future__ import annotations


class CliError(Exception):
    """A user error: the command prints its message on stderr and exits with code 2."""

    __module__ = "graph_agent.cli"  # where users import it from (``load_graph`` raises it)
