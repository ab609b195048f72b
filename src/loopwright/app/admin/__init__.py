"""The console's and the CLI's services: apps, keys, datasets, logs, conversations, tool imports."""
