"""The composition root: the only code that turns a config or the API's objects into a run."""
