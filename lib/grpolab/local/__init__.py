"""The CPU embedded default (`train.engine: trl`): a tiny model built offline, a toy arithmetic task, TRL's GRPO.

`python -m grpolab.local.train --run-dir DIR` is the entry point a Ray job runs. The modules:
    tiny      the tiny Qwen2-style model and its character tokenizer, built in code and cached on disk
    task      the `a+b=` task: its problems read from the recipe's data files, the reward, greedy accuracy
    score     exported weights scored as the run scored them (`grpolab export`)
    mapping   recipe -> TinySettings -> GRPOConfig keyword arguments; what TRL cannot honour (pure Python)
    metrics   TRL's log names -> verl's, and a JSONL writer in verl's file-logger format
    train     supervised warm-up, then GRPOTrainer, metrics and progress lines, a final checkpoint
    checkpoint  TRL's checkpoints published in verl's layout (global_step_N, the tracker file)
Importing this package is cheap (no torch): `mapping` is used by the validator.
"""
