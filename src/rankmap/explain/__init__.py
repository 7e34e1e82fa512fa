"""explain: read logs and pastes of a failed job and name the cause (the engine of ``rankmap explain``)."""
