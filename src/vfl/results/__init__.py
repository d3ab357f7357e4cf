"""What a run records: the task's metrics, the run directory, the summary and the cost formulas."""
