"""How one message runs: the runtime (entry point), the run plan, executors, the run handle, the event
journal, stops across workers, crash recovery, approvals."""
