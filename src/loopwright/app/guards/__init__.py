"""What runs around the agent for a message: moderation, annotation replies, external data, the tool
allow-list."""
