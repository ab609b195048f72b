"""Wire protocols other than Dify's, each an encoder over the one run pipeline (``app.run``): the run's
events, typed, become that protocol's frames; the journal keeps Dify's items whatever the wire."""
