"""The memory bank's MCP facade: the two-tool capability rail over the REST routes."""
