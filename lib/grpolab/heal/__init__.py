"""Runs that heal themselves: the job's own driver on the Ray cluster (supervise), which diagnoses a failed attempt
and, by the recipe's trainer.restarts (policy), resumes the run from its last complete checkpoint or stops it."""
