"""Adapters to the outside world: the Anthropic SDK's tool classes, MCP, HTTP."""
