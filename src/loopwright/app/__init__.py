"""Agent-chat apps: configuration, generation, and the translation of agent events to Dify's stream."""
