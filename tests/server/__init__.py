"""Tests of memdir serve: the HTTP API, MCP over HTTP, tokens, RemoteStore (helpers: ``server.helpers``)."""
