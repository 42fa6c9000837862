"""conda-mcp's Python side: only the ``conda mcp`` subcommand plugin
(:mod:`conda_mcp.plugin`). The server itself is the ``conda-mcp`` binary
installed next to it (docs/using.md, "conda mcp")."""
