"""check: simulate a launch command and predict every rank's GPU (the engine of ``rankmap check``)."""
