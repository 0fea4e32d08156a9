"""The process a run lives in: SIGINT/SIGTERM as an exception that records the run's state, and one forked process per
sweep job so a job killed by any means takes no other with it."""
