"""Running a problem: jobs, executors, the results folder on disk, progress and verify."""
