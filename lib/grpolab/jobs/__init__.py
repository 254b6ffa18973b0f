"""Jobs: the embedded Ray head, Ray job submission and control, run records, the job's own wrapper, secrets."""
