"""doctor: this machine and shell as a job will see them (the engine of ``rankmap doctor``)."""
