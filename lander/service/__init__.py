"""The local experiment service (``python -m lander.serve``): REST API and web dashboard over the runs on disk."""
