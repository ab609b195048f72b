"""Dify's formats: the agent-chat wire (events, stream adapter, encoder, error table), DSL import and
export, Dify tool mapping."""
